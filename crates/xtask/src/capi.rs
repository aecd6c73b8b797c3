//! The C ABI: header generation, the distributed shared library, ABI checks
//! against `abi-versions/`, the C test suites and `dist`.
//!
//! - `cargo xtask abi-check [--bless]`: the five checks of the ABI contract
//!   (header drift; exported symbols and the version nodes of `tenure.map`
//!   vs baselines; `abidiff`; a client built against each header of the
//!   current major, which must need nothing newer than that header's
//!   version; version agreement).
//!   `--bless` rewrites `include/tenure.h` and writes the baseline folder of
//!   the current `TENURE_ABI_MAJOR.TENURE_ABI_MINOR` if it does not exist
//!   yet or is still unreleased (holds an `UNRELEASED` file); a released
//!   baseline (no such file) is never rewritten.
//! - `cargo xtask dist PREFIX`: installs the library, the headers, the
//!   pkg-config file and the CMake package (`PREFIX/lib/cmake/tenure`, from
//!   the templates in `cmake/`: `find_package(tenure)` gives the imported
//!   target `tenure::tenure`).
//! - `test()` (called by `cargo xtask test`): abi-check, the C suites in
//!   `tests/c/` under ASan/UBSan/LeakSanitizer, and a pkg-config build from a
//!   temporary `dist` prefix.
//!
//! The distributed `libtenure.so.<major>.<minor>.0` is linked here from the
//! cargo-built `libtenure.a` with `crates/tenure-capi/tenure.map` (soname
//! `libtenure.so.<major>`, only the `tenure_*` names of its version nodes
//! exported, each versioned `TENURE_<major>.<minor that added it>`):
//! rustc's own version script for cdylibs cannot be combined with a second
//! one (see `crates/tenure-capi/build.rs`).

use crate::util::{apt_install, cargo, cargo_metadata, output, root, run, step, Result};
use crate::version_script;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The one place the cbindgen version is pinned.
pub const CBINDGEN_VERSION: &str = "0.29.4";

/// Native libraries a Rust staticlib needs on Linux (from
/// `rustc --print native-static-libs`).
const NATIVE_LIBS: &[&str] = &[
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// Flags every C test program is compiled with.
const C_FLAGS: &[&str] = &[
    "-std=c11",
    "-D_POSIX_C_SOURCE=200809L",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-g",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
];

/// Flags for `abidw`: no locations or paths, so output is stable across
/// rebuilds and machines. `--headers-dir include` + `--drop-private-types`
/// keep only what the public header declares (a Rust cdylib's DWARF
/// otherwise describes every internal Rust type, which changes with the
/// compiler and every internal refactor).
const ABIDW_FLAGS: &[&str] = &[
    "--no-corpus-path",
    "--no-show-locs",
    "--no-comp-dir-path",
    "--drop-private-types",
];

pub fn target_dir() -> Result<PathBuf> {
    if let Ok(d) = std::env::var("CARGO_TARGET_DIR") {
        let p = PathBuf::from(d);
        return Ok(if p.is_absolute() { p } else { root().join(p) });
    }
    cargo_metadata()?["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata: no target_directory".to_string())
}

/// The package version of tenure-capi according to Cargo.
fn cargo_version() -> Result<String> {
    package_version(&cargo_metadata()?, "tenure-capi")
}

/// The version of the package `name` in `cargo metadata` output.
fn package_version(meta: &serde_json::Value, name: &str) -> Result<String> {
    meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == name)
        .ok_or_else(|| format!("cargo metadata: no {name} package"))?["version"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("cargo metadata: {name} has no version"))
}

fn cbindgen() -> Result<PathBuf> {
    let tools = target_dir()?.join("tools");
    let bin = tools.join("bin").join("cbindgen");
    let ok = Command::new(&bin)
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout).trim() == format!("cbindgen {CBINDGEN_VERSION}")
        })
        .unwrap_or(false);
    if !ok {
        step(&format!("install cbindgen {CBINDGEN_VERSION}"));
        run(cargo()
            .args([
                "install",
                "cbindgen",
                "--version",
                CBINDGEN_VERSION,
                "--locked",
                "--force",
                "--root",
            ])
            .arg(&tools))?;
    }
    Ok(bin)
}

/// Some exports are written by macros, so cbindgen reads the crate with its
/// macros expanded (`[parse.expand]` in `cbindgen.toml`): it runs
/// `cargo rustc -- -Zunpretty=expanded`, which the stable toolchain allows
/// with `RUSTC_BOOTSTRAP=1`.
fn generate_header(out: &Path) -> Result {
    let bin = cbindgen()?;
    let crate_dir = root().join("crates/tenure-capi");
    run(Command::new(bin)
        .current_dir(root())
        .env("RUSTC_BOOTSTRAP", "1")
        .arg("--quiet")
        .arg("--config")
        .arg(crate_dir.join("cbindgen.toml"))
        .args(["--crate", "tenure-capi", "--output"])
        .arg(out)
        .arg(&crate_dir))
}

