//! Finding the CUPTI library to use, in the order of docs/ARCHITECTURE.md:
//! 1. a libcupti already loaded in the process (the application's own choice),
//! 2. `GPUPROF_CUPTI_LIB` (a file, or a directory holding libcupti.so*),
//! 3. the application's Python packages: `site-packages/nvidia/*/lib`,
//! 4. `CUDA_HOME` / `CUDA_PATH` (default `/usr/local/cuda`): `extras/CUPTI/lib64`, `lib64`,
//! 5. the dynamic loader's search path (`libcupti.so.13`, `.12`, `libcupti.so`).
//!
//! Within a step, the CUDA major of an already-loaded `libcudart` is preferred (a
//! PyTorch built for CUDA 12 wants CUPTI 12), else the newest.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use crate::candidate::{Candidate, Rejection, Source};
use crate::error::LoadError;
use crate::library::Cupti;

/// What discovery looks at. [`Inputs::from_process`] reads the real process; tests
/// build their own.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub gpuprof_cupti_lib: Option<OsString>,
    pub cuda_home: Option<OsString>,
    pub virtual_env: Option<OsString>,
    pub conda_prefix: Option<OsString>,
    pub exe: Option<PathBuf>,
    pub mapped: Vec<PathBuf>,
    /// Further site-packages directories to search (e.g. those a Python interpreter
    /// reports), after the ones derived from the above.
    pub site_packages: Vec<PathBuf>,
}

impl Inputs {
    pub fn from_process() -> Inputs {
        Inputs {
            gpuprof_cupti_lib: std::env::var_os("GPUPROF_CUPTI_LIB").filter(|v| !v.is_empty()),
            cuda_home: std::env::var_os("CUDA_HOME")
                .or_else(|| std::env::var_os("CUDA_PATH"))
                .filter(|v| !v.is_empty()),
            virtual_env: std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()),
            conda_prefix: std::env::var_os("CONDA_PREFIX").filter(|v| !v.is_empty()),
            exe: std::env::current_exe().ok(),
            mapped: crate::procmaps::mapped_files(),
            site_packages: Vec::new(),
        }
    }
}

/// Finds and loads the CUPTI to use. `driver_version` as in [`Cupti::open`].
///
/// An explicit choice is honoured or reported, never replaced: a `GPUPROF_CUPTI_LIB`
/// file that cannot be used, or a directory without a usable libcupti (none at all
/// included), is [`LoadError::Explicit`]; only a library already loaded in the
/// process comes before it.
pub fn discover(
    inputs: &Inputs,
    driver_version: Option<i32>,
) -> Result<(Candidate, Cupti), LoadError> {
    let explicit_dir = inputs
        .gpuprof_cupti_lib
        .as_deref()
        .map(Path::new)
        .filter(|p| p.is_dir());
    let mut rejected = Vec::new();
    for c in candidates(inputs) {
        if let Some(dir) = explicit_dir.filter(|_| c.source.after_explicit()) {
            return Err(explicit_dir_error(dir, &rejected));
        }
        match Cupti::open(&c.path, driver_version) {
            Ok(cupti) => return Ok((c, cupti)),
            Err(reason) => {
                if c.source == Source::EnvVar && explicit_dir.is_none() {
                    return Err(LoadError::Explicit {
                        path: PathBuf::from(&c.path),
                        reason,
                    });
                }
                rejected.push(Rejection {
                    path: c.path.to_string_lossy().into_owned(),
                    source: c.source,
                    reason,
                });
            }
        }
    }
    match explicit_dir {
        Some(dir) => Err(explicit_dir_error(dir, &rejected)),
        None => Err(LoadError::NotFound(rejected)),
    }
}

/// `GPUPROF_CUPTI_LIB` names `dir` and nothing in it could be used; `rejected`: every
/// library tried so far (the directory's, and any already loaded).
fn explicit_dir_error(dir: &Path, rejected: &[Rejection]) -> LoadError {
    let reason = if !rejected.is_empty() {
        let tried: Vec<String> = rejected
            .iter()
            .map(|r| format!("{}: {}", r.path, r.reason))
            .collect();
        format!(
            "no libcupti in the directory can be used ({})",
            tried.join("; ")
        )
    } else {
        "the directory holds no libcupti.so* file".to_string()
    };
    LoadError::Explicit {
        path: dir.to_path_buf(),
        reason,
    }
}

