//! Link options for the `consentd` binary.
//!
//! On GNU/Linux the binary's relative relocations are packed (`-z pack-relative-relocs`, DT_RELR):
//! a position-independent executable otherwise carries one 24-byte entry for each pointer the
//! loader must move (about 1.6 MiB here), and the loader reads every one of them at each start,
//! so they stay in the daemon's resident memory. Packed, they take a few KiB. The binary stays
//! position-independent (ASLR). GNU ld from 2.38 and lld from 15 know the option; glibc reads
//! DT_RELR from 2.36, and the linker only emits it when the glibc it links against does.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let gnu = std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|env| env == "gnu");
    if linux && gnu {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
