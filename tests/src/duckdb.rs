//! SQL on sessions with the real DuckDB: the `duckdb` Python package of `target/venv`
//! (pinned in scripts/python-requirements.txt, installed by scripts/python-env.sh).
//! A missing DuckDB is a failure naming that command, never a skip.

use std::time::Duration;

use serde_json::Value;

use crate::{venv_python, TimedChild};

/// Runs every statement of `setup` (each may hold several, `;`-separated), then each
/// query of `queries`, in one DuckDB connection. Returns each query's rows as JSON
/// objects (column name to value; floats as Python prints them, which round-trips).
pub fn duckdb(setup: &[&str], queries: &[&str]) -> Vec<Vec<Value>> {
    const SCRIPT: &str = r#"
import json, sys
try:
    import duckdb
except ImportError as e:
    print(f"cannot import duckdb: {e}", file=sys.stderr)
    sys.exit(3)
request = json.loads(sys.argv[1])
con = duckdb.connect()
for sql in request["setup"]:
    con.execute(sql)
out = []
for sql in request["queries"]:
    rel = con.sql(sql)
    out.append([dict(zip(rel.columns, row)) for row in rel.fetchall()])
print(json.dumps(out, allow_nan=False))
"#;
    let request = serde_json::json!({"setup": setup, "queries": queries}).to_string();
    let mut cmd = std::process::Command::new(venv_python());
    cmd.arg("-c").arg(SCRIPT).arg(request);
    let o = TimedChild::spawn(cmd, Duration::from_secs(120)).wait();
    if o.status.code() == Some(3) {
        panic!(
            "DuckDB is not installed in target/venv ({}): run scripts/python-env.sh, which \
             installs the packages pinned in scripts/python-requirements.txt",
            o.stderr.trim()
        );
    }
    assert!(o.status.success(), "DuckDB failed:\n{}", o.stderr);
    serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("DuckDB's rows are not JSON ({e}): {}", o.stdout))
}

/// The ```sql blocks of a Markdown document (docs/SESSION.md's "Reading a session with
/// SQL"), in order, each without its fences; `Err` names an unclosed block.
pub fn sql_blocks(doc: &str) -> Result<Vec<String>, String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (&mut current, line) {
            (None, "```sql") => current = Some(String::new()),
            (Some(b), "```") => {
                blocks.push(std::mem::take(b));
                current = None;
            }
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    match current {
        Some(_) => Err("an unclosed ```sql block".into()),
        None => Ok(blocks),
    }
}
