//! Project automation: `cargo xtask <command>`.
//!
//! - `test`: everything CI checks (formatting, clippy, every test suite of
//!   every surface), installing what it needs itself.

mod util;

use util::{cargo, run, step, Result};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(),
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
    println!("\nxtask test: all steps passed");
    Ok(())
}
