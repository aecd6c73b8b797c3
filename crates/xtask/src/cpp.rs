//! The C++ projection (`cpp/include/tenure/tenure.hpp`): everything
//! `cargo xtask test` checks for it, in this order:
//!
//! 1. header hygiene: `tenure.hpp` compiles alone (C++17 and C++20, strict
//!    warnings), and three translation units that each include it (twice)
//!    link into one program that runs;
//! 2. compile-fail cases (`cpp/tests/compile_fail/*.cpp`): each must fail to
//!    compile with the `static_assert` message named by its
//!    `// expect-error:` line, and must compile with
//!    `-DTENURE_COMPILE_FAIL_CONTROL` (the same code with an integral `Rep`),
//!    so the failure is the duration rule and nothing else;
//! 3. language-standard cases (`cpp/tests/standard/*.cpp`): below C++17
//!    `tenure.hpp` stops with its one `#error`, nothing else;
//! 4. the doctest suite (`cpp/tests/*.cpp`) under ASan/UBSan, built once as
//!    C++17 and once as C++20 (the `std::span` overloads);
//! 5. the example worker (`cpp/examples/worker.cpp`) built twice against a
//!    `cargo xtask dist` prefix: once with nothing but `pkg-config --cflags
//!    --libs tenure`, once with CMake (`cpp/examples/CMakeLists.txt`,
//!    `find_package(tenure)` and the target `tenure::tenure`); for each
//!    build a C program fills a store, two worker processes drain it, the C
//!    program verifies the published facts. The CMake package's version file
//!    is checked on its own (the release is compatible, a newer or another
//!    major version is not).
//!
//! Needs g++, doctest, pkg-config, CMake and libfaketime (installed here via
//! apt).

use crate::capi;
use crate::util::{apt_install, output, root, run, show, step, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Warnings every C++ build here uses.
const WARN: &[&str] = &["-Wall", "-Wextra", "-Werror"];

/// Extra warnings for the header-only checks (the header must stay clean
/// under flags users commonly enable).
const STRICT: &[&str] = &[
    "-pedantic",
    "-Wshadow",
    "-Wconversion",
    "-Wsign-conversion",
    "-Wold-style-cast",
    "-Wnon-virtual-dtor",
];

const SANITIZE: &[&str] = &[
    "-g",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
];

/// Jobs the worker example drains.
const EXAMPLE_JOBS: usize = 24;

fn includes(cmd: &mut Command) -> &mut Command {
    cmd.arg("-I")
        .arg(root().join("include"))
        .arg("-I")
        .arg(root().join("cpp/include"))
}

fn link<'a>(cmd: &'a mut Command, lib: &capi::Lib) -> &'a mut Command {
    cmd.arg("-L")
        .arg(&lib.dir)
        .arg(format!("-Wl,-rpath,{}", lib.dir.display()))
        .arg("-ltenure")
}

fn mkdir(p: &Path) -> Result {
    fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// Run a test binary, echo its output, and require success.
fn run_checked(cmd: &mut Command, what: &str) -> Result {
    eprintln!("$ {}", show(cmd));
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({})", out.status))
    }
}

fn hygiene(lib: &capi::Lib, work: &Path) -> Result {
    let dir = root().join("cpp/tests/hygiene");
    for std in ["-std=c++17", "-std=c++20"] {
        step(&format!("C++ header hygiene: tenure.hpp alone ({std})"));
        run(includes(
            Command::new("g++")
                .arg(std)
                .arg("-fsyntax-only")
                .args(WARN)
                .args(STRICT),
        )
        .arg(dir.join("alone.cpp")))?;
    }
    step("C++ header hygiene: three translation units linked together");
    let bin = work.join("hygiene");
    run(link(
        includes(
            Command::new("g++")
                .arg("-std=c++17")
                .args(WARN)
                .args(STRICT)
                .args(SANITIZE),
        )
        .arg(dir.join("tu_a.cpp"))
        .arg(dir.join("tu_b.cpp"))
        .arg(dir.join("main.cpp"))
        .arg("-o")
        .arg(&bin),
        lib,
    ))?;
    run_checked(
        Command::new(&bin).arg(work.join("hygiene.db")),
        "hygiene program",
    )
}

