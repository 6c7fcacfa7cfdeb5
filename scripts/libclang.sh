# Sourced by scripts/test.sh and scripts/regen-bindings.sh: whether the libclang
# bindgen loads is installed.
have_libclang() {
    ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || ldconfig -p | grep -q 'libclang[-.0-9]*\.so'
}
