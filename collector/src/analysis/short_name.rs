//! Kernel names short enough to read: the demangled C++ name with its return type,
//! namespaces, template arguments and parameter list folded, as profilers' "base
//! names" do.
//!
//! `void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>,
//! at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, ...)` becomes
//! `vectorized_elementwise_kernel<…>`. A name that is not C++ (`sm90_xmma_gemm_...`,
//! a C kernel) is kept whole; tables that have less room cut it with
//! [`fit_names`], which keeps distinct kernels distinct.

/// The short name of a demangled kernel name.
pub fn short_name(demangled: &str) -> String {
    let s = demangled.trim();
    // The parameter list: the last top-level '(' ... ')' group that ends the name.
    let head = match top_level_params(s) {
        Some(open) => &s[..open],
        None => s,
    };
    // The return type and specifiers: everything before the last top-level space.
    let head = head.trim_end();
    let name = match last_top_level(head, |c| c == ' ') {
        Some(i) => &head[i + 1..],
        None => head,
    };
    // Namespaces and enclosing classes: everything up to the last top-level "::".
    let name = match last_top_level_scope(name) {
        Some(i) => &name[i + 2..],
        None => name,
    };
    let folded = fold_templates(name);
    if folded.is_empty() {
        demangled.to_string()
    } else {
        folded
    }
}

/// Depth of `<`, `(` and `[` nesting before each char; `operator<` and friends are
/// rare in kernel names and only make the result longer, never wrong.
fn depths(s: &str) -> Vec<(usize, char, i32)> {
    let mut depth = 0i32;
    let mut out = Vec::with_capacity(s.len());
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' | '[' => {
                out.push((i, c, depth));
                depth += 1;
            }
            '>' | ')' | ']' => {
                depth -= 1;
                out.push((i, c, depth));
            }
            _ => out.push((i, c, depth)),
        }
    }
    out
}

/// The byte offset of the '(' opening the parameter list, when the name ends with one.
fn top_level_params(s: &str) -> Option<usize> {
    if !s.ends_with(')') {
        return None;
    }
    let d = depths(s);
    d.iter()
        .rev()
        .find(|&&(_, c, depth)| c == '(' && depth == 0)
        .map(|&(i, _, _)| i)
        .filter(|&i| i > 0)
}

fn last_top_level(s: &str, pred: impl Fn(char) -> bool) -> Option<usize> {
    depths(s)
        .iter()
        .rev()
        .find(|&&(_, c, depth)| depth == 0 && pred(c))
        .map(|&(i, _, _)| i)
}

fn last_top_level_scope(s: &str) -> Option<usize> {
    let d = depths(s);
    d.windows(2)
        .rev()
        .find(|w| w[0].2 == 0 && w[1].2 == 0 && w[0].1 == ':' && w[1].1 == ':')
        .map(|w| w[0].0)
        .filter(|&i| i + 2 < s.len())
}

