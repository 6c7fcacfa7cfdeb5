//! The session's files on disk (`collector/src/store`): read with SQL, and damaged.

mod duckdb_sql;
mod fuzz_corpus;
mod index;
mod session_flips;
