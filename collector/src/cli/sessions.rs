//! What every command that reads sessions shares (`report`, `trace`, `roofline`,
//! `pprof`, and the report `record` prints): the session arguments expanded, reading
//! with progress, the peaks file, the warnings about damage and the exit status.
//!
//! A damaged session is never a reason to show nothing: every part and file that
//! verifies is read, the output states what was skipped (files, records, bytes), a
//! warning on stderr names each damaged file, and the command exits with
//! [`EXIT_INCOMPLETE`] after writing its output. A session that cannot be read at all
//! (not a session, the old format, a newer version) is an error, exit status 2.

use crate::analysis::roles::ModelConfig;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::analysis::roofline::peaks::{parse_overrides, Overrides};
use crate::analysis::Integrity;

pub use crate::analysis::session::{analyse, analyse_sessions, Analysed};

/// Exit status of `report`, `trace` and `roofline` when the output was written but the
/// session is damaged or has a part never sealed: what was written leaves that out.
pub const EXIT_INCOMPLETE: u8 = 3;

/// Damaged regions named one by one on stderr; the rest are counted.
const WARN_REGIONS: usize = 10;

/// The environment variable naming the default peaks file.
pub const PEAKS_ENV: &str = "GPUPROF_PEAKS";

/// The model config `--model` names, read; none without. An unreadable or invalid
/// file is an error naming it and what is wrong.
pub fn load_model(path: Option<&Path>) -> Result<Option<ModelConfig>> {
    path.map(ModelConfig::read)
        .transpose()
        .map_err(anyhow::Error::msg)
}

/// The peaks file `explicit` (`--peaks`), else `$GPUPROF_PEAKS`, parsed; no overrides
/// when neither is given. An unreadable or invalid file is an error naming it.
pub fn load_peaks(explicit: Option<&Path>) -> Result<Overrides> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => match std::env::var_os(PEAKS_ENV) {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => return Ok(Overrides::default()),
        },
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read peaks file {}", path.display()))?;
    Ok(parse_overrides(&text, &path.display().to_string())?)
}

/// Warns on stderr about each part of the session the output leaves out.
pub fn warn_damage(read: &Analysed, what: &str) {
    warn_damage_of(&read.dir, &read.integrity, what);
}

/// [`warn_damage`] for the session in `dir` read with `integrity`.
pub fn warn_damage_of(dir: &Path, integrity: &Integrity, what: &str) {
    let p = dir.display();
    let damaged = &integrity.damaged;
    for d in damaged.iter().take(WARN_REGIONS) {
        eprintln!(
            "gpuprof: warning: {p}: {} is damaged ({}); its {} left out of the {what}",
            d.file,
            d.reason,
            d.records
                .map_or("records (how many: unknown) are".to_string(), |r| {
                    format!("{r} records are")
                })
        );
    }
    if damaged.len() > WARN_REGIONS {
        eprintln!(
            "gpuprof: warning: {p}: {} more damaged files skipped",
            damaged.len() - WARN_REGIONS
        );
    }
    for u in &integrity.unsealed {
        eprintln!(
            "gpuprof: warning: {p}: {} was never sealed (the collector stopped while writing it); its records are not in the {what}",
            u.dir
        );
    }
}

/// Warns on stderr about the records left out of the output because their values
/// cannot be true (the report lists them in its own output; the other outputs have
/// no place for them).
pub fn warn_impossible(read: &Analysed, what: &str) {
    warn_impossible_of(&read.dir, &read.integrity, what);
}

/// [`warn_impossible`] for the session in `dir` read with `integrity`.
pub fn warn_impossible_of(dir: &Path, integrity: &Integrity, what: &str) {
    if integrity.impossible.is_empty() {
        return;
    }
    let total: u64 = integrity.impossible.iter().map(|i| i.records).sum();
    let each: Vec<String> = integrity
        .impossible
        .iter()
        .map(|i| format!("{} {}: {}", i.records, i.kind, i.reason))
        .collect();
    eprintln!(
        "gpuprof: warning: {}: {total} record{} whose values cannot be true left out of the {what} ({}; `gpuprof report` lists them)",
        dir.display(),
        if total == 1 { "" } else { "s" },
        each.join("; ")
    );
}

/// After the output was written: says what it leaves out and gives the exit status,
/// [`EXIT_INCOMPLETE`] when the session is damaged, a part was never sealed, or the
/// collector lost records it could not count.
pub fn finish(read: &Analysed, what: &str) -> ExitCode {
    finish_of(&read.dir, &read.integrity, read.parts, what)
}

