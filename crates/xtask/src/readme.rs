//! The README's quick starts, compiled and run: a step of `cargo xtask test`
//! (after the C ABI, C++ and Python steps, whose builds it reuses) and, alone,
//! `cargo xtask readme` (which builds what it needs first).
//!
//! Convention: a fenced block of `README.md` whose info string is
//! `<language> quickstart` is a quick start. There is exactly one for each of
//! `c`, `cpp`, `python` and `sh`; any other language marked `quickstart`, a
//! second block of one language, or a missing one fails the step. (The Rust
//! quick start is an ordinary `rust` block: `crates/tenure/src/lib.rs`
//! includes the README under `cfg(doctest)`, so `cargo test` compiles and
//! runs it. rustdoc ignores the other blocks because their info strings name
//! another language.)
//!
//! Each quick start is written into its own fresh folder
//! `<target>/readme/<language>/`, which is also its working directory, and:
//!
//! - `c`: compiled with the C suites' flags (C11, `-Wall -Wextra -Werror`,
//!   ASan/UBSan) against `include/tenure.h` and the `libtenure.so` the C ABI
//!   step linked (`<target>/capi/lib`), then run with LeakSanitizer on;
//! - `cpp`: compiled with `g++ -std=c++17 -Icpp/include -Iinclude` (same
//!   warnings and sanitizers) against the same library, then run;
//! - `python`: run by `.venv`'s interpreter, which has the wheel the Python
//!   step built installed;
//! - `sh`: run by `sh -eu` with the folder of the `tenure` binary (the newer
//!   of `<target>/debug/tenure` and `<target>/release/tenure`) first on
//!   `PATH` and `TENURE_DB` unset.
//!
//! A quick start checks its own outcome (each asserts that its job ended
//! completed); any non-zero exit, compiler diagnostic or sanitizer report
//! fails the step.

use crate::capi;
use crate::python;
use crate::util::{apt_install, cargo, root, run, show, step, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The languages that must have exactly one quick start, in run order.
const LANGUAGES: &[&str] = &["c", "cpp", "python", "sh"];

/// The word in a fence's info string that marks a quick start.
const MARK: &str = "quickstart";

/// One fenced block of the README.
#[derive(Debug, Clone)]
struct Block {
    /// The info string's first word.
    language: String,
    /// Whether the info string carries [`MARK`].
    quickstart: bool,
    /// The 1-based line of the opening fence.
    line: usize,
    /// The block's text, newline-terminated.
    text: String,
}

/// Every top-level fenced (```) block of a markdown text.
fn blocks(markdown: &str) -> Result<Vec<Block>> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in markdown.lines().enumerate() {
        let fence = line.strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                let mut words = info.split_whitespace();
                let language = words.next().unwrap_or("").to_owned();
                let quickstart = words.any(|w| w == MARK);
                open = Some(Block {
                    language,
                    quickstart,
                    line: i + 1,
                    text: String::new(),
                });
            }
            (Some(_), Some(rest)) if rest.trim().is_empty() => {
                out.extend(open.take());
            }
            (Some(b), _) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    match open {
        Some(b) => Err(format!(
            "README.md: the block opened at line {} is never closed",
            b.line
        )),
        None => Ok(out),
    }
}

/// The quick start of each of [`LANGUAGES`], in that order.
fn quickstarts(markdown: &str) -> Result<Vec<Block>> {
    let marked: Vec<Block> = blocks(markdown)?
        .into_iter()
        .filter(|b| b.quickstart)
        .collect();
    if let Some(b) = marked
        .iter()
        .find(|b| !LANGUAGES.contains(&b.language.as_str()))
    {
        return Err(format!(
            "README.md line {}: a quick start in {:?}; quick starts are one each of {LANGUAGES:?}",
            b.line, b.language
        ));
    }
    let mut ordered = Vec::new();
    for lang in LANGUAGES {
        let mut of_lang: Vec<Block> = marked
            .iter()
            .filter(|b| b.language == *lang)
            .cloned()
            .collect();
        match of_lang.len() {
            1 => ordered.push(of_lang.remove(0)),
            0 => {
                return Err(format!(
                    "README.md has no ```{lang} {MARK} block (every surface needs a quick start)"
                ))
            }
            n => {
                return Err(format!(
                    "README.md has {n} ```{lang} {MARK} blocks (lines {:?}); mark exactly one",
                    of_lang.iter().map(|b| b.line).collect::<Vec<_>>()
                ))
            }
        }
    }
    Ok(ordered)
}

