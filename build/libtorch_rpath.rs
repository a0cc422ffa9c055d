//! Build script shared by every package that links libtorch into a binary, test or example.
//!
//! `torch-sys` reports where libtorch's shared libraries live (`cargo:libtorch_lib=...`, seen here as
//! `DEP_TCH_LIBTORCH_LIB`). Embedding that directory as a run path lets `cargo run`, `cargo test` and the
//! built programs find libtorch without `LD_LIBRARY_PATH`.

fn main() {
    println!("cargo::rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(dir) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo::rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
