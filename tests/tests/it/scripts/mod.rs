//! The checkers of `scripts/`.

mod smoke_check;