/// The language-standard cases (`cpp/tests/standard/*.cpp`): compiled with
/// the flag of its `// std:` line, each must fail with the header's one
/// `#error` (the `// expect-error:` text, no other error, a short output);
/// compiled as C++17 it must succeed.
fn standard() -> Result {
    let dir = root().join("cpp/tests/standard");
    let mut cases: Vec<PathBuf> = fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .collect();
    cases.sort();
    if cases.is_empty() {
        return Err(format!(
            "expected the language-standard cases in {}",
            dir.display()
        ));
    }
    for case in &cases {
        let name = case.file_name().unwrap_or_default().to_string_lossy();
        let text = fs::read_to_string(case).map_err(|e| format!("{}: {e}", case.display()))?;
        let line = |prefix: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(prefix))
                .map(str::trim)
                .ok_or_else(|| format!("{name}: no `{prefix}` line"))
        };
        let std = line("// std: ")?;
        let want = line("// expect-error: ")?;
        step(&format!("C++ language standard: {name} ({std})"));
        let mut cmd = Command::new("g++");
        includes(cmd.arg(std).arg("-fsyntax-only").args(WARN)).arg(case);
        eprintln!("$ {}", show(&cmd));
        let out = cmd.output().map_err(|e| format!("cannot run g++: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let one_error = stderr.matches("error:").count() == 1;
        if out.status.success()
            || !stderr.contains("#error")
            || !stderr.contains(want)
            || !one_error
            || stderr.lines().count() > 8
        {
            eprint!("{stderr}");
            return Err(format!(
                "{name} ({std}) must fail with exactly one #error {want:?} and a short output"
            ));
        }
        println!("rejected as expected: {want}");
        // The control: the same file as C++17 compiles.
        run(includes(
            Command::new("g++")
                .arg("-std=c++17")
                .arg("-fsyntax-only")
                .args(WARN),
        )
        .arg(case))?;
    }
    Ok(())
}