/// `(major, minor)` from a header's `TENURE_ABI_MAJOR` / `TENURE_ABI_MINOR`.
fn header_abi(header: &Path) -> Result<(u32, u32)> {
    let text = fs::read_to_string(header).map_err(|e| format!("{}: {e}", header.display()))?;
    let get = |name: &str| -> Result<u32> {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("{}: no #define {name}", header.display()))
    };
    Ok((get("TENURE_ABI_MAJOR")?, get("TENURE_ABI_MINOR")?))
}

/// Built artefacts of the C library.
pub struct Lib {
    /// Directory with `libtenure.so*` and `libtenure.a`.
    pub dir: PathBuf,
    /// The real file `libtenure.so.<major>.<minor>.0`.
    pub so: PathBuf,
    pub major: u32,
    pub minor: u32,
}

/// Build `libtenure.a` with cargo and link the versioned shared library.
pub fn build_lib() -> Result<Lib> {
    build_lib_profile(false)
}

/// [`build_lib`] for the debug (tests) or release (benchmarks, dist) profile.
pub fn build_lib_profile(release: bool) -> Result<Lib> {
    let profile = if release { "release" } else { "debug" };
    step(&format!(
        "build libtenure (cargo build -p tenure-capi, {profile})"
    ));
    let mut build = cargo();
    build.args(["build", "--locked", "-p", "tenure-capi"]);
    if release {
        build.arg("--release");
    }
    run(&mut build)?;
    let target = target_dir()?;
    let (major, minor) = header_abi(&root().join("include/tenure.h"))?;
    let dir = target
        .join("capi")
        .join(if release { "lib-release" } else { "lib" });
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let real = format!("libtenure.so.{major}.{minor}.0");
    let so = dir.join(&real);
    let archive = target.join(profile).join("libtenure.a");
    step(&format!(
        "link {real} (soname libtenure.so.{major}, TENURE_{major}.x symbols)"
    ));
    run(Command::new("cc")
        .arg("-shared")
        .arg("-o")
        .arg(&so)
        .arg(format!("-Wl,-soname,libtenure.so.{major}"))
        .arg(format!(
            "-Wl,--version-script={}",
            root().join("crates/tenure-capi/tenure.map").display()
        ))
        .args([
            "-Wl,--gc-sections",
            "-Wl,-z,relro,-z,now",
            "-Wl,--whole-archive",
        ])
        .arg(&archive)
        .arg("-Wl,--no-whole-archive")
        .args(NATIVE_LIBS))?;
    for link in [format!("libtenure.so.{major}"), "libtenure.so".to_string()] {
        let p = dir.join(&link);
        let _ = fs::remove_file(&p);
        std::os::unix::fs::symlink(&real, &p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    fs::copy(&archive, dir.join("libtenure.a")).map_err(|e| e.to_string())?;
    Ok(Lib {
        dir,
        so,
        major,
        minor,
    })
}

/// Exported, defined dynamic symbols as sorted `name@@VERSION` lines.
fn exported_symbols(so: &Path) -> Result<BTreeSet<String>> {
    let text = output(Command::new("objdump").arg("-T").arg(so))?;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // addr flags... section size version name
        if f.len() < 5 || f.contains(&"*UND*") || f.contains(&"*ABS*") || !line.contains(" g ") {
            continue;
        }
        let name = f[f.len() - 1];
        let version = f[f.len() - 2];
        out.insert(format!("{name}@@{version}"));
    }
    if out.is_empty() {
        return Err(format!("{}: no exported symbols found", so.display()));
    }
    Ok(out)
}

/// The `tenure_*` functions the Rust library defines (global text symbols
/// of `libtenure.a`), exported or not.
fn defined_functions(archive: &Path) -> Result<BTreeSet<String>> {
    let text = output(
        Command::new("nm")
            .args(["-g", "--defined-only", "--format=posix"])
            .arg(archive),
    )?;
    let out: BTreeSet<String> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (name, kind) = (f.next()?, f.next()?);
            (kind == "T" && name.starts_with("tenure_")).then(|| name.to_string())
        })
        .collect();
    if out.is_empty() {
        return Err(format!(
            "{}: no tenure_* functions found",
            archive.display()
        ));
    }
    Ok(out)
}

/// The file whose presence marks a baseline as not yet released: `--bless`
/// may rewrite it while the ABI version is under development; deleting the
/// file releases (freezes) the version.
const UNRELEASED: &str = "UNRELEASED";

