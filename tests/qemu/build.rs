//! Puts memory.x where the linker finds it and rebuilds when the embedded data change.
use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    fs::copy("memory.x", out.join("memory.x")).expect("copy memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-env-changed=MIL_FIRMWARE_DATA");
    if let Some(dir) = env::var_os("MIL_FIRMWARE_DATA") {
        let dir = PathBuf::from(dir);
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("model.milm").display()
        );
        println!("cargo:rerun-if-changed={}", dir.join("bags.bin").display());
    }
}
