//! Puts memory.x where the linker finds it, and the model and bags the firmware embeds in
//! OUT_DIR: `data/`'s, or those of the directory `MIL_BOARD_DATA` names (`model.milm`,
//! `bags.bin`; tests/firmware.rs runs a MILES model this way). Rebuilds when they change.
use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    fs::copy("memory.x", out.join("memory.x")).expect("copy memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-env-changed=MIL_BOARD_DATA");
    let data = env::var_os("MIL_BOARD_DATA").map_or_else(|| PathBuf::from("data"), PathBuf::from);
    for file in ["model.milm", "bags.bin"] {
        let from = data.join(file);
        fs::copy(&from, out.join(file)).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        println!("cargo:rerun-if-changed={}", from.display());
    }
}