/// Baseline folders `abi-versions/<major>.<minor>`, sorted by version.
fn baselines() -> Result<Vec<(u32, u32, PathBuf)>> {
    let mut v = Vec::new();
    let dir = root().join("abi-versions");
    for e in fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some((a, b)) = name.split_once('.') {
            if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                v.push((a, b, e.path()));
            }
        }
    }
    v.sort();
    Ok(v)
}

fn read_symbols(path: &Path) -> Result<BTreeSet<String>> {
    Ok(fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect())
}

/// Describe the library with `abidw`, then drop what is not reproducible:
/// every translation unit's `path` (machine-specific registry/toolchain paths
/// and codegen-unit hashes) becomes `tu-<n>`, numbered in order. `abidiff`
/// compares functions and types, never these names.
fn abidw(lib: &Lib, out: &Path) -> Result {
    let raw = out.with_extension("raw");
    run(Command::new("abidw")
        .args(ABIDW_FLAGS)
        .arg("--headers-dir")
        .arg(root().join("include"))
        .arg("--out-file")
        .arg(&raw)
        .arg(&lib.so))?;
    let text = fs::read_to_string(&raw).map_err(|e| format!("{}: {e}", raw.display()))?;
    let _ = fs::remove_file(&raw);
    let mut norm = String::with_capacity(text.len());
    let mut n = 0;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("<abi-instr ") {
            if let Some(start) = line.find(" path='") {
                let rest = &line[start + 7..];
                if let Some(end) = rest.find('\'') {
                    n += 1;
                    norm.push_str(&line[..start]);
                    norm.push_str(&format!(" path='tu-{n}'"));
                    norm.push_str(&rest[end + 1..]);
                    norm.push('\n');
                    continue;
                }
            }
        }
        norm.push_str(line);
        norm.push('\n');
    }
    fs::write(out, norm).map_err(|e| format!("{}: {e}", out.display()))
}

fn write_baseline(lib: &Lib, dir: &Path, symbols: &BTreeSet<String>) -> Result {
    let created = !dir.exists();
    fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    if created {
        fs::write(
            dir.join(UNRELEASED),
            "This ABI version is under development: `cargo xtask abi-check --bless`\n\
             rewrites this folder. Delete this file when the version is released;\n\
             from then on the baseline is frozen.\n",
        )
        .map_err(|e| e.to_string())?;
    }
    fs::copy(root().join("include/tenure.h"), dir.join("tenure.h")).map_err(|e| e.to_string())?;
    let mut s = symbols.iter().cloned().collect::<Vec<_>>().join("\n");
    s.push('\n');
    fs::write(dir.join("symbols.txt"), s).map_err(|e| e.to_string())?;
    abidw(lib, &dir.join("libtenure.abi"))
}

