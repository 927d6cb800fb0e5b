//! Sets `checkfu_jsts` when `JSTS_DIR` names the JSON-Schema-Test-Suite, so that the suite's
//! test is reported as ignored, with its reason, on a machine without it (never as passed).

fn main() {
    println!("cargo:rerun-if-env-changed=JSTS_DIR");
    println!("cargo:rustc-check-cfg=cfg(checkfu_jsts)");
    if std::env::var_os("JSTS_DIR").is_some() {
        println!("cargo:rustc-cfg=checkfu_jsts");
    }
}
