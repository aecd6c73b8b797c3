//! The Python projection's CI steps: build the abi3 wheel with maturin,
//! install it (not `maturin develop`) into `<root>/.venv`, run `tests/python`.
//!
//! Everything is installed here: `python3 -m venv` (Debian's `python3-venv`
//! if missing), pinned maturin / pytest / mypy from PyPI into `.venv`, and
//! `faketime` (libfaketime) for the clock-rollback test, a C compiler for the
//! Python <-> C hand-off test. The wheel's path is handed to pytest as
//! `TENURE_WHEEL` (the clean-venv test installs it again), the C ABI's static
//! library as `TENURE_CAPI_LIB`.

use crate::util::{apt_install, cargo, root, run, step, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Pinned tools installed into `.venv`.
const TOOLS: &[&str] = &["maturin==1.16.0", "pytest==9.2.0", "mypy==2.4.1"];

fn target_dir() -> Result<PathBuf> {
    crate::capi::target_dir()
}

pub(crate) fn venv_python(venv: &Path) -> PathBuf {
    venv.join("bin").join("python")
}

/// `PY -m pip install -q --disable-pip-version-check`, for more arguments.
pub(crate) fn pip_install(py: &Path) -> Command {
    let mut c = Command::new(py);
    c.args(["-m", "pip", "install", "-q", "--disable-pip-version-check"]);
    c
}

pub(crate) fn ensure_venv(venv: &Path) -> Result {
    let ok = Command::new("python3")
        .args(["-m", "venv", "--help"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    let has_ensurepip = Command::new("python3")
        .args(["-c", "import ensurepip"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok || !has_ensurepip {
        apt_install(&["python3", "python3-venv"])?;
    }
    if !venv_python(venv).exists() {
        step("python3 -m venv .venv");
        run(Command::new("python3").arg("-m").arg("venv").arg(venv))?;
    }
    step("pip install (maturin, pytest, mypy) into .venv");
    run(Command::new(venv_python(venv))
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .args(TOOLS))
}

/// Build the abi3 wheel with `.venv`'s maturin (debug for the tests, release
/// for the benchmarks) and return its path.
pub(crate) fn build_wheel(venv: &Path, release: bool) -> Result<PathBuf> {
    let root = root();
    let py = venv_python(venv);
    step(&format!(
        "Python: maturin build (abi3 wheel, {})",
        if release { "release" } else { "debug" }
    ));
    let out = target_dir()?.join(if release {
        "python-wheels-release"
    } else {
        "python-wheels"
    });
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let mut cmd = Command::new(venv.join("bin").join("maturin"));
    cmd.current_dir(&root)
        .arg("build")
        .arg("--locked")
        .arg("--interpreter")
        .arg(&py)
        .arg("--out")
        .arg(&out);
    if release {
        cmd.arg("--release");
    }
    run(&mut cmd)?;
    let wheels: Vec<PathBuf> = std::fs::read_dir(&out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    let [wheel] = wheels.as_slice() else {
        return Err(format!(
            "expected exactly one wheel in {}, found {wheels:?}",
            out.display()
        ));
    };
    if !wheel.to_string_lossy().contains("-abi3-") {
        return Err(format!("{} is not an abi3 wheel", wheel.display()));
    }
    Ok(wheel.clone())
}

/// Make `.venv` (with the pinned tools), build the wheel (debug for the
/// tests, release for the benchmarks) and install it there; returns
/// `(python, wheel)`.
pub(crate) fn install_wheel(release: bool) -> Result<(PathBuf, PathBuf)> {
    let venv = root().join(".venv");
    ensure_venv(&venv)?;
    let py = venv_python(&venv);

    let wheel = build_wheel(&venv, release)?;

    step("Python: pip install the built wheel into .venv");
    run(Command::new(&py)
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--force-reinstall",
            "--no-deps",
        ])
        .arg(&wheel))?;
    Ok((py, wheel))
}

/// Build the wheel, install it into `.venv`, run the pytest suites.
pub fn test() -> Result {
    let root = root();
    apt_install(&["faketime"])?;
    let (py, wheel) = install_wheel(false)?;
    let wheel = &wheel;

    step("Python: libtenure.a for the cross-language hand-off test");
    apt_install(&["gcc", "libc6-dev"])?;
    run(cargo().args(["build", "--locked", "-p", "tenure-capi"]))?;
    let capi = target_dir()?.join("debug").join("libtenure.a");

    step("Python: pytest tests/python (against the installed wheel)");
    // Any failure (and pytest's exit code 5, "no tests collected") fails the step.
    run(Command::new(&py)
        .current_dir(&root)
        .env("TENURE_WHEEL", wheel)
        .env("TENURE_CAPI_LIB", &capi)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["-m", "pytest", "tests/python", "-p", "no:cacheprovider"]))
}