/// [`finish`] for the session in `dir` of `parts` sealed parts, read with `integrity`.
pub fn finish_of(dir: &Path, i: &Integrity, parts: usize, what: &str) -> ExitCode {
    if !i.damaged.is_empty() {
        eprintln!(
            "gpuprof: error: {}: {} damaged file{} ({}, {} bytes) skipped; the {what} covers the rest of the {} part{}",
            dir.display(),
            i.damaged.len(),
            if i.damaged.len() == 1 { "" } else { "s" },
            i.damaged_records_text(),
            i.damaged_bytes(),
            parts,
            if parts == 1 { "" } else { "s" }
        );
    }
    if !i.unsealed.is_empty() {
        eprintln!(
            "gpuprof: error: {}: {} part{} never sealed; the {what} covers the {} sealed part{}",
            dir.display(),
            i.unsealed.len(),
            if i.unsealed.len() == 1 {
                " was"
            } else {
                "s were"
            },
            parts,
            if parts == 1 { "" } else { "s" }
        );
    }
    for lost in &i.lost {
        eprintln!(
            "gpuprof: error: {}: records lost, uncounted: {lost}; the {what} covers what was saved",
            dir.display()
        );
    }
    if i.file_complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_INCOMPLETE)
    }
}

/// The sessions `args` name: each as given when it exists, else, when it has a
/// pattern character (`*`, `?`, `[`), every directory it matches, in name order; the
/// same directory named twice is read once. A pattern matching nothing, or a bad
/// pattern, is an error naming it.
pub fn expand_sessions(args: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for arg in args {
        let text = arg.to_string_lossy();
        let found: Vec<PathBuf> = if arg.exists() || !text.contains(['*', '?', '[']) {
            vec![arg.clone()]
        } else {
            let paths =
                glob::glob(&text).with_context(|| format!("bad session pattern {text:?}"))?;
            let mut v: Vec<PathBuf> = paths
                .filter_map(|p| p.ok())
                .filter(|p| p.is_dir())
                .collect();
            v.sort();
            if v.is_empty() {
                anyhow::bail!("no session directory matches {text:?}");
            }
            v
        };
        for p in found {
            let key = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
            if seen.insert(key) {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// [`analyse`]s sessions, showing the parts read on stderr when it is a terminal and
/// there are more than a few parts.
pub fn analyse_with_progress(sessions: &[PathBuf]) -> Result<Analysed> {
    progress_of(sessions, |s, p| analyse_sessions(s, p))
}

/// [`analyse_with_progress`] through `analyse` (`analyse_sessions` or
/// `crate::analysis::session::analyse_stacks`).
pub fn progress_of(
    sessions: &[PathBuf],
    analyse: impl FnOnce(&[PathBuf], &mut dyn FnMut(usize, usize)) -> Result<Analysed>,
) -> Result<Analysed> {
    use std::io::IsTerminal;
    let tty = std::io::stderr().is_terminal();
    let mut shown = false;
    let name = match sessions {
        [one] => one.display().to_string(),
        _ => format!("{} sessions", sessions.len()),
    };
    let analysed = analyse(sessions, &mut |done, all| {
        if tty && all > 8 {
            eprint!("\rgpuprof: reading {name}: part {done} of {all}");
            shown = true;
        }
    })?;
    if shown {
        eprintln!();
    }
    Ok(analysed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_file_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("gpuprof-peaks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.toml");
        std::fs::write(&good, "[[gpu]]\nname = \"NVIDIA L4\"\nfp8 = 200\n").unwrap();
        let o = load_peaks(Some(&good)).unwrap();
        assert_eq!(o.entries.len(), 1);
        assert_eq!(o.file, good.display().to_string());

        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "[[gpu]]\nname = \"NVIDIA L4\"\nfp9 = 200\n").unwrap();
        let e = format!("{:#}", load_peaks(Some(&bad)).unwrap_err());
        assert!(
            e.starts_with(&format!(
                "peaks file {}, line 3, [[gpu]] entry 1 (\"NVIDIA L4\"), key `fp9`: unknown key",
                bad.display()
            )),
            "{e}"
        );

        let none = dir.join("none.toml");
        let e = format!("{:#}", load_peaks(Some(&none)).unwrap_err());
        assert!(
            e.starts_with(&format!("cannot read peaks file {}: ", none.display())),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
