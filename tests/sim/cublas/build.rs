//! Gives the simulated cuBLAS the soname of the version it impersonates (12.9).

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcublas.so.12");
}
