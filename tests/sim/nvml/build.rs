//! Gives the simulated library the real one's soname, so `dlopen("libnvidia-ml.so.1")`
//! finds it.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnvidia-ml.so.1");
}
