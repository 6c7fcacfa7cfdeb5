//! The short name a kernel's series is labelled with: its demangled name without
//! return type, template arguments, parameters and enclosing namespaces
//! (`void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)` ->
//! `vectorized_elementwise_kernel`). One function, so the label can follow whatever
//! the report calls a kernel.

use crate::analysis::demangle;

/// The short name of the kernel whose (mangled or plain) name is `name`.
pub fn short_name(name: &str) -> String {
    if name.is_empty() {
        return "(unnamed)".to_string();
    }
    let full = demangle(name);
    // Template arguments and parameters, at any depth.
    let mut out = String::with_capacity(full.len());
    let mut depth = 0usize;
    for c in full.chars() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    // The return type ("void ") and enclosing scopes ("at::native::").
    let last = out.split_whitespace().last().unwrap_or("");
    let short = last.rsplit("::").next().unwrap_or(last);
    if short.is_empty() {
        full
    } else {
        short.to_string()
    }
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
            "vectorized_elementwise_kernel"
        );
        assert_eq!(short_name(""), "(unnamed)");
    }
}