pub(crate) fn cc_client(
    src: &Path,
    include: &Path,
    lib: &Path,
    out: &Path,
    extra: &[&str],
) -> Result {
    run(Command::new("cc")
        .args(C_FLAGS)
        .arg("-I")
        .arg(include)
        .arg("-o")
        .arg(out)
        .arg(src)
        .arg("-L")
        .arg(lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ltenure")
        .args(extra))
}

fn sanitizer_env(cmd: &mut Command) -> &mut Command {
    cmd.env(
        "ASAN_OPTIONS",
        "detect_leaks=1:abort_on_error=0:halt_on_error=1",
    )
    .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
}

fn tools() -> Result {
    apt_install(&[
        "abigail-tools",
        "binutils",
        "gcc",
        "libc6-dev",
        "pkg-config",
        "libfaketime",
    ])
}

/// Path of the Debian libfaketime preload library (for the clock suite).
pub(crate) fn faketime_lib() -> Result<String> {
    let files = output(Command::new("dpkg").args(["-L", "libfaketime"]))?;
    files
        .lines()
        .find(|l| l.ends_with("/libfaketime.so.1"))
        .map(str::to_string)
        .ok_or_else(|| "libfaketime.so.1 not found in the libfaketime package".into())
}

/// `cargo xtask abi-check [--bless]`.
pub fn abi_check(bless: bool) -> Result {
    tools()?;
    let work = target_dir()?.join("capi").join("check");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| e.to_string())?;

    // 1. The checked-in header is exactly what the pinned cbindgen generates.
    step("abi-check 1/5: regenerate include/tenure.h");
    let fresh = work.join("tenure.h");
    generate_header(&fresh)?;
    let checked_in = root().join("include/tenure.h");
    let same = fs::read(&fresh).ok() == fs::read(&checked_in).ok();
    if !same {
        if bless {
            fs::create_dir_all(root().join("include")).map_err(|e| e.to_string())?;
            fs::copy(&fresh, &checked_in).map_err(|e| e.to_string())?;
            println!("blessed include/tenure.h");
        } else {
            let _ = run(Command::new("diff").arg("-u").arg(&checked_in).arg(&fresh));
            return Err("include/tenure.h differs from the generated header; \
                        run `cargo xtask abi-check --bless` and commit it"
                .into());
        }
    }

    let lib = build_lib()?;
    let (major, minor) = (lib.major, lib.minor);

    // 2. Exported symbols vs baselines.
    step("abi-check 2/5: exported symbols");
    let syms = exported_symbols(&lib.so)?;
    for s in &syms {
        let (name, ver) = s.split_once("@@").unwrap_or((s, ""));
        if !name.starts_with("tenure_") || !ver.starts_with(&format!("TENURE_{major}.")) {
            return Err(format!(
                "exported symbol {s} is not a tenure_* symbol of version TENURE_{major}.x"
            ));
        }
    }
    let mut bases: Vec<_> = baselines()?
        .into_iter()
        .filter(|(a, _, _)| *a == major)
        .collect();
    let current_dir = root().join(format!("abi-versions/{major}.{minor}"));
    if let Some((_, m, _)) = bases
        .iter()
        .find(|(_, m, dir)| *m != minor && dir.join(UNRELEASED).exists())
    {
        return Err(format!(
            "abi-versions/{major}.{m} is marked {UNRELEASED} but the ABI is {major}.{minor}: \
             only the version under development may be unreleased"
        ));
    }
    if bless && (!current_dir.exists() || current_dir.join(UNRELEASED).exists()) {
        write_baseline(&lib, &current_dir, &syms)?;
        println!("blessed abi-versions/{major}.{minor}");
        bases = baselines()?
            .into_iter()
            .filter(|(a, _, _)| *a == major)
            .collect();
    }
    let Some((_, latest_minor, latest_dir)) = bases.last().cloned() else {
        return Err(format!(
            "no baseline abi-versions/{major}.* for ABI major {major}: a new major needs \
             abi-versions/{major}.0 (run `cargo xtask abi-check --bless`)"
        ));
    };
    if minor < latest_minor {
        return Err(format!(
            "TENURE_ABI_MINOR is {minor} but abi-versions/{major}.{latest_minor} exists"
        ));
    }
    for (_, m, dir) in &bases {
        let base = read_symbols(&dir.join("symbols.txt"))?;
        let missing: Vec<_> = base.difference(&syms).collect();
        if !missing.is_empty() {
            return Err(format!(
                "symbols of ABI {major}.{m} removed or changed without a major bump: {missing:?}"
            ));
        }
    }
    let latest = read_symbols(&latest_dir.join("symbols.txt"))?;
    let added: Vec<_> = syms.difference(&latest).collect();
    if !added.is_empty() {
        return Err(if latest_minor == minor {
            format!(
                "symbols added without a minor bump: {added:?}; bump TENURE_ABI_MINOR to {} \
                 (and the version node in tenure.map), then `cargo xtask abi-check --bless`",
                minor + 1
            )
        } else {
            format!(
                "ABI {major}.{minor} has no baseline folder; run `cargo xtask abi-check --bless`"
            )
        });
    }
    if latest_minor != minor {
        return Err(format!(
            "ABI {major}.{minor} has no baseline folder; run `cargo xtask abi-check --bless`"
        ));
    }
    println!("{} symbols match abi-versions/{major}.{minor}", syms.len());
    let map = root().join("crates/tenure-capi/tenure.map");
    let nodes = version_script::parse(
        &fs::read_to_string(&map).map_err(|e| format!("{}: {e}", map.display()))?,
    )?;
    let mut base_syms = BTreeMap::new();
    for (_, m, dir) in &bases {
        base_syms.insert(*m, read_symbols(&dir.join("symbols.txt"))?);
    }
    version_script::check(
        &nodes,
        major,
        minor,
        &defined_functions(&lib.dir.join("libtenure.a"))?,
        &base_syms,
    )?;
    println!(
        "tenure.map: {} version nodes, every tenure_* function in exactly one",
        nodes.len()
    );

    // 3. abidiff against every baseline of this major: an incompatible change
    // (bit 8) always fails; any change (bit 4) fails against the baseline of
    // the current version (it was not updated); against an older baseline
    // only added functions and variables are allowed (nothing removed or
    // changed, which covers every type a released function reaches).
    step("abi-check 3/5: abidiff");
    opaque_handles_suppressed(
        &fs::read_to_string(root().join("include/tenure.h"))
            .map_err(|e| format!("cannot read include/tenure.h: {e}"))?,
        &fs::read_to_string(root().join("abi-versions/opaque-handles.suppr"))
            .map_err(|e| format!("cannot read abi-versions/opaque-handles.suppr: {e}"))?,
    )?;
    let fresh_abi = work.join("libtenure.abi");
    abidw(&lib, &fresh_abi)?;
    for (_, m, dir) in &bases {
        let base = dir.join("libtenure.abi");
        eprintln!(
            "$ abidiff --no-unreferenced-symbols --suppressions abi-versions/opaque-handles.suppr {} {}",
            base.display(),
            fresh_abi.display()
        );
        let out = Command::new("abidiff")
            .arg("--no-unreferenced-symbols")
            .arg("--suppressions")
            .arg(root().join("abi-versions/opaque-handles.suppr"))
            .arg(&base)
            .arg(&fresh_abi)
            .output()
            .map_err(|e| format!("cannot run abidiff: {e}"))?;
        let report = String::from_utf8_lossy(&out.stdout);
        print!("{report}");
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        let code = out.status.code().ok_or("abidiff was killed")?;
        if code & 3 != 0 {
            return Err(format!("abidiff failed to run (exit {code})"));
        }
        if code & 8 != 0 {
            return Err(format!(
                "abidiff: incompatible ABI change against {major}.{m} without a major bump"
            ));
        }
        if code & 4 != 0 && *m == minor {
            return Err(format!(
                "abidiff: the ABI changed but abi-versions/{major}.{minor} was not updated \
                 (bump TENURE_ABI_MINOR and bless a new baseline, or re-bless the \
                 unreleased one)"
            ));
        }
        if code & 4 != 0 {
            only_additions(&report)
                .map_err(|e| format!("abidiff against the released ABI {major}.{m}: {e}"))?;
        }
    }

    // 4. A client built against each header of this major (the oldest
    // first) runs against the fresh library and needs no newer symbol
    // version than its header's.
    step("abi-check 4/5: a client of every header of the major");
    for (_, m, dir) in &bases {
        let inc = work.join(format!("include-{major}.{m}"));
        fs::create_dir_all(&inc).map_err(|e| e.to_string())?;
        fs::copy(dir.join("tenure.h"), inc.join("tenure.h")).map_err(|e| e.to_string())?;
        let client = work.join(format!("abi_client-{major}.{m}"));
        cc_client(
            &root().join("tests/c/abi_client.c"),
            &inc,
            &lib.dir,
            &client,
            &[],
        )?;
        run(sanitizer_env(&mut Command::new(&client)).arg(work.join(format!("client-{m}.db"))))?;
        let needs = required_versions(&client)?;
        if needs.is_empty() || needs.iter().any(|v| !older_or_same(v, *m, major)) {
            return Err(format!(
                "the client built against the {major}.{m} header needs symbol versions \
                 {needs:?}; it may need only TENURE_{major}.{m} and older"
            ));
        }
        println!("the {major}.{m} client runs and needs only {needs:?}");
    }

    // 5. Header macros, run-time versions and Cargo agree.
    step("abi-check 5/5: versions agree");
    let probe = work.join("version_probe");
    cc_client(
        &root().join("tests/c/version_probe.c"),
        &root().join("include"),
        &lib.dir,
        &probe,
        &[],
    )?;
    let text = output(sanitizer_env(&mut Command::new(&probe)))?;
    let want = format!(
        "abi {major}.{minor} runtime-abi {major}.{minor} version {v} runtime-version {v}",
        v = cargo_version()?
    );
    if text.trim() != want {
        return Err(format!(
            "version disagreement:\n  got:  {}\n  want: {want}",
            text.trim()
        ));
    }
    println!("{want}");
    println!("abi-check: all 5 checks passed");
    Ok(())
}

