//! Gives the simulated driver the real driver's soname, so `dlopen("libcuda.so.1")`
//! and lookups of a loaded `libcuda.so.1` find it.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
}