/// The candidates, in order, deduplicated by resolved file.
pub fn candidates(inputs: &Inputs) -> Vec<Candidate> {
    let prefer = preferred_major(&inputs.mapped);
    let mut out: Vec<Candidate> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut push = |path: PathBuf, source: Source, out: &mut Vec<Candidate>| {
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !seen.contains(&key) {
            seen.push(key);
            out.push(Candidate {
                path: path.into_os_string(),
                source,
            });
        }
    };

    for m in &inputs.mapped {
        if is_cupti_name(m) {
            push(m.clone(), Source::AlreadyLoaded, &mut out);
        }
    }
    if let Some(v) = &inputs.gpuprof_cupti_lib {
        let p = PathBuf::from(v);
        if p.is_dir() {
            for f in cupti_files_in(&p, prefer) {
                push(f, Source::EnvVar, &mut out);
            }
        } else {
            push(p, Source::EnvVar, &mut out);
        }
    }
    for site in site_packages(inputs) {
        let nv = site.join("nvidia");
        let mut libs: Vec<PathBuf> = read_dir_sorted(&nv)
            .into_iter()
            .flat_map(|pkg| cupti_files_in(&pkg.join("lib"), prefer))
            .collect();
        sort_by_preference(&mut libs, prefer);
        for f in libs {
            push(f, Source::PythonPackage, &mut out);
        }
    }
    let home = inputs
        .cuda_home
        .clone()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/local/cuda"));
    for sub in [
        "extras/CUPTI/lib64",
        "lib64",
        "targets/x86_64-linux/lib",
        "targets/sbsa-linux/lib",
    ] {
        for f in cupti_files_in(&home.join(sub), prefer) {
            push(f, Source::CudaHome, &mut out);
        }
    }
    let mut sonames = vec!["libcupti.so.13", "libcupti.so.12"];
    if prefer == Some(12) {
        sonames.reverse();
    }
    sonames.push("libcupti.so");
    for s in sonames {
        // Bare names: the loader resolves them; not deduplicated against paths.
        out.push(Candidate {
            path: s.into(),
            source: Source::LoaderPath,
        });
    }
    out
}

fn is_cupti_name(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("libcupti.so"))
}

/// `major` of `libcupti.so.<major>[...]`, if the name carries one.
fn soname_major(p: &Path) -> Option<u32> {
    let n = p.file_name()?.to_str()?;
    n.strip_prefix("libcupti.so.")?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// The CUDA major of a libcudart the application has loaded.
fn preferred_major(mapped: &[PathBuf]) -> Option<u32> {
    mapped.iter().find_map(|m| {
        let n = m.file_name()?.to_str()?;
        n.strip_prefix("libcudart.so.")?
            .split('.')
            .next()?
            .parse()
            .ok()
    })
}

/// libcupti.so* files in `dir`, best first.
fn cupti_files_in(dir: &Path, prefer: Option<u32>) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = read_dir_sorted(dir)
        .into_iter()
        .filter(|p| is_cupti_name(p))
        .collect();
    sort_by_preference(&mut v, prefer);
    v
}

/// Preferred major first, then newer majors first; within a major the shortest name
/// (the soname `libcupti.so.13` before `libcupti.so.2025.3.1`).
fn sort_by_preference(v: &mut [PathBuf], prefer: Option<u32>) {
    v.sort_by_key(|p| {
        let major = soname_major(p).unwrap_or(0);
        let major = if major > 100 { 0 } else { major };
        (
            Some(major) != prefer,
            std::cmp::Reverse(major),
            p.as_os_str().len(),
            p.clone(),
        )
    });
}

fn read_dir_sorted(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => return Vec::new(),
    };
    v.sort();
    v
}

