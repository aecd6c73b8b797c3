//! Project automation: `cargo xtask <command>`; without a known command it
//! prints the usage line (every command, see [`COMMANDS`]) and exits 2.
//!
//! - `test`: everything CI checks (formatting, clippy, every test suite of
//!   every surface), installing what it needs itself; it fails when the run
//!   changed a tracked file (see [`tree`]).
//! - `python`, `readme`, `pg`, `pg-suites`, `cpp`, `serve`: one part of `test` alone.
//! - `torture [--quick] [--postgres]`: the reliability campaigns;
//!   `--postgres` only the PostgreSQL server campaign (the full run ends
//!   with it, the quick one with its short form).
//! - `bench [--smoke] [--soak] [--backend postgres] [--bulk-submit]`: the
//!   benchmarks (SQLite, or the PostgreSQL backend on a throwaway server);
//!   `--soak` runs only the retention soak rows, `--bulk-submit` (PostgreSQL
//!   only) only the bulk-submission row on both servers; both flags, both.
//!   `TENURE_BENCH_PEERS_ONLY=1` with `--backend postgres`: only the Node
//!   peers' rows (graphile-worker, pg-boss), on both servers.
//!   `TENURE_BENCH_OPS_ONLY=1`: only the operations rows (statistics, claim
//!   gates, schedules, `tenure serve`; on PostgreSQL the first two).
//!   `TENURE_BENCH_BEFORE_GATES_ONLY=1` with `--backend postgres`: only the
//!   lifecycles of a production with no gate against the tree before the
//!   claim gates, on both servers.
//! - `abi-check [--bless]`, `dist PREFIX`: the C ABI checks and install.
//!
//! Every cargo command here that resolves dependencies passes `--locked`
//! (the workspace's and `torture/`'s lock files are used as committed).

mod bench;
mod capi;
mod cpp;
#[cfg(test)]
mod docs;
mod pg;
mod pg_peer;
mod pg_suites;
mod pg_tls;
mod probes;
mod python;
mod readme;
mod serve;
mod torture;
mod tree;
mod util;
mod version_script;

use std::path::PathBuf;
use util::{cargo, run, step, Result};

/// Every command with its arguments, as the usage line lists them.
const COMMANDS: &[&str] = &[
    "test",
    "python",
    "readme",
    "pg",
    "pg-suites",
    "cpp",
    "serve",
    "torture [--quick] [--postgres]",
    "bench [--smoke] [--soak] [--backend postgres] [--bulk-submit]",
    "abi-check [--bless]",
    "dist PREFIX",
];

fn usage() -> String {
    format!("usage: cargo xtask {}", COMMANDS.join(" | "))
}

/// A command line that names a known command with valid arguments.
#[derive(Debug, PartialEq)]
enum Cmd {
    Test,
    Python,
    Readme,
    Pg,
    PgSuites,
    Cpp,
    Serve,
    Torture {
        quick: bool,
        postgres: bool,
    },
    Bench {
        smoke: bool,
        soak: bool,
        postgres: bool,
        bulk: bool,
    },
    AbiCheck {
        bless: bool,
    },
    Dist(PathBuf),
}

