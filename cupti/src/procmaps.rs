//! The files mapped into this process, from `/proc/self/maps`: how we see which CUDA
//! libraries the application has already loaded, and from where.

use std::path::PathBuf;

/// Paths of the files mapped into the current process, in first-seen order, deduplicated.
pub fn mapped_files() -> Vec<PathBuf> {
    match std::fs::read_to_string("/proc/self/maps") {
        Ok(text) => parse_maps(&text),
        Err(_) => Vec::new(),
    }
}

/// Parses the text of a `/proc/<pid>/maps` file into mapped file paths.
pub fn parse_maps(text: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for line in text.lines() {
        // address perms offset dev inode pathname; the path is everything after the
        // fifth field and may contain spaces.
        let mut rest = line;
        for _ in 0..5 {
            rest = rest.trim_start();
            match rest.find(char::is_whitespace) {
                Some(i) => rest = &rest[i..],
                None => {
                    rest = "";
                    break;
                }
            }
        }
        let path = rest.trim();
        if !path.starts_with('/') {
            continue;
        }
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        let p = PathBuf::from(path);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths_with_spaces_and_skips_anonymous() {
        let text = "\
7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/libc.so.6
7f01-7f02 r--p 00001000 08:01 123 /usr/lib/libc.so.6
7f02-7f03 rw-p 00000000 00:00 0
7f03-7f04 rw-p 00000000 00:00 0 [heap]
7f04-7f05 r-xp 00000000 08:01 9 /opt/my env/site-packages/nvidia/cu13/lib/libcupti.so.13
7f05-7f06 r-xp 00000000 08:01 9 /tmp/x.so (deleted)
";
        assert_eq!(
            parse_maps(text),
            vec![
                PathBuf::from("/usr/lib/libc.so.6"),
                PathBuf::from("/opt/my env/site-packages/nvidia/cu13/lib/libcupti.so.13"),
                PathBuf::from("/tmp/x.so"),
            ]
        );
    }
}