/// Python site-packages directories the application uses: those its loaded
/// libraries live in, the active virtualenv / conda env, and the interpreter's own.
fn site_packages(inputs: &Inputs) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        if p.is_dir() && !out.contains(&p) {
            out.push(p);
        }
    };
    for m in &inputs.mapped {
        let mut acc = PathBuf::new();
        for comp in m.components() {
            acc.push(comp);
            let c = comp.as_os_str();
            if c == "site-packages" || c == "dist-packages" {
                add(acc.clone());
                break;
            }
        }
    }
    let mut prefixes: Vec<PathBuf> = Vec::new();
    prefixes.extend(inputs.virtual_env.iter().map(PathBuf::from));
    prefixes.extend(inputs.conda_prefix.iter().map(PathBuf::from));
    if let Some(exe) = &inputs.exe {
        let is_python = exe
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("python"));
        if let (true, Some(prefix)) = (is_python, exe.parent().and_then(Path::parent)) {
            prefixes.push(prefix.to_path_buf());
        }
    }
    for prefix in prefixes {
        for d in read_dir_sorted(&prefix.join("lib")) {
            if d.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python"))
            {
                add(d.join("site-packages"));
            }
        }
    }
    for d in &inputs.site_packages {
        add(d.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"").unwrap();
    }

    fn names(c: &[Candidate]) -> Vec<(String, Source)> {
        c.iter()
            .map(|c| (c.path.to_string_lossy().into_owned(), c.source))
            .collect()
    }

    #[test]
    fn order_follows_the_documented_steps() {
        let tmp = std::env::temp_dir().join(format!("gpuprof-disc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let site = tmp.join("venv/lib/python3.11/site-packages");
        let cu12 = site.join("nvidia/cuda_cupti/lib/libcupti.so.12");
        let cu13 = site.join("nvidia/cu13/lib/libcupti.so.13");
        let loaded = tmp.join("app/libcupti.so.13");
        let env = tmp.join("explicit/libcupti.so.13");
        let home = tmp.join("cuda");
        let home_lib = home.join("extras/CUPTI/lib64/libcupti.so.13");
        for p in [&cu12, &cu13, &loaded, &env, &home_lib] {
            touch(p);
        }
        let cudart = site.join("nvidia/cuda_runtime/lib/libcudart.so.12");
        let inputs = Inputs {
            gpuprof_cupti_lib: Some(env.clone().into()),
            cuda_home: Some(home.into()),
            virtual_env: None,
            conda_prefix: None,
            exe: None,
            site_packages: Vec::new(),
            mapped: vec![PathBuf::from("/usr/lib/libc.so.6"), cudart, loaded.clone()],
        };
        let s = |p: &Path| p.to_string_lossy().into_owned();
        assert_eq!(
            names(&candidates(&inputs)),
            vec![
                (s(&loaded), Source::AlreadyLoaded),
                (s(&env), Source::EnvVar),
                // libcudart.so.12 is loaded: CUPTI 12 first.
                (s(&cu12), Source::PythonPackage),
                (s(&cu13), Source::PythonPackage),
                (s(&home_lib), Source::CudaHome),
                ("libcupti.so.12".into(), Source::LoaderPath),
                ("libcupti.so.13".into(), Source::LoaderPath),
                ("libcupti.so".into(), Source::LoaderPath),
            ]
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn newest_major_first_without_a_runtime_hint() {
        let mut v = vec![
            PathBuf::from("/x/libcupti.so.12"),
            PathBuf::from("/x/libcupti.so.2025.3.0"),
            PathBuf::from("/x/libcupti.so.13"),
            PathBuf::from("/x/libcupti.so"),
        ];
        sort_by_preference(&mut v, None);
        assert_eq!(
            v,
            vec![
                PathBuf::from("/x/libcupti.so.13"),
                PathBuf::from("/x/libcupti.so.12"),
                PathBuf::from("/x/libcupti.so"),
                PathBuf::from("/x/libcupti.so.2025.3.0"),
            ]
        );
    }

    #[test]
    fn explicit_path_that_fails_is_an_error_not_a_fallback() {
        let inputs = Inputs {
            gpuprof_cupti_lib: Some("/nonexistent/libcupti.so.13".into()),
            ..Inputs::default()
        };
        match discover(&inputs, None) {
            Err(LoadError::Explicit { path, reason }) => {
                assert_eq!(path, PathBuf::from("/nonexistent/libcupti.so.13"));
                assert!(reason.starts_with("cannot load:"), "{reason}");
            }
            other => panic!("expected an explicit-path error, got {other:?}"),
        }
    }

    #[test]
    fn an_explicit_directory_without_cupti_is_an_error_not_a_fallback() {
        let tmp = std::env::temp_dir().join(format!("gpuprof-disc-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(tmp.join("libcudart.so.12"), b"").unwrap();
        let inputs = Inputs {
            gpuprof_cupti_lib: Some(tmp.clone().into()),
            ..Inputs::default()
        };
        match discover(&inputs, None) {
            Err(e @ LoadError::Explicit { .. }) => assert_eq!(
                e.to_string(),
                format!(
                    "GPUPROF_CUPTI_LIB={}: the directory holds no libcupti.so* file",
                    tmp.display()
                )
            ),
            other => panic!("expected an explicit-path error, got {other:?}"),
        }
        // A truncated library there is refused before it is loaded, and nothing
        // else is tried.
        std::fs::write(tmp.join("libcupti.so.13"), b"\x7fELF").unwrap();
        match discover(&inputs, None) {
            Err(e @ LoadError::Explicit { .. }) => assert_eq!(
                e.to_string(),
                format!(
                    "GPUPROF_CUPTI_LIB={d}: no libcupti in the directory can be used \
                     ({d}/libcupti.so.13: not loaded: a file of 4 bytes is too short for an \
                     ELF header (64 bytes))",
                    d = tmp.display()
                )
            ),
            other => panic!("expected an explicit-path error, got {other:?}"),
        }
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