/// The command `args` (without the program name) names, or `None` for an
/// unknown command or arguments it does not take.
fn parse(args: &[String]) -> Option<Cmd> {
    let (name, rest) = args.split_first()?;
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    // Only the given flags, each at most once; returns which were given.
    let flags = |allowed: &[&str]| -> Option<Vec<bool>> {
        let mut seen = vec![false; allowed.len()];
        for a in &rest {
            let i = allowed.iter().position(|f| f == a)?;
            if std::mem::replace(&mut seen[i], true) {
                return None;
            }
        }
        Some(seen)
    };
    let alone = |cmd: Cmd| rest.is_empty().then_some(cmd);
    match name.as_str() {
        "test" => alone(Cmd::Test),
        "python" => alone(Cmd::Python),
        "readme" => alone(Cmd::Readme),
        "pg" => alone(Cmd::Pg),
        "pg-suites" => alone(Cmd::PgSuites),
        "cpp" => alone(Cmd::Cpp),
        "serve" => alone(Cmd::Serve),
        "torture" => flags(&["--quick", "--postgres"]).map(|f| Cmd::Torture {
            quick: f[0],
            postgres: f[1],
        }),
        "bench" => {
            let mut smoke = false;
            let mut soak = false;
            let mut postgres = false;
            let mut bulk = false;
            let mut it = rest.iter();
            while let Some(a) = it.next() {
                match *a {
                    "--smoke" if !smoke => smoke = true,
                    "--soak" if !soak => soak = true,
                    "--bulk-submit" if !bulk => bulk = true,
                    "--backend" if !postgres => match it.next() {
                        Some(&"postgres") => postgres = true,
                        _ => return None,
                    },
                    _ => return None,
                }
            }
            // The bulk-submission row is PostgreSQL's.
            if bulk && !postgres {
                return None;
            }
            Some(Cmd::Bench {
                smoke,
                soak,
                postgres,
                bulk,
            })
        }
        "abi-check" => flags(&["--bless"]).map(|f| Cmd::AbiCheck { bless: f[0] }),
        "dist" => match rest.as_slice() {
            [prefix] if !prefix.starts_with('-') => Some(Cmd::Dist(PathBuf::from(prefix))),
            _ => None,
        },
        _ => None,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = parse(&args) else {
        eprintln!("{}", usage());
        std::process::exit(2);
    };
    let result = match cmd {
        Cmd::Test => test(),
        Cmd::Python => python::test(),
        Cmd::Readme => readme::standalone(),
        Cmd::Pg => pg::test(),
        Cmd::PgSuites => pg_suites::standalone(),
        Cmd::Cpp => cpp::test(),
        Cmd::Serve => serve::test(),
        Cmd::Torture {
            quick,
            postgres: true,
        } => torture::postgres(quick),
        Cmd::Torture {
            quick,
            postgres: false,
        } => torture::torture(quick),
        Cmd::Bench {
            smoke,
            soak,
            postgres: true,
            bulk,
        } => pg::bench(smoke, pg::Rows { soak, bulk }),
        Cmd::Bench {
            smoke,
            soak: true,
            postgres: false,
            ..
        } => bench::soak_only(smoke),
        Cmd::Bench {
            smoke,
            soak: false,
            postgres: false,
            ..
        } => bench::bench(smoke),
        Cmd::AbiCheck { bless } => capi::abi_check(bless),
        Cmd::Dist(prefix) => capi::dist(&prefix),
    };
    if let Err(e) = result {
        eprintln!("\nxtask: {e}");
        std::process::exit(1);
    }
}

/// Every step of CI, then the check that no tracked file changed (also
/// when a step failed: a step that dirtied the tree is named either way).
fn test() -> Result {
    let root = util::root();
    let before = if root.join(".git").exists() {
        Some(tree::Snapshot::take(&root)?)
    } else {
        println!("(not a Git work tree: there are no tracked files to check)");
        None
    };
    let result = steps();
    let unchanged = match &before {
        Some(snapshot) => {
            step("tracked files unchanged by the run");
            snapshot.check_unchanged()
        }
        None => Ok(()),
    };
    match (result, unchanged) {
        (Ok(()), Ok(())) => {
            println!("\nxtask test: all steps passed");
            Ok(())
        }
        (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
        (Err(e), Err(t)) => Err(format!("{e}\nxtask: {t}")),
    }
}

fn steps() -> Result {
    // Both lock files first: a stale one would otherwise fail the run only
    // when its build comes, half an hour in.
    step("lock files current (workspace, torture/)");
    for manifest in ["Cargo.toml", "torture/Cargo.toml"] {
        run(cargo()
            .args([
                "metadata",
                "--locked",
                "--format-version",
                "1",
                "--manifest-path",
                manifest,
            ])
            .stdout(std::process::Stdio::null()))?;
    }
    step("cargo fmt --check");
    run(cargo().args(["fmt", "--all", "--check"]))?;
    step("cargo clippy");
    run(cargo().args([
        "clippy",
        "--locked",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    step("cargo test (workspace)");
    // The wait and keeper clock-jump tests run processes under libfaketime.
    util::apt_install(&["faketime", "libfaketime"])?;
    run(cargo().args(["test", "--locked", "--workspace"]))?;
    step("C ABI (abi-check, C suites, dist + pkg-config)");
    capi::test()?;
    step("C++ projection (hygiene, compile-fail, suites, example worker via pkg-config and CMake)");
    cpp::test()?;
    step("Python (wheel, pytest)");
    python::test()?;
    readme::test()?;
    pg::test()?;
    step("tenure serve (browser, promtool)");
    serve::test()?;
    // After the C ABI and Python steps: the smoke bench reuses their builds.
    bench::bench(true)?;
    torture::torture(true)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    /// A command line for a `COMMANDS` entry: every optional flag given,
    /// placeholders filled.
    fn full_line(entry: &str) -> String {
        entry
            .replace(['[', ']'], "")
            .replace("PREFIX", "/tmp/prefix")
    }

    #[test]
    fn every_listed_command_parses_with_and_without_its_optional_flags() {
        for entry in COMMANDS {
            assert!(parse(&args(&full_line(entry))).is_some(), "{entry}");
            if !entry.contains("PREFIX") {
                let name = entry.split_whitespace().next().unwrap();
                assert!(parse(&args(name)).is_some(), "{name}");
            }
        }
    }

    #[test]
    fn the_usage_line_lists_every_command() {
        let u = usage();
        assert!(u.starts_with("usage: cargo xtask "), "{u}");
        for entry in COMMANDS {
            assert!(u.contains(entry), "{entry} missing from {u}");
        }
    }

    #[test]
    fn flags_and_arguments_map_to_the_command() {
        assert_eq!(parse(&args("test")), Some(Cmd::Test));
        assert_eq!(
            parse(&args("torture --quick")),
            Some(Cmd::Torture {
                quick: true,
                postgres: false
            })
        );
        assert_eq!(
            parse(&args("torture")),
            Some(Cmd::Torture {
                quick: false,
                postgres: false
            })
        );
        assert_eq!(
            parse(&args("torture --postgres")),
            Some(Cmd::Torture {
                quick: false,
                postgres: true
            })
        );
        assert_eq!(
            parse(&args("bench --backend postgres --smoke")),
            Some(Cmd::Bench {
                smoke: true,
                soak: false,
                postgres: true,
                bulk: false
            })
        );
        assert_eq!(
            parse(&args("bench --smoke")),
            Some(Cmd::Bench {
                smoke: true,
                soak: false,
                postgres: false,
                bulk: false
            })
        );
        assert_eq!(
            parse(&args("bench --soak --backend postgres")),
            Some(Cmd::Bench {
                smoke: false,
                soak: true,
                postgres: true,
                bulk: false
            })
        );
        assert_eq!(
            parse(&args("bench --backend postgres --bulk-submit --smoke")),
            Some(Cmd::Bench {
                smoke: true,
                soak: false,
                postgres: true,
                bulk: true
            })
        );
        assert_eq!(
            parse(&args("abi-check --bless")),
            Some(Cmd::AbiCheck { bless: true })
        );
        assert_eq!(
            parse(&args("dist out/prefix")),
            Some(Cmd::Dist(PathBuf::from("out/prefix")))
        );
    }

    #[test]
    fn unknown_commands_and_arguments_are_refused() {
        for line in [
            "",
            "nope",
            "tests",
            "test --quick",
            "torture --quik",
            "torture --quick --quick",
            "bench --backend",
            "bench --backend sqlite",
            "bench --smoke --smoke",
            "bench --soak --soak",
            "bench --bulk-submit",
            "bench --backend postgres --bulk-submit --bulk-submit",
            "abi-check --force",
            "dist",
            "dist a b",
            "dist --bless",
        ] {
            assert_eq!(parse(&args(line)), None, "{line:?}");
        }
    }
}
