//! Small process helpers shared by every xtask step.
#![allow(dead_code)] // shared helpers; not every step uses every one

use std::path::{Path, PathBuf};
use std::process::Command;

pub type Result<T = ()> = std::result::Result<T, String>;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root")
        .to_path_buf()
}

/// Print a step banner.
pub fn step(name: &str) {
    println!("\n==> {name}");
}

/// Run a command to completion, failing on a non-zero exit.
pub fn run(cmd: &mut Command) -> Result {
    eprintln!("$ {}", show(cmd));
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {}: {e}", show(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} failed: {status}", show(cmd)))
    }
}

/// Run a command and capture stdout.
pub fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start {}: {e}", show(cmd)))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}\n{}",
            show(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// `cargo` with the workspace root as working directory. Every command
/// that resolves dependencies gets `--locked` from its caller, so a run uses
/// the committed lock files and never rewrites them.
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

/// Parse the JSON document a tool printed; `what` names the tool in errors.
pub fn parse_json(text: &str, what: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text.trim()).map_err(|e| format!("{what}: not valid JSON ({e}): {text}"))
}

/// `cargo metadata --no-deps` of the workspace, parsed.
pub fn cargo_metadata() -> Result<serde_json::Value> {
    let text =
        output(cargo().args(["metadata", "--locked", "--format-version", "1", "--no-deps"]))?;
    parse_json(&text, "cargo metadata")
}

/// Install Debian packages that are missing (`apt-get update` first, once).
pub fn apt_install(pkgs: &[&str]) -> Result {
    let missing: Vec<&str> = pkgs
        .iter()
        .copied()
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
                .unwrap_or(false)
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    step(&format!("apt-get install {}", missing.join(" ")));
    let mut last = String::new();
    for attempt in 0..5 {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_secs(5));
        }
        let update = run(Command::new("apt-get")
            .args(["update", "-q"])
            .env("DEBIAN_FRONTEND", "noninteractive"));
        let install = update.and_then(|_| {
            run(Command::new("apt-get")
                .args(["install", "-y", "-q", "--no-install-recommends"])
                .args(&missing)
                .env("DEBIAN_FRONTEND", "noninteractive"))
        });
        match install {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_json_names_the_tool_when_the_text_is_not_json() {
        assert_eq!(parse_json(" {\"a\": 1}\n", "t").unwrap()["a"], 1);
        let err = parse_json("a: 1", "some tool").unwrap_err();
        assert!(err.starts_with("some tool: not valid JSON"), "{err}");
    }

    #[test]
    fn cargo_metadata_names_the_workspace_target_directory() {
        let meta = cargo_metadata().unwrap();
        assert!(meta["target_directory"].is_string(), "{meta}");
        assert!(meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "xtask"));
    }
}