/// From an `abidiff` report against an older baseline: an error unless
/// every function and variable change is an addition.
/// Every opaque handle the header declares (`typedef struct tenure_x
/// tenure_x;`) is named in the suppression's `name_regexp` alternation, so
/// a change inside a handle's private Rust layout is never reported as an
/// ABI change, and a handle added to the header without its suppression
/// fails here instead of on the first change to its fields.
fn opaque_handles_suppressed(header: &str, suppr: &str) -> Result {
    let named: BTreeSet<&str> = suppr
        .lines()
        .filter_map(|l| l.trim().strip_prefix("name_regexp"))
        .filter_map(|l| l.split_once("tenure_("))
        .filter_map(|(_, rest)| rest.split_once(')'))
        .flat_map(|(alts, _)| alts.split('|'))
        .collect();
    let missing: Vec<&str> = header
        .lines()
        .filter_map(|l| l.trim().strip_prefix("typedef struct tenure_"))
        .filter_map(|rest| rest.split_once(' '))
        .filter(|(name, tail)| tail.trim() == format!("tenure_{name};"))
        .map(|(name, _)| name)
        .filter(|name| !named.contains(name))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "abi-versions/opaque-handles.suppr does not name the opaque handle(s) {} \
             of include/tenure.h",
            missing.join(", ")
        ))
    }
}