/// What the quick starts run against.
struct Artifacts {
    /// Folder with `libtenure.so` (and its soname link).
    lib_dir: PathBuf,
    /// `.venv`'s interpreter, with the wheel installed.
    python: PathBuf,
    /// The `tenure` CLI binary.
    tenure: PathBuf,
}

fn newest(paths: &[PathBuf]) -> Option<PathBuf> {
    paths
        .iter()
        .filter_map(|p| Some((fs::metadata(p).ok()?.modified().ok()?, p)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, p)| p.clone())
}

/// The artifacts earlier steps of `cargo xtask test` built.
fn built() -> Result<Artifacts> {
    let target = capi::target_dir()?;
    let lib_dir = target.join("capi").join("lib");
    if !lib_dir.join("libtenure.so").exists() {
        return Err(format!(
            "{} has no libtenure.so: run the C ABI step first (or `cargo xtask readme`)",
            lib_dir.display()
        ));
    }
    let python = python::venv_python(&root().join(".venv"));
    if !python.exists() {
        return Err(format!(
            "{} does not exist: run the Python step first (or `cargo xtask readme`)",
            python.display()
        ));
    }
    let tenure = newest(&[
        target.join("debug").join("tenure"),
        target.join("release").join("tenure"),
    ])
    .ok_or("no tenure binary in <target>/debug or <target>/release: build tenure-cli first")?;
    Ok(Artifacts {
        lib_dir,
        python,
        tenure,
    })
}

/// Run a command in `dir`, echo its output, require success.
fn run_in(cmd: &mut Command, what: &str) -> Result {
    eprintln!("$ {}", show(cmd));
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run the {what} quick start: {e}"))?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "the README's {what} quick start failed ({})",
            out.status
        ))
    }
}

fn sanitizers(cmd: &mut Command) -> &mut Command {
    cmd.env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
}

fn c(block: &Block, dir: &Path, a: &Artifacts) -> Result {
    let src = dir.join("quickstart.c");
    fs::write(&src, &block.text).map_err(|e| format!("{}: {e}", src.display()))?;
    let bin = dir.join("quickstart");
    capi::cc_client(&src, &root().join("include"), &a.lib_dir, &bin, &[])?;
    run_in(sanitizers(Command::new(&bin).current_dir(dir)), "C")
}

fn cpp(block: &Block, dir: &Path, a: &Artifacts) -> Result {
    let src = dir.join("quickstart.cpp");
    fs::write(&src, &block.text).map_err(|e| format!("{}: {e}", src.display()))?;
    let bin = dir.join("quickstart");
    run(Command::new("g++")
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-g"])
        .args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
        .arg("-I")
        .arg(root().join("cpp/include"))
        .arg("-I")
        .arg(root().join("include"))
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .arg("-L")
        .arg(&a.lib_dir)
        .arg(format!("-Wl,-rpath,{}", a.lib_dir.display()))
        .arg("-ltenure"))?;
    run_in(sanitizers(Command::new(&bin).current_dir(dir)), "C++")
}

fn python(block: &Block, dir: &Path, a: &Artifacts) -> Result {
    let src = dir.join("quickstart.py");
    fs::write(&src, &block.text).map_err(|e| format!("{}: {e}", src.display()))?;
    run_in(
        Command::new(&a.python)
            .current_dir(dir)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .arg("-I")
            .arg(&src),
        "Python",
    )
}

