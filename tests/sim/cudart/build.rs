//! Gives the simulated runtime the real runtime's soname, so `dlopen("libcudart.so.12")`
//! and lookups of a loaded `libcudart.so.12` find it.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcudart.so.12");
}