fn only_additions(report: &str) -> Result {
    for what in ["Functions", "Variables"] {
        let line = report
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{what} changes summary:")))
            .ok_or_else(|| format!("no `{what} changes summary` line in the report"))?;
        for kind in ["Removed", "Changed"] {
            let n = line
                .split(',')
                .find_map(|part| {
                    let mut f = part.split_whitespace();
                    let n = f.next()?;
                    (f.next()? == kind).then_some(n)
                })
                .ok_or_else(|| format!("no `{kind}` count in `{line}`"))?;
            if n != "0" {
                return Err(format!("{what}: {n} {kind} (only additions are allowed)"));
            }
        }
    }
    Ok(())
}

/// The `tenure` symbol versions a program needs (`objdump -T`: the version
/// in parentheses of each undefined `tenure_*` symbol).
fn required_versions(bin: &Path) -> Result<BTreeSet<String>> {
    let text = output(Command::new("objdump").arg("-T").arg(bin))?;
    Ok(text
        .lines()
        .filter(|l| l.contains("*UND*"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let name = *f.last()?;
            let ver = f.get(f.len().checked_sub(2)?)?;
            name.starts_with("tenure_")
                .then(|| ver.trim_matches(['(', ')']).to_string())
        })
        .collect())
}

/// Whether the symbol version `v` is `TENURE_<major>.<m>` with `m <= minor`.
fn older_or_same(v: &str, minor: u32, major: u32) -> bool {
    v.strip_prefix(&format!("TENURE_{major}."))
        .and_then(|m| m.parse::<u32>().ok())
        .is_some_and(|m| m <= minor)
}

/// Check the probe coverage rule ([`crate::probes`]), then run the C test
/// suites against the freshly built library.
pub fn c_tests() -> Result {
    step("probe coverage (every export of tenure.map in the bad-input suite and the fuzz driver)");
    crate::probes::check()?;
    tools()?;
    let lib = build_lib()?;
    run_c_suites(
        &lib,
        "ctest",
        &[
            "lifecycle",
            "bad_input",
            "threads",
            "token_handoff",
            "clock",
            "census",
            "wait",
            "retention",
            "batch",
            "schedule",
            "idempotent",
            "stats",
            "steering",
            "recurring",
        ],
        &[],
    )?;
    Ok(())
}

/// Build `tests/c/test_<suite>.c` for each named suite (sanitizers on) into
/// `<target>/capi/<work>/`, run each with a fresh scratch folder and the
/// extra environment `env` (e.g. the PostgreSQL variables of `harness.h`),
/// and require its last line to be "N passed, 0 failed". Returns each
/// suite's standard output.
pub(crate) fn run_c_suites(
    lib: &Lib,
    work: &str,
    suites: &[&str],
    env: &[(String, String)],
) -> Result<Vec<String>> {
    tools()?;
    let work = target_dir()?.join("capi").join(work);
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let faketime = faketime_lib()?;
    let mut outputs = Vec::new();
    for suite in suites {
        step(&format!("C suite {suite}"));
        let bin = work.join(suite);
        cc_client(
            &root().join(format!("tests/c/test_{suite}.c")),
            &root().join("include"),
            &lib.dir,
            &bin,
            &["-lpthread"],
        )?;
        let dir = work.join(format!("{suite}.d"));
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let out = Command::new(&bin)
            .arg(&dir)
            .env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1")
            .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
            .env("TENURE_FAKETIME_LIB", &faketime)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        print!("{stdout}");
        eprint!("{stderr}");
        let last = stdout.lines().last().unwrap_or("");
        if !out.status.success() || !last.ends_with(" passed, 0 failed") {
            return Err(format!("C suite {suite} failed ({})", out.status));
        }
        outputs.push(stdout);
    }
    Ok(outputs)
}

