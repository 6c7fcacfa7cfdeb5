//! `gpuprof record -o NAME`: the session directory's name with `%` sequences expanded,
//! as Nsight Systems expands its output names: `%p` the program's pid, `%h` the
//! host name, `%q{VAR}` the value of environment variable VAR, `%%` a `%`. Anything
//! else after a `%` is an error, and so is a `%q{VAR}` whose VAR is not set: a name
//! that silently lost a part would put two runs in one place. A host name or
//! variable's value stays within one path component: each `/` becomes `_`, and a
//! value that is `.` or `..` becomes `_` or `__` (`VAR=../escape` must not write
//! outside the parent the name gives).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

/// What `%` sequences expand to.
pub struct Values<'a> {
    /// The program's pid; `None` expands `%p` to `pending-<gpuprof's pid>` (the
    /// program's is not known before it starts).
    pub pid: Option<u32>,
    pub host: &'a str,
    pub env: &'a dyn Fn(&str) -> Option<OsString>,
}

/// Whether `name` holds a `%p` (the program's pid).
pub fn has_pid(name: &OsStr) -> bool {
    let b = name.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'%' {
            if b[i + 1] == b'p' {
                return true;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    false
}

/// `name` with its `%` sequences expanded (see the module documentation).
pub fn expand(name: &OsStr, v: &Values) -> Result<PathBuf> {
    let shown = Path::new(name).display().to_string();
    let b = name.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'%') => out.push(b'%'),
            Some(b'p') => match v.pid {
                Some(pid) => out.extend_from_slice(pid.to_string().as_bytes()),
                None => out.extend_from_slice(format!("pending-{}", std::process::id()).as_bytes()),
            },
            Some(b'h') => out.extend_from_slice(&component(v.host.as_bytes())),
            Some(b'q') => {
                let rest = &b[i + 2..];
                let close = rest.iter().position(|&c| c == b'}');
                let (Some(b'{'), Some(close)) = (rest.first(), close) else {
                    bail!("output name {shown:?}: %q must be followed by {{VARIABLE}}, as in %q{{SLURM_PROCID}}");
                };
                let var = String::from_utf8_lossy(&rest[1..close]).into_owned();
                if var.is_empty() {
                    bail!("output name {shown:?}: %q{{}} names no variable");
                }
                match (v.env)(&var) {
                    Some(value) => out.extend_from_slice(&component(value.as_bytes())),
                    None => bail!(
                        "output name {shown:?}: %q{{{var}}} names the environment variable {var}, which is not set"
                    ),
                }
                i += 2 + close + 1;
                continue;
            }
            Some(&c) => bail!(
                "output name {shown:?}: unknown sequence %{}: use %p (the program's pid), %h (the host name), %q{{VAR}} (environment variable VAR) or %% (a %)",
                char::from(c)
            ),
            None => bail!("output name {shown:?} ends with a lone %: write %% for a %"),
        }
        i += 2;
    }
    Ok(PathBuf::from(OsString::from_vec(out)))
}

/// `value` as part of one path component (see the module documentation).
fn component(value: &[u8]) -> Vec<u8> {
    if value == b"." || value == b".." {
        return vec![b'_'; value.len()];
    }
    value
        .iter()
        .map(|&c| if c == b'/' { b'_' } else { c })
        .collect()
}

/// The host name, as `%h` expands it.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutions_stay_in_one_path_component() {
        let env = |var: &str| -> Option<OsString> {
            match var {
                "UP" => Some("..".into()),
                "ESC" => Some("../escape".into()),
                "DOT" => Some(".".into()),
                _ => None,
            }
        };
        let v = Values {
            pid: Some(7),
            host: "a/b",
            env: &env,
        };
        let got = |name: &str| expand(OsStr::new(name), &v).unwrap();
        assert_eq!(got("runs/%q{UP}/out"), PathBuf::from("runs/__/out"));
        assert_eq!(got("runs/%q{ESC}"), PathBuf::from("runs/.._escape"));
        assert_eq!(got("runs/%q{DOT}-%p"), PathBuf::from("runs/_-7"));
        assert_eq!(got("runs/%q{DOT}/x"), PathBuf::from("runs/_/x"));
        assert_eq!(got("%h-%p"), PathBuf::from("a_b-7"));
    }

    fn env(var: &str) -> Option<OsString> {
        (var == "RANK").then(|| OsString::from("3"))
    }

    fn run(name: &str, pid: Option<u32>) -> Result<PathBuf> {
        expand(
            OsStr::new(name),
            &Values {
                pid,
                host: "node7",
                env: &env,
            },
        )
    }

    #[test]
    fn sequences_expand() {
        assert_eq!(
            run("runs/r%q{RANK}-%h-%p-100%%", Some(4242)).unwrap(),
            PathBuf::from("runs/r3-node7-4242-100%")
        );
        assert_eq!(
            run("a%pb", None).unwrap(),
            PathBuf::from(format!("apending-{}b", std::process::id()))
        );
        assert_eq!(run("plain", None).unwrap(), PathBuf::from("plain"));
        assert!(has_pid(OsStr::new("x-%p")));
        assert!(!has_pid(OsStr::new("x-%%p")));
    }

    #[test]
    fn bad_sequences_are_errors_naming_them() {
        let err = |n: &str| format!("{:#}", run(n, Some(1)).unwrap_err());
        assert_eq!(
            err("r-%x"),
            "output name \"r-%x\": unknown sequence %x: use %p (the program's pid), %h (the host name), %q{VAR} (environment variable VAR) or %% (a %)"
        );
        assert_eq!(
            err("r-%q{NOPE}"),
            "output name \"r-%q{NOPE}\": %q{NOPE} names the environment variable NOPE, which is not set"
        );
        assert_eq!(
            err("r-%"),
            "output name \"r-%\" ends with a lone %: write %% for a %"
        );
        assert_eq!(
            err("r-%qRANK"),
            "output name \"r-%qRANK\": %q must be followed by {VARIABLE}, as in %q{SLURM_PROCID}"
        );
        assert_eq!(
            err("r-%q{}"),
            "output name \"r-%q{}\": %q{} names no variable"
        );
    }
}