fn compile_fail(work: &Path) -> Result {
    let dir = root().join("cpp/tests/compile_fail");
    let mut cases: Vec<PathBuf> = fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .collect();
    cases.sort();
    if cases.len() < 4 {
        return Err(format!(
            "expected the compile-fail cases in {}",
            dir.display()
        ));
    }
    for case in &cases {
        let name = case.file_name().unwrap_or_default().to_string_lossy();
        step(&format!("C++ compile-fail: {name}"));
        let text = fs::read_to_string(case).map_err(|e| format!("{}: {e}", case.display()))?;
        let want = text
            .lines()
            .find_map(|l| l.strip_prefix("// expect-error: "))
            .map(str::trim)
            .ok_or_else(|| format!("{name}: no `// expect-error:` line"))?;
        let mut cmd = Command::new("g++");
        includes(cmd.arg("-std=c++17").arg("-fsyntax-only").args(WARN)).arg(case);
        eprintln!("$ {}", show(&cmd));
        let out = cmd.output().map_err(|e| format!("cannot run g++: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            return Err(format!("{name} compiled, but must be rejected"));
        }
        if !stderr.contains("static assertion failed") || !stderr.contains(want) {
            eprint!("{stderr}");
            return Err(format!(
                "{name} failed to compile, but not with the static_assert message {want:?}"
            ));
        }
        println!("rejected as expected: {want}");
        // The control: the same file with an integral Rep compiles.
        let obj = work.join(format!("{name}.control.o"));
        run(includes(
            Command::new("g++")
                .arg("-std=c++17")
                .arg("-c")
                .args(WARN)
                .arg("-DTENURE_COMPILE_FAIL_CONTROL"),
        )
        .arg(case)
        .arg("-o")
        .arg(&obj))?;
    }
    Ok(())
}

/// Build the doctest program `bin` from the named files of `cpp/tests`
/// (`test_main.cpp` among them) with `std` (e.g. `-std=c++17`), ASan/UBSan.
pub(crate) fn build_suite(lib: &capi::Lib, std: &str, sources: &[&str], bin: &Path) -> Result {
    let dir = root().join("cpp/tests");
    let mut cmd = Command::new("g++");
    includes(cmd.arg(std).args(WARN).args(SANITIZE).arg("-pthread"));
    for s in sources {
        cmd.arg(dir.join(s));
    }
    run(link(cmd.arg("-o").arg(bin), lib))
}

/// One C++ program (`src`, C++17, optimized, warnings as errors) linked
/// against `lib`, as `bin`.
pub(crate) fn build_program(lib: &capi::Lib, src: &Path, bin: &Path) -> Result {
    let mut cmd = Command::new("g++");
    includes(
        cmd.arg("-std=c++17")
            .args(WARN)
            .args(["-O1", "-g", "-pthread"]),
    );
    run(link(cmd.arg(src).arg("-o").arg(bin), lib))
}

fn suite(lib: &capi::Lib, work: &Path) -> Result {
    let faketime = capi::faketime_lib()?;
    for (std, tag) in [("-std=c++17", "cxx17"), ("-std=c++20", "cxx20")] {
        step(&format!("C++ suite ({std}, ASan/UBSan)"));
        let bin = work.join(format!("suite-{tag}"));
        build_suite(
            lib,
            std,
            &[
                "test_main.cpp",
                "test_tenure.cpp",
                "test_durations.cpp",
                "test_census.cpp",
                "test_wait.cpp",
                "test_retention.cpp",
                "test_batch.cpp",
                "test_schedule.cpp",
                "test_idempotent.cpp",
                "test_stats.cpp",
                "test_steering.cpp",
                "test_recurring.cpp",
            ],
            &bin,
        )?;
        let scratch = work.join(format!("scratch-{tag}"));
        let _ = fs::remove_dir_all(&scratch);
        mkdir(&scratch)?;
        run_checked(
            Command::new(&bin)
                .env("TENURE_TEST_DIR", &scratch)
                .env("TENURE_FAKETIME_LIB", &faketime)
                .env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1")
                .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1"),
            &format!("C++ suite ({std})"),
        )?;
    }
    Ok(())
}

/// The example programs built against a `dist` prefix.
struct Example {
    /// `cpp/examples/worker.cpp`.
    worker: PathBuf,
    /// `cpp/examples/fill_store.c`.
    fill: PathBuf,
}

/// Install a `cargo xtask dist` prefix into `work/dist` (replacing it).
fn dist_prefix(work: &Path) -> Result<PathBuf> {
    let prefix = work.join("dist");
    let _ = fs::remove_dir_all(&prefix);
    capi::dist(&prefix)?;
    if !prefix.join("include/tenure/tenure.hpp").exists() {
        return Err("cargo xtask dist did not install include/tenure/tenure.hpp".into());
    }
    Ok(prefix)
}

/// Build the examples with nothing but `pkg-config --cflags --libs tenure`.
fn build_with_pkg_config(prefix: &Path, work: &Path) -> Result<Example> {
    step("C++ example worker, built with pkg-config from the dist prefix");
    let flags = output(
        Command::new("pkg-config")
            .args(["--cflags", "--libs", "tenure"])
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
    )?;
    let worker = work.join("worker");
    run(Command::new("g++")
        .arg("-std=c++17")
        .args(WARN)
        .arg("-o")
        .arg(&worker)
        .arg(root().join("cpp/examples/worker.cpp"))
        .args(flags.split_whitespace()))?;
    let fill = work.join("fill_store");
    run(Command::new("cc")
        .args(["-std=c11", "-D_POSIX_C_SOURCE=200809L"])
        .args(WARN)
        .arg("-o")
        .arg(&fill)
        .arg(root().join("cpp/examples/fill_store.c"))
        .args(flags.split_whitespace()))?;
    Ok(Example { worker, fill })
}

/// Build the examples with `cpp/examples/CMakeLists.txt`, which finds the
/// prefix's CMake package (`find_package(tenure)`, target `tenure::tenure`).
fn build_with_cmake(prefix: &Path, work: &Path) -> Result<Example> {
    step("C++ example worker, built with CMake (find_package(tenure)) from the dist prefix");
    let build = work.join("cmake-build");
    let _ = fs::remove_dir_all(&build);
    let warn = WARN.join(" ");
    run(Command::new("cmake")
        .arg("-S")
        .arg(root().join("cpp/examples"))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
        .arg(format!("-DCMAKE_C_FLAGS={warn}"))
        .arg(format!("-DCMAKE_CXX_FLAGS={warn}"))
        .arg("-DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON"))?;
    run(Command::new("cmake").arg("--build").arg(&build))?;
    Ok(Example {
        worker: build.join("worker"),
        fill: build.join("fill_store"),
    })
}

/// The installed package's version file: the release itself is compatible,
/// another major version or a newer release is not.
fn check_cmake_version_file(prefix: &Path, work: &Path) -> Result {
    step("CMake package version file");
    let file = prefix.join("lib/cmake/tenure/tenureConfigVersion.cmake");
    let text = fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("set(PACKAGE_VERSION \""))
        .and_then(|rest| rest.strip_suffix("\")"))
        .ok_or_else(|| format!("{}: no PACKAGE_VERSION", file.display()))?
        .to_string();
    let parts: Vec<u64> = version
        .split('.')
        .map(|p| {
            p.parse()
                .map_err(|_| format!("version {version:?} is not numeric"))
        })
        .collect::<Result<_>>()?;
    let [major, minor, patch] = parts[..] else {
        return Err(format!("version {version:?} is not MAJOR.MINOR.PATCH"));
    };
    let mut cases = vec![
        (format!("{major}.{minor}.{patch}"), true),
        (format!("{major}.{minor}"), true),
        (format!("{major}.{minor}.{}", patch + 1), false),
        (format!("{}.0", major + 1), false),
    ];
    if minor > 0 {
        // An older minor version: compatible from 1.0 on, not within 0.x.
        cases.push((format!("{major}.{}", minor - 1), major != 0));
    }
    for (want, compatible) in &cases {
        let mut it = want.split('.');
        let script = work.join("version-probe.cmake");
        fs::write(
            &script,
            format!(
                "set(CMAKE_SIZEOF_VOID_P 8)\n\
                 set(PACKAGE_FIND_VERSION \"{want}\")\n\
                 set(PACKAGE_FIND_VERSION_MAJOR \"{}\")\n\
                 set(PACKAGE_FIND_VERSION_MINOR \"{}\")\n\
                 include(\"{}\")\n\
                 message(STATUS \"compatible=${{PACKAGE_VERSION_COMPATIBLE}}\")\n",
                it.next().unwrap_or("0"),
                it.next().unwrap_or("0"),
                file.display()
            ),
        )
        .map_err(|e| format!("{}: {e}", script.display()))?;
        let out = output(Command::new("cmake").arg("-P").arg(&script))?;
        let got = out.contains("compatible=TRUE");
        if got != *compatible {
            return Err(format!(
                "tenureConfigVersion.cmake ({version}): a request for {want} is {} but must be {}",
                if got { "compatible" } else { "refused" },
                if *compatible { "compatible" } else { "refused" }
            ));
        }
        println!(
            "find_package(tenure {want}) against {version}: {}",
            if got { "compatible" } else { "refused" }
        );
    }
    Ok(())
}

