//! `cargo xtask` without a known command prints the usage line, naming every
//! command, and exits 2.

use std::process::Command;

const EVERY_COMMAND: &[&str] = &[
    "test",
    "python",
    "readme",
    "pg",
    "pg-suites",
    "cpp",
    "torture [--quick]",
    "bench [--smoke] [--soak] [--backend postgres] [--bulk-submit]",
    "abi-check [--bless]",
    "dist PREFIX",
];

fn xtask(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("run xtask");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn no_or_an_unknown_command_prints_the_usage_line_and_exits_2() {
    for args in [
        &[][..],
        &["no-such-command"][..],
        &["dist"][..],
        &["torture", "--slow"][..],
    ] {
        let (code, stderr) = xtask(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        let line = stderr.trim();
        assert!(
            line.starts_with("usage: cargo xtask ") && !line.contains('\n'),
            "{args:?}: {stderr}"
        );
        for cmd in EVERY_COMMAND {
            assert!(line.contains(cmd), "{args:?}: {cmd} missing from {line}");
        }
    }
}