/// `name<a, b<c>>` -> `name<…>`; what is outside the template argument lists is kept.
fn fold_templates(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '<' => {
                if depth == 0 {
                    out.push_str("<…>");
                }
                depth += 1;
            }
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Cuts each name to at most `width` characters, keeping its head and tail around a
/// "…", and keeps distinct names distinct: names that would print the same also show
/// the stretch where they first differ (`head…differ…tail`), and if that is not
/// enough keep more of their head until they differ (or are whole). The result is in
/// the order of `names`. A width under 8 is taken as 8.
pub fn fit_names(names: &[&str], width: usize) -> Vec<String> {
    let width = width.max(8);
    let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    let mut out: Vec<String> = chars.iter().map(|n| cut(n, width)).collect();
    let clashes = |out: &[String]| -> Vec<usize> {
        let mut seen: std::collections::HashMap<&str, usize> = Default::default();
        for s in out {
            *seen.entry(s.as_str()).or_default() += 1;
        }
        (0..out.len())
            .filter(|&i| seen[out[i].as_str()] > 1 && out[i] != names[i])
            .collect()
    };
    let first = clashes(&out);
    let before = out.clone();
    for &i in &first {
        // Where this name first differs from the closest of the names it clashes with.
        let differ = first
            .iter()
            .filter(|&&j| j != i && before[j] == before[i])
            .map(|&j| {
                chars[i]
                    .iter()
                    .zip(&chars[j])
                    .take_while(|(a, b)| a == b)
                    .count()
            })
            .max()
            .unwrap_or(0);
        out[i] = cut_around(&chars[i], width, differ);
    }
    // Names that still print alike are numbered in their order ("…cublas#1",
    // "…cublas#2"), within the width.
    let clashing = clashes(&out);
    let mut numbered: std::collections::HashMap<String, usize> = Default::default();
    for &i in &clashing {
        let n = numbered.entry(out[i].clone()).or_default();
        *n += 1;
        let suffix = format!("#{n}");
        out[i] = cut(&chars[i], width - suffix.len()) + &suffix;
    }
    out
}

/// `name` cut to `width` characters: head, "…", and a tail of a third.
fn cut(name: &[char], width: usize) -> String {
    if name.len() <= width {
        return name.iter().collect();
    }
    let tail = width / 3;
    let head = width - 1 - tail;
    let mut s: String = name[..head].iter().collect();
    s.push('…');
    s.extend(&name[name.len() - tail..]);
    s
}

/// `name` cut to `width` characters as head, "…", a window holding char `at`, "…",
/// tail; as [`cut`] when `at` is in the head or the tail.
fn cut_around(name: &[char], width: usize, at: usize) -> String {
    if name.len() <= width {
        return name.iter().collect();
    }
    let tail = width / 4;
    let window = width / 3;
    let head = width.saturating_sub(tail + window + 2);
    if at < head || at >= name.len() - tail || head == 0 {
        return cut(name, width);
    }
    // The window starts a few characters before the difference, inside the middle.
    let start = at
        .saturating_sub(window / 3)
        .max(head)
        .min(name.len() - tail - window);
    let mut s: String = name[..head].iter().collect();
    if start > head {
        s.push('…');
    }
    s.extend(&name[start..start + window]);
    if start + window < name.len() - tail {
        s.push('…');
    }
    s.extend(&name[name.len() - tail..]);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_return_type_namespaces_templates_and_parameters() {
        assert_eq!(
            short_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, \
                 at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, \
                 at::detail::Array<char*, 3>)"
            ),
            "vectorized_elementwise_kernel<…>"
        );
        assert_eq!(
            short_name(
                "void gemv2N_kernel<int, int, __nv_bfloat16, float, 128, 1, 2, 2, 11, false, \
                 cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const> > >\
                 (cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const> >)"
            ),
            "gemv2N_kernel<…>"
        );
        assert_eq!(
            short_name("void flash::flash_fwd_kernel<Flash_fwd_traits>(Flash_fwd_params)"),
            "flash_fwd_kernel<…>"
        );
        assert_eq!(short_name("rms_norm_kernel"), "rms_norm_kernel");
        assert_eq!(short_name("add(float*, float const*)"), "add");
        assert_eq!(short_name("ns::(anonymous namespace)::k(int)"), "k");
        assert_eq!(short_name(""), "");
        assert_eq!(short_name("::"), "::");
    }

    #[test]
    fn fit_keeps_distinct_names_distinct() {
        let nn = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_cgasize1x1x1_kernel";
        let tn = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cgasize1x1x1_kernel";
        let got = fit_names(&[nn, tn, "rms_norm_kernel"], 30);
        assert_eq!(got[2], "rms_norm_kernel");
        assert_eq!(got[0], "sm90_xmma_g…32_nn_n_ti…_kernel");
        assert_eq!(got[1], "sm90_xmma_g…32_tn_n_ti…_kernel");
        let plain = fit_names(&[nn], 30);
        assert_eq!(plain[0].chars().count(), 30);
        assert_eq!(plain[0], "sm90_xmma_gemm_bf16…1x1_kernel");
        // Names that differ only inside the tail's reach, or not at all once cut.
        let a = "abcdefghijklmnopqrstuvwxyz_one_1";
        let b = "abcdefghijklmnopqrstuvwxyz_one_2";
        let got = fit_names(&[a, b], 10);
        assert_ne!(got[0], got[1]);
        // Twelve names alike but for one character in the middle, in 16 columns: each
        // within the width, all distinct.
        let many: Vec<String> = (0..12)
            .map(|i| format!("sm90_xmma_gemm_bf16_tilesize128x{i}x64_warpgroupsize1x1x1_5x_cublas"))
            .collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let got = fit_names(&refs, 16);
        assert!(got.iter().all(|g| g.chars().count() <= 16), "{got:?}");
        let distinct: std::collections::BTreeSet<&String> = got.iter().collect();
        assert_eq!(distinct.len(), 12, "{got:?}");
    }
}
