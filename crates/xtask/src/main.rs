//! Project automation: `cargo xtask <command>`.
//!
//! - `test`: everything CI checks (formatting, clippy, every test suite of
//!   every surface), installing what it needs itself.

mod bench;
mod capi;
mod cpp;
mod pg;
mod pg_peer;
mod pg_suites;
mod pg_tls;
mod python;
mod readme;
mod torture;
mod util;

use util::{cargo, run, step, Result};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("python") => python::test(),
        Some("readme") => readme::standalone(),
        Some("pg") => pg::test(),
        Some("pg-suites") => pg_suites::standalone(),
        Some("cpp") => cpp::test(),
        Some("torture") => torture::torture(args.iter().any(|a| a == "--quick")),
        Some("bench")
            if args
                .windows(2)
                .any(|w| w[0] == "--backend" && w[1] == "postgres") =>
        {
            pg::bench(args.iter().any(|a| a == "--smoke"))
        }
        Some("bench") => bench::bench(args.iter().any(|a| a == "--smoke")),
        Some("abi-check") => capi::abi_check(args.iter().any(|a| a == "--bless")),
        Some("dist") => match args.get(1) {
            Some(prefix) => capi::dist(std::path::Path::new(prefix)),
            None => Err("usage: cargo xtask dist PREFIX".into()),
        },
        _ => {
            eprintln!("usage: cargo xtask test");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("\nxtask: {e}");
        std::process::exit(1);
    }
}

fn test() -> Result {
    step("cargo fmt --check");
    run(cargo().args(["fmt", "--all", "--check"]))?;
    step("cargo clippy");
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    step("cargo test (workspace)");
    run(cargo().args(["test", "--workspace"]))?;
    step("C ABI (abi-check, C suites, dist + pkg-config)");
    capi::test()?;
    step("C++ projection (hygiene, compile-fail, suites, example worker)");
    cpp::test()?;
    step("Python (wheel, pytest)");
    python::test()?;
    readme::test()?;
    pg::test()?;
    // After the C ABI and Python steps: the smoke bench reuses their builds.
    bench::bench(true)?;
    torture::torture(true)?;
    println!("\nxtask test: all steps passed");
    Ok(())
}