/// `cargo xtask dist PREFIX`.
pub fn dist(prefix: &Path) -> Result {
    let lib = build_lib()?;
    let prefix = if prefix.is_absolute() {
        prefix.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(prefix)
    };
    step(&format!("dist into {}", prefix.display()));
    let libdir = prefix.join("lib");
    let incdir = prefix.join("include");
    let pcdir = libdir.join("pkgconfig");
    for d in [&libdir, &incdir, &pcdir] {
        fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let real = lib.so.file_name().expect("file name").to_owned();
    let copy = |from: &Path, to: &Path| -> Result {
        let _ = fs::remove_file(to);
        fs::copy(from, to)
            .map(|_| ())
            .map_err(|e| format!("{} -> {}: {e}", from.display(), to.display()))
    };
    copy(&lib.so, &libdir.join(&real))?;
    for link in [format!("libtenure.so.{}", lib.major), "libtenure.so".into()] {
        let p = libdir.join(link);
        let _ = fs::remove_file(&p);
        std::os::unix::fs::symlink(&real, &p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    copy(&lib.dir.join("libtenure.a"), &libdir.join("libtenure.a"))?;
    copy(&root().join("include/tenure.h"), &incdir.join("tenure.h"))?;
    // Hook for the C++ projection: installed when it exists.
    let hpp = root().join("cpp/include/tenure/tenure.hpp");
    if hpp.exists() {
        fs::create_dir_all(incdir.join("tenure")).map_err(|e| e.to_string())?;
        copy(&hpp, &incdir.join("tenure/tenure.hpp"))?;
    }
    let version = cargo_version()?;
    let pc = format!(
        "prefix={}\nexec_prefix=${{prefix}}\nlibdir=${{exec_prefix}}/lib\nincludedir=${{prefix}}/include\n\n\
         Name: tenure\nDescription: Embedded job lease authority (C ABI {}.{})\nVersion: {}\n\
         Libs: -L${{libdir}} -ltenure\nLibs.private: {}\nCflags: -I${{includedir}}\n",
        prefix.display(),
        lib.major,
        lib.minor,
        version,
        NATIVE_LIBS.join(" ")
    );
    fs::write(pcdir.join("tenure.pc"), pc).map_err(|e| e.to_string())?;
    let cmakedir = libdir.join("cmake/tenure");
    fs::create_dir_all(&cmakedir).map_err(|e| format!("{}: {e}", cmakedir.display()))?;
    let (vmajor, vminor) = {
        let mut parts = version.split('.');
        (
            parts.next().unwrap_or_default().to_string(),
            parts.next().unwrap_or_default().to_string(),
        )
    };
    let vars = [
        ("TENURE_VERSION", version.clone()),
        ("TENURE_VERSION_MAJOR", vmajor),
        ("TENURE_VERSION_MINOR", vminor),
        ("TENURE_ABI_MAJOR", lib.major.to_string()),
        ("TENURE_ABI_MINOR", lib.minor.to_string()),
    ];
    for name in ["tenureConfig.cmake", "tenureConfigVersion.cmake"] {
        let template = root().join("cmake").join(format!("{name}.in"));
        let text =
            fs::read_to_string(&template).map_err(|e| format!("{}: {e}", template.display()))?;
        let out = cmakedir.join(name);
        fs::write(&out, configure(&text, &vars)?).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    println!("installed libtenure into {}", prefix.display());
    Ok(())
}

/// Replace every `@NAME@` of `text` by its value in `vars` (CMake's
/// `configure_file(@ONLY)` rule); a placeholder without a value is an error.
fn configure(text: &str, vars: &[(&str, String)]) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('@') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let end = after.find('@').map(|e| &after[..e]).filter(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        match end {
            Some(name) => {
                let value = vars
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v)
                    .ok_or_else(|| format!("template placeholder @{name}@ has no value"))?;
                out.push_str(value);
                rest = &after[name.len() + 1..];
            }
            None => {
                out.push('@');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Install into a temporary prefix and build a C program with nothing but
/// `pkg-config --cflags --libs tenure`.
fn dist_test() -> Result {
    let prefix = target_dir()?.join("capi").join("dist-test");
    let _ = fs::remove_dir_all(&prefix);
    dist(&prefix)?;
    step("pkg-config build from the dist prefix");
    let pc_path = prefix.join("lib/pkgconfig");
    let flags = output(
        Command::new("pkg-config")
            .args(["--cflags", "--libs", "tenure"])
            .env("PKG_CONFIG_PATH", &pc_path),
    )?;
    let bin = prefix.join("pkgconfig_client");
    let mut cmd = Command::new("cc");
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&bin)
        .arg(root().join("tests/c/pkgconfig_client.c"))
        .args(flags.split_whitespace());
    run(&mut cmd)?;
    let db = prefix.join("client.db");
    let out = output(
        Command::new(&bin)
            .arg(&db)
            .env("LD_LIBRARY_PATH", prefix.join("lib")),
    )?;
    print!("{out}");
    if !out
        .lines()
        .last()
        .unwrap_or("")
        .ends_with(" passed, 0 failed")
    {
        return Err("pkg-config client failed".into());
    }
    // The binary must resolve libtenure through the soname in the prefix.
    let needed = output(Command::new("readelf").arg("-d").arg(&bin))?;
    if !needed.contains(&format!(
        "[libtenure.so.{}]",
        header_abi(&prefix.join("include/tenure.h"))?.0
    )) {
        return Err("the pkg-config client does not link libtenure by its soname".into());
    }
    Ok(())
}

/// Everything `cargo xtask test` checks for the C ABI.
pub fn test() -> Result {
    abi_check(false)?;
    c_tests()?;
    dist_test()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_opaque_handle_of_the_header_is_suppressed() {
        let suppr =
            "[suppress_type]\n  name_regexp = ^tenure::([a-z_]+::)*tenure_(authority|lease)$\n";
        let header = "typedef struct tenure_authority tenure_authority;\n\
                      typedef struct tenure_lease tenure_lease;\n\
                      typedef struct tenure_fact { int x; } tenure_fact;\n";
        assert!(opaque_handles_suppressed(header, suppr).is_ok());
        let more = format!("{header}typedef struct tenure_claim_request tenure_claim_request;\n");
        let e = opaque_handles_suppressed(&more, suppr).unwrap_err();
        assert!(e.contains("claim_request"), "{e}");
        // The checked-in files agree.
        let read = |p: &str| fs::read_to_string(root().join(p)).unwrap();
        opaque_handles_suppressed(
            &read("include/tenure.h"),
            &read("abi-versions/opaque-handles.suppr"),
        )
        .unwrap();
    }

    fn vars() -> Vec<(&'static str, String)> {
        [
            ("TENURE_VERSION", "0.1.0"),
            ("TENURE_VERSION_MAJOR", "0"),
            ("TENURE_VERSION_MINOR", "1"),
            ("TENURE_ABI_MAJOR", "1"),
            ("TENURE_ABI_MINOR", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect()
    }

    #[test]
    fn configure_replaces_placeholders_and_keeps_other_at_signs() {
        let text = "v @TENURE_VERSION@ so.@TENURE_ABI_MAJOR@ mail a@b.c @ @@ x@TENURE_ABI_MINOR@";
        assert_eq!(
            configure(text, &vars()).unwrap(),
            "v 0.1.0 so.1 mail a@b.c @ @@ x0"
        );
    }

    #[test]
    fn configure_refuses_a_placeholder_without_a_value() {
        let err = configure("x @TENURE_NOPE@ y", &vars()).unwrap_err();
        assert!(err.contains("@TENURE_NOPE@"), "{err}");
    }

    #[test]
    fn the_cmake_templates_configure_completely() {
        for name in ["tenureConfig.cmake.in", "tenureConfigVersion.cmake.in"] {
            let text = fs::read_to_string(root().join("cmake").join(name)).unwrap();
            let out = configure(&text, &vars()).unwrap();
            assert!(!out.contains("@TENURE_"), "{name}: {out}");
        }
        let config = configure(
            &fs::read_to_string(root().join("cmake/tenureConfig.cmake.in")).unwrap(),
            &vars(),
        )
        .unwrap();
        assert!(config.contains("add_library(tenure::tenure SHARED IMPORTED)"));
        assert!(config.contains("IMPORTED_SONAME \"libtenure.so.1\""));
        assert!(config.contains("/lib/libtenure.so.1.0.0\""));
    }

    #[test]
    fn only_additions_accepts_added_functions_and_nothing_else() {
        let report = |f: &str, v: &str| {
            format!(
                "Functions changes summary: {f}\nVariables changes summary: {v}\n\n4 Added functions:\n"
            )
        };
        let none = "0 Removed, 0 Changed, 0 Added variable";
        only_additions(&report("0 Removed, 0 Changed, 4 Added functions", none)).unwrap();
        for (f, v, want) in [
            ("1 Removed, 0 Changed, 4 Added functions", none, "1 Removed"),
            (
                "0 Removed, 2 Changed (1 filtered out), 4 Added functions",
                none,
                "2 Changed",
            ),
            (
                "0 Removed, 0 Changed, 1 Added function",
                "0 Removed, 1 Changed, 0 Added variable",
                "Variables: 1 Changed",
            ),
        ] {
            let err = only_additions(&report(f, v)).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
        assert!(only_additions("garbage").is_err());
    }

    #[test]
    fn older_or_same_reads_tenure_versions_of_the_major() {
        assert!(older_or_same("TENURE_1.0", 0, 1));
        assert!(older_or_same("TENURE_1.0", 1, 1));
        assert!(!older_or_same("TENURE_1.1", 0, 1));
        assert!(!older_or_same("TENURE_2.0", 5, 1));
        assert!(!older_or_same("GLIBC_2.2.5", 5, 1));
    }

    #[test]
    fn package_version_reads_the_named_package() {
        let meta: serde_json::Value = serde_json::from_str(
            r#"{"packages":[{"name":"tenure","version":"9.9.9"},
                            {"name":"tenure-capi","version":"0.1.0"}],
                "target_directory":"/t"}"#,
        )
        .unwrap();
        assert_eq!(package_version(&meta, "tenure-capi").unwrap(), "0.1.0");
        assert_eq!(package_version(&meta, "tenure").unwrap(), "9.9.9");
        assert!(package_version(&meta, "absent").is_err());
    }
}
