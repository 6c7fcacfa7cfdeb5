//! The short name a kernel's series is labelled with: the report's short name
//! ([`crate::analysis::short_name::short_name`]) of its demangled name
//! (`void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)` ->
//! `vectorized_elementwise_kernel<…>`), so a series and a report row name a kernel
//! alike. Two instantiations of one template share the label (the report numbers
//! them; a label must not depend on which other kernels ran).

use crate::analysis::demangle;

/// The short name of the kernel whose (mangled or plain) name is `name`.
pub fn short_name(name: &str) -> String {
    if name.is_empty() {
        return "(unnamed)".to_string();
    }
    crate::analysis::short_name::short_name(&demangle(name))
}

#[cfg(test)]
mod tests {
    use super::short_name;

    #[test]
    fn folds_return_type_scopes_templates_and_parameters() {
        assert_eq!(short_name("_Z6matmulPfS_S_i"), "matmul");
        assert_eq!(short_name("rmsnorm_kernel"), "rmsnorm_kernel");
        assert_eq!(
            short_name("_ZN2at6native29vectorized_elementwise_kernelILi4EEEvi"),
            "vectorized_elementwise_kernel<…>"
        );
        assert_eq!(short_name(""), "(unnamed)");
    }
}