/// Let two worker processes of `ex` drain a store its fill program filled:
/// `db` is a file path or a `postgres://` URL.
fn drain(ex: &Example, prefix: &Path, db: &Path) -> Result {
    // The programs resolve libtenure through its soname, in the prefix.
    let soname = format!(
        "[libtenure.so.{}]",
        fs::read_to_string(prefix.join("include/tenure.h"))
            .map_err(|e| e.to_string())?
            .lines()
            .find_map(|l| l.strip_prefix("#define TENURE_ABI_MAJOR "))
            .map(str::trim)
            .ok_or("the installed tenure.h has no TENURE_ABI_MAJOR")?
    );
    for bin in [&ex.worker, &ex.fill] {
        let dynamic = output(Command::new("readelf").arg("-d").arg(bin))?;
        if !dynamic.contains(&soname) {
            return Err(format!(
                "{} does not link libtenure by its soname {soname}",
                bin.display()
            ));
        }
    }
    let n = EXAMPLE_JOBS.to_string();
    let libdir = prefix.join("lib");
    run(Command::new(&ex.fill)
        .arg("fill")
        .arg(db)
        .args(["batch", &n])
        .env("LD_LIBRARY_PATH", &libdir))?;
    // Two worker processes drain the production concurrently.
    let mut children = Vec::new();
    for i in 1..=2 {
        let mut cmd = Command::new(&ex.worker);
        cmd.arg(db)
            .arg("batch")
            .arg(format!("cpp-worker-{i}"))
            .env("LD_LIBRARY_PATH", &libdir)
            .stdout(Stdio::piped());
        eprintln!("$ {} &", show(&cmd));
        children.push(
            cmd.spawn()
                .map_err(|e| format!("cannot start the worker: {e}"))?,
        );
    }
    let mut total = 0usize;
    for child in children {
        let out = child
            .wait_with_output()
            .map_err(|e| format!("worker: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        print!("{text}");
        if !out.status.success() {
            return Err(format!("the example worker failed ({})", out.status));
        }
        total += text.lines().filter(|l| l.starts_with("completed ")).count();
    }
    if total != EXAMPLE_JOBS {
        return Err(format!(
            "the workers completed {total} jobs, expected {EXAMPLE_JOBS}"
        ));
    }
    run_checked(
        Command::new(&ex.fill)
            .arg("verify")
            .arg(db)
            .args(["batch", &n])
            .env("LD_LIBRARY_PATH", &libdir),
        "verifying the worker's results",
    )
}

/// Build the example worker with pkg-config from a `dist` prefix and let two
/// of its processes drain a store another language filled: `db` is a
/// `postgres://` URL (a new empty database).
pub(crate) fn example(work: &Path, db: &str) -> Result {
    let prefix = dist_prefix(work)?;
    let ex = build_with_pkg_config(&prefix, work)?;
    drain(&ex, &prefix, Path::new(db))
}

/// The example worker built twice from one `dist` prefix, once with
/// pkg-config and once with CMake; each build drains a store file of its own.
fn examples(work: &Path) -> Result {
    apt_install(&["cmake", "make"])?;
    let prefix = dist_prefix(work)?;
    let with_pc = work.join("pkg-config");
    mkdir(&with_pc)?;
    let ex = build_with_pkg_config(&prefix, &with_pc)?;
    drain(&ex, &prefix, &with_pc.join("example.db"))?;
    check_cmake_version_file(&prefix, work)?;
    let ex = build_with_cmake(&prefix, work)?;
    drain(&ex, &prefix, &work.join("cmake-example.db"))
}

/// Everything `cargo xtask test` checks for the C++ projection.
pub fn test() -> Result {
    apt_install(&["g++", "doctest-dev", "pkg-config", "libfaketime"])?;
    let lib = capi::build_lib()?;
    let work = capi::target_dir()?.join("cpp");
    let _ = fs::remove_dir_all(&work);
    mkdir(&work)?;
    hygiene(&lib, &work)?;
    compile_fail(&work)?;
    standard()?;
    suite(&lib, &work)?;
    examples(&work)?;
    println!("C++ projection: all checks passed");
    Ok(())
}
