//! Link settings for the cargo-built `libtenure.so`: soname `libtenure.so.1`
//! (the ABI major).
//!
//! Symbol versioning (only the `tenure_*` names of `tenure.map` exported,
//! each in the node `TENURE_1.<minor>` of the minor that added it) is
//! applied by `cargo xtask` when it links the distributed
//! `libtenure.so.1.<minor>.0` from `libtenure.a` with `tenure.map`: rustc passes its own anonymous version
//! script to every cdylib link, and a second script can neither be combined
//! with it (GNU ld: "anonymous version tag cannot be combined with other
//! version tags") nor override its assignments (lld keeps the first), so a
//! `--version-script` here would be silently ineffective or fail.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtenure.so.1");
    }
}
