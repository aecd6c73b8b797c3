//! `cargo xtask serve`, a step of `test`: the `tenure serve` dashboard in
//! a real browser and `/metrics` through `promtool check metrics`
//! (`tests/serve/dashboard.py`), on a SQLite store and on a throwaway
//! PostgreSQL server. Installs Debian's `chromium`, `chromium-driver` and
//! `prometheus` (for `promtool`) and the pinned Selenium of
//! `tests/serve/requirements.txt` into `.venv`. The screenshots and the
//! scraped metrics are written under `target/serve/`. The HTTP security
//! rules are tested by `crates/tenure-cli/tests/serve.rs` (workspace tests);
//! the bench rows are `bench.rs`'s `serve_rows` (`tests/serve/bench.py`).

use crate::util::{apt_install, cargo, root, run, step, Result};
use std::path::PathBuf;
use std::process::Command;

/// Install the browser, its driver, `promtool` and the pinned Selenium;
/// the `.venv` Python to run the scripts with.
pub fn prepare() -> Result<PathBuf> {
    apt_install(&["chromium", "chromium-driver", "prometheus"])?;
    let venv = root().join(".venv");
    crate::python::ensure_venv(&venv)?;
    let py = crate::python::venv_python(&venv);
    step("pip install tests/serve/requirements.txt into .venv");
    run(crate::python::pip_install(&py)
        .args(["--no-deps", "-r"])
        .arg(root().join("tests/serve/requirements.txt")))?;
    Ok(py)
}

pub fn test() -> Result {
    let py = prepare()?;
    let root = root();
    step("build tenure (serve)");
    run(cargo().args(["build", "--locked", "-q", "-p", "tenure-cli"]))?;
    let target = crate::capi::target_dir()?;
    let bin = target.join("debug").join("tenure");
    let script = root.join("tests/serve/dashboard.py");
    step("serve: dashboard in Chromium, promtool check metrics (SQLite)");
    run(Command::new(&py)
        .arg(&script)
        .arg(&bin)
        .arg(target.join("serve").join("sqlite")))?;
    step("serve: dashboard in Chromium, promtool check metrics (PostgreSQL)");
    let server = crate::pg::start()?;
    let url = server.database("xtask_serve")?;
    run(Command::new(&py)
        .arg(&script)
        .arg(&bin)
        .arg(target.join("serve").join("postgres"))
        .arg(&url))?;
    Ok(())
}