fn sh(block: &Block, dir: &Path, a: &Artifacts) -> Result {
    let src = dir.join("quickstart.sh");
    fs::write(&src, &block.text).map_err(|e| format!("{}: {e}", src.display()))?;
    let bin_dir = a.tenure.parent().ok_or("the tenure binary has no folder")?;
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .map_err(|e| e.to_string())?;
    run_in(
        Command::new("sh")
            .current_dir(dir)
            .env("PATH", path)
            .env_remove("TENURE_DB")
            .arg("-eu")
            .arg(&src),
        "CLI (sh)",
    )
}

fn run_all(a: &Artifacts) -> Result {
    apt_install(&["gcc", "g++", "libc6-dev"])?;
    let text =
        fs::read_to_string(root().join("README.md")).map_err(|e| format!("README.md: {e}"))?;
    let work = capi::target_dir()?.join("readme");
    for block in quickstarts(&text)? {
        step(&format!(
            "README quick start: {} (line {})",
            block.language, block.line
        ));
        let dir = work.join(&block.language);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        match block.language.as_str() {
            "c" => c(&block, &dir, a)?,
            "cpp" => cpp(&block, &dir, a)?,
            "python" => python(&block, &dir, a)?,
            "sh" => sh(&block, &dir, a)?,
            other => return Err(format!("no runner for a {other} quick start")),
        }
    }
    Ok(())
}

/// Compile and run the README's quick starts against what the C ABI, C++ and
/// Python steps of `cargo xtask test` built.
pub fn test() -> Result {
    run_all(&built()?)
}

/// `cargo xtask readme`: build the C library, the wheel (into `.venv`) and the
/// CLI, then run the quick starts.
pub fn standalone() -> Result {
    let lib = capi::build_lib()?;
    let (python, _) = python::install_wheel(false)?;
    step("build the tenure CLI");
    run(cargo().args(["build", "--locked", "-p", "tenure-cli"]))?;
    let tenure = capi::target_dir()?.join("debug").join("tenure");
    run_all(&Artifacts {
        lib_dir: lib.dir,
        python,
        tenure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# t\n\n```rust\nfn main() {}\n```\n\n```c quickstart\nint main(void) { return 0; }\n```\n\n```cpp quickstart\nint main() {}\n```\n\n```python\nprint('not a quick start')\n```\n\n```python quickstart\nprint(1)\n```\n\n```sh quickstart\ntrue\n```\n";

    #[test]
    fn finds_one_quick_start_per_language_in_order() {
        let q = quickstarts(SAMPLE).unwrap();
        let langs: Vec<&str> = q.iter().map(|b| b.language.as_str()).collect();
        assert_eq!(langs, LANGUAGES);
        assert_eq!(q[0].text, "int main(void) { return 0; }\n");
        assert_eq!(q[2].text, "print(1)\n");
        assert_eq!(q[2].line, 19);
    }

    #[test]
    fn refuses_missing_duplicate_unknown_and_unclosed() {
        let missing = SAMPLE.replace("```sh quickstart", "```sh");
        assert!(quickstarts(&missing).unwrap_err().contains("no ```sh"));
        let twice = format!("{SAMPLE}\n```c quickstart\nint x;\n```\n");
        assert!(quickstarts(&twice).unwrap_err().contains("2 ```c"));
        let unknown = format!("{SAMPLE}\n```ruby quickstart\nputs 1\n```\n");
        assert!(quickstarts(&unknown).unwrap_err().contains("ruby"));
        let unclosed = format!("{SAMPLE}\n```c\nint x;\n");
        assert!(quickstarts(&unclosed).unwrap_err().contains("never closed"));
    }

    #[test]
    fn the_readme_has_its_quick_starts() {
        let text = fs::read_to_string(root().join("README.md")).unwrap();
        assert_eq!(quickstarts(&text).unwrap().len(), LANGUAGES.len());
    }
}
