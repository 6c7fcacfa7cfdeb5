//! Names cut to a column's width with a middle `…`, so that names which differ
//! never print the same.

/// `name` in at most `width` characters: whole when it fits, else its first `head`
/// characters, `…`, and its last `width - 1 - head`.
fn cut(name: &str, width: usize, head: usize) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= width {
        return name.to_string();
    }
    let tail = width.saturating_sub(1 + head);
    let mut s: String = chars[..head.min(chars.len())].iter().collect();
    s.push('…');
    s.extend(&chars[chars.len() - tail.min(chars.len())..]);
    s
}

/// Each of `names` in at most `width` characters (at least 4): cut in the middle,
/// two thirds of the room for the head (where a kernel's name is) and one third for
/// the tail. Where two different names would print the same, the cut is moved along
/// them until all differ; names that still collide (or are equal but stand for
/// different kernels: `names` are distinct rows) end in `…#N`, N from 1 in the order
/// given.
pub(super) fn fit_names(names: &[&str], width: usize) -> Vec<String> {
    let width = width.max(4);
    let default_head = (width - 1) - (width - 1) / 3;
    let mut out: Vec<String> = names.iter().map(|n| cut(n, width, default_head)).collect();
    // Each round settles one group; numbering can only collide with a name that
    // itself ends in `…#N`, so the rounds are bounded.
    for _ in 0..=2 * names.len() {
        let Some(group) = first_collision(&out) else {
            break;
        };
        // Another cut for the group that makes them differ from each other and from
        // every other row.
        let others: Vec<&String> = (0..out.len())
            .filter(|i| !group.contains(i))
            .map(|i| &out[i])
            .collect();
        let found = (0..width).rev().find_map(|head| {
            let cand: Vec<String> = group.iter().map(|&i| cut(names[i], width, head)).collect();
            let distinct = cand
                .iter()
                .enumerate()
                .all(|(a, x)| cand[a + 1..].iter().all(|y| y != x) && !others.contains(&x));
            distinct.then_some(cand)
        });
        match found {
            Some(cand) => {
                for (&i, c) in group.iter().zip(cand) {
                    out[i] = c;
                }
            }
            None => {
                for (n, &i) in group.iter().enumerate() {
                    let mark = format!("…#{}", n + 1);
                    let room = width.saturating_sub(mark.chars().count());
                    let head: String = names[i].chars().take(room).collect();
                    out[i] = format!("{head}{mark}");
                }
            }
        }
    }
    out
}

/// The indices of the first set of rows that print the same, if any.
fn first_collision(out: &[String]) -> Option<Vec<usize>> {
    for (i, a) in out.iter().enumerate() {
        let same: Vec<usize> = (i..out.len()).filter(|&j| &out[j] == a).collect();
        if same.len() > 1 {
            return Some(same);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_stay_whole_long_ones_are_cut_in_the_middle() {
        assert_eq!(fit_names(&["rmsnorm"], 10), ["rmsnorm"]);
        // 10 wide: 6 head, "…", 3 tail.
        assert_eq!(fit_names(&["attention_kernel<128>"], 10), ["attent…28>"]);
    }

    #[test]
    fn names_that_would_print_the_same_are_cut_elsewhere() {
        // Cut at 6 + 3 both are "gemm_k…ame"; a head of 9 reaches the difference.
        let names = ["gemm_kerA_long_tail_same", "gemm_kerB_long_tail_same"];
        assert_eq!(fit_names(&names, 10), ["gemm_kerA…", "gemm_kerB…"]);
        // A difference no cut of 10 reaches: numbered.
        let names = [
            "gemm_kernel_a_variant_x",
            "gemm_kernel_b_variant_x",
            "other",
        ];
        assert_eq!(fit_names(&names, 10), ["gemm_ke…#1", "gemm_ke…#2", "other"]);
    }

    #[test]
    fn equal_names_of_different_kernels_are_numbered() {
        let fit = fit_names(
            &["same_name_of_two_kernels", "same_name_of_two_kernels"],
            12,
        );
        assert_eq!(fit, ["same_name…#1", "same_name…#2"]);
    }
}
