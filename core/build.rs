//! Sets `cfg(mil_dsp)` when the target has the Armv7E-M DSP extension (every
//! `thumbv7em-*` target, or any target built with `-C target-feature=+dsp`): the
//! fixed-point dot products then use `SMLALD` directly (`src/fixed.rs`). rustc does not
//! report `dsp` among a `thumbv7em` target's features, although LLVM enables it there.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(mil_dsp)");
    println!("cargo::rerun-if-env-changed=CARGO_CFG_TARGET_FEATURE");
    let target = std::env::var("TARGET").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let arm = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "arm");
    if arm && (target.starts_with("thumbv7em") || features.split(',').any(|f| f == "dsp")) {
        println!("cargo::rustc-cfg=mil_dsp");
    }
}
