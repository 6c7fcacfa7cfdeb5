//! The simulated CUDA stack's cost model (docs/ARCHITECTURE.md, "The simulated CUDA
//! stack").
//!
//! A small declarative TOML file says, per kernel-name pattern, how long a kernel runs and
//! what its hardware counters read, as expressions over the launch parameters. The sim
//! libraries use it to time each simulated kernel and fill in counter values; the tests use
//! it to compute the exact answer the profiler must report.
//!
//! ```toml
//! # Optional defaults, used where a rule leaves a field out.
//! [defaults]
//! duration_ns = "1000"
//! [defaults.counters]
//! "gpu__time_duration.sum" = "duration_ns"
//!
//! # Rules are tried in order; the first whose `name` glob matches the kernel name wins.
//! [[kernel]]
//! name = "*gemm*"
//! duration_ns = "max(2*m*n*k*batch / 700000, 2000)"
//! [kernel.counters]
//! "dram__bytes_write.sum" = "m*n*elem_bytes*batch"
//!
//! [[kernel]]
//! name = "*"
//! duration_ns = "500 + blocks * threads / 1000"
//! ```
//!
//! - `name` is a glob ([`glob_match`]): `*` any run of characters, `?` one character, every
//!   other character itself; it must match the whole name, case-sensitively.
//! - `duration_ns` is an expression (see [`expr`]) over [`DURATION_VARIABLES`]; its value is
//!   rounded to the nearest integer (half away from zero) and must then be at least 1.
//!   A rule without one uses `[defaults] duration_ns`; one of the two must exist.
//! - `counters` maps metric names (Nsight Compute / CUPTI names) to expressions over
//!   [`VARIABLES`], i.e. the launch variables plus `duration_ns`, the rounded duration.
//!   `[defaults.counters]` apply to every rule; a rule's own counter of the same name wins.
//! - A number may stand where an expression is expected (`duration_ns = 1000`).
//!
//! Every expression is parsed and checked (variables, function arity) when the model is
//! loaded; errors name the file, the rule, the field and the column. Evaluation can still
//! fail on division by zero or a non-finite result, reported by [`CostModel::cost`].

pub mod expr;
pub mod machine;
pub mod telemetry;
pub mod transfer;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::expr::{EvalError, Expr, ParseError};

/// The environment variable naming a cost model file; see [`CostModel::from_env`].
pub const ENV_VAR: &str = "SIMCUDA_COST_MODEL";

/// The built-in model (`models/default.toml`): an H100-SXM-like GPU running LLM inference.
pub const DEFAULT_MODEL_TOML: &str = include_str!("../models/default.toml");

/// The origin [`CostModel::builtin`] reports in errors.
pub const DEFAULT_MODEL_ORIGIN: &str = "<built-in models/default.toml>";

/// Every variable a counter expression may use, in evaluation order.
///
/// `blocks` is `grid_x * grid_y * grid_z`, `threads` is `block_x * block_y * block_z`,
/// `shared_mem` the dynamic shared memory bytes; `m`, `n`, `k`, `batch`, `elem_bytes` describe
/// the GEMM a simulated cuBLAS call launched the kernel for (all 0 otherwise); `duration_ns` is
/// the kernel's rounded duration.
pub const VARIABLES: [&str; 29] = [
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "blocks",
    "threads",
    "shared_mem",
    "registers",
    "m",
    "n",
    "k",
    "batch",
    "elem_bytes",
    // The chip's constants ([`CHIP_VARIABLES`], from the model's `[chips.<CHIP>]`).
    "sm_count",
    "clock_ghz",
    "warps_per_sm",
    "blocks_per_sm",
    "shared_per_sm",
    "dram_rate",
    "dram_per_pct",
    "tensor_per_pct",
    "mma_rate",
    "wgmma_rate",
    "flash_rate",
    "ffma_rate",
    "sgemm_rate",
    "duration_ns",
];

/// The chip constants among [`VARIABLES`], each set by every `[chips.<CHIP>]` table
/// of a model: SMs, SM clock (GHz), resident warps per SM, resident blocks per SM,
/// shared memory per SM (bytes, the largest carveout), sustained DRAM bytes per
/// ns, DRAM bytes per ns per percent of peak, dense BF16 tensor FLOPs per ns per
/// percent of peak, and sustained FLOPs per ns of mma.sync GEMMs (`ampere_*`),
/// warpgroup GEMMs (`sm90_*`), flash attention, FP32 FMA GEMVs and SGEMMs.
pub const CHIP_VARIABLES: &[&str] = VARIABLES
    .split_at(CHIP_INDEX)
    .1
    .split_at(DURATION_INDEX - CHIP_INDEX)
    .0;

/// Where [`CHIP_VARIABLES`] start in [`VARIABLES`].
const CHIP_INDEX: usize = 15;

/// The variables a `duration_ns` expression may use: all of [`VARIABLES`] but `duration_ns`.
pub const DURATION_VARIABLES: &[&str] = VARIABLES.split_last().unwrap().1;

const DURATION_INDEX: usize = VARIABLES.len() - 1;

/// One kernel launch, as the cost model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Launch {
    /// The kernel's (mangled or demangled) name, as CUPTI would report it.
    pub name: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory, bytes.
    pub shared_mem: u32,
    /// Registers per thread.
    pub registers: u32,
    /// The GEMM this kernel computes, when a simulated cuBLAS call launched it.
    pub gemm: Option<GemmShape>,
}

/// The shape of a (batched) GEMM: `batch` products of an `m x k` by a `k x n` matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GemmShape {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: u64,
    /// Bytes per element of A and B (2 for BF16/FP16).
    pub elem_bytes: u32,
}

impl Launch {
    /// The values of [`VARIABLES`], the chip's constants and `duration_ns` left 0.
    fn variables(&self) -> [f64; VARIABLES.len()] {
        let [gx, gy, gz] = self.grid.map(f64::from);
        let [bx, by, bz] = self.block.map(f64::from);
        let blocks = self.grid.iter().map(|&d| u64::from(d)).product::<u64>() as f64;
        let threads = self.block.iter().map(|&d| u64::from(d)).product::<u64>() as f64;
        let g = self.gemm.unwrap_or_default();
        let mut values = [0.0; VARIABLES.len()];
        values[..CHIP_INDEX].copy_from_slice(&[
            gx,
            gy,
            gz,
            bx,
            by,
            bz,
            blocks,
            threads,
            f64::from(self.shared_mem),
            f64::from(self.registers),
            g.m as f64,
            g.n as f64,
            g.k as f64,
            g.batch as f64,
            f64::from(g.elem_bytes),
        ]);
        values
    }
}

/// What the model says about one launch.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelCost {
    /// Duration in nanoseconds, at least 1.
    pub duration_ns: u64,
    /// Counter (metric name) values.
    pub counters: BTreeMap<String, f64>,
    /// Index of the rule that matched (see [`CostModel::rule_pattern`]).
    pub rule: usize,
}

/// A loaded, validated cost model.
#[derive(Debug, Clone)]
pub struct CostModel {
    origin: String,
    rules: Vec<Rule>,
    /// Each chip's constants ([`CHIP_VARIABLES`]), by chip name.
    chips: BTreeMap<String, [f64; CHIP_VARIABLES.len()]>,
    /// The constants prices use: the simulated device's chip's, else GH100's, else 0.
    chip: [f64; CHIP_VARIABLES.len()],
}

#[derive(Debug, Clone)]
struct Rule {
    pattern: String,
    pattern_chars: Vec<char>,
    duration: Expr,
    /// Defaults merged with the rule's own, sorted by name.
    counters: Vec<(String, Expr)>,
}

impl Rule {
    fn location(&self, index: usize) -> String {
        rule_location(index, &self.pattern)
    }
}

fn rule_location(index: usize, pattern: &str) -> String {
    format!("kernel rule {index} (name = {pattern:?})")
}

fn counter_field(name: &str) -> String {
    format!("counters.{name:?}")
}

/// Everything that can go wrong loading a model or costing a launch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The file could not be read.
    #[error("cannot read cost model {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The text is not valid TOML, or not the shape of a cost model (unknown or missing
    /// field, wrong type). `line`/`column` are 1-based, when the TOML parser knows them.
    #[error("{origin}{}: {message}", line_column(*line, *column))]
    Toml {
        origin: String,
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },
    /// An expression failed to parse or validate. `location` is `[defaults]` or
    /// `kernel rule INDEX (name = "PATTERN")`; `field` is `duration_ns` or `counters."NAME"`.
    #[error("{origin}: {location}: {field}: {source}")]
    Expr {
        origin: String,
        location: String,
        field: String,
        source: Box<ParseError>,
    },
    /// A rule has no `duration_ns` and there is no default.
    #[error("{origin}: {location}: no duration_ns, and [defaults] gives none")]
    MissingDuration { origin: String, location: String },
    /// A `[chips.<CHIP>]` table lacks a constant, has another, or one is not finite.
    #[error("{origin}: [chips.{chip}]: {problem}")]
    Chip {
        origin: String,
        chip: String,
        problem: String,
    },
    /// The model has no `[[kernel]]` rules.
    #[error("{origin}: no [[kernel]] rules")]
    NoRules { origin: String },
    /// No rule's pattern matches the kernel's name.
    #[error("{origin}: no kernel rule matches kernel `{kernel}`")]
    NoMatch { origin: String, kernel: String },
    /// Evaluating an expression for a launch failed (division by zero).
    #[error("{origin}: {location}: {field} for kernel `{kernel}`: {source}")]
    Eval {
        origin: String,
        location: String,
        field: String,
        kernel: String,
        source: Box<EvalError>,
    },
    /// An expression evaluated to a value that cannot be used: a non-finite number, or a
    /// duration that does not round to an integer in `1..=u64::MAX`.
    #[error("{origin}: {location}: {field} for kernel `{kernel}` is {value}, {problem}")]
    BadValue {
        origin: String,
        location: String,
        field: String,
        kernel: String,
        value: f64,
        problem: &'static str,
    },
}

fn line_column(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// An expression's source text in the file: a string, or a bare number.
struct ExprText(String);

impl<'de> Deserialize<'de> for ExprText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ExprText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an expression (a string) or a number")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ExprText, E> {
                Ok(ExprText(v.to_owned()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ExprText, E> {
                Ok(ExprText(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ExprText, E> {
                Ok(ExprText(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ExprText, E> {
                // `{:?}` keeps exponents (1e300) compact and always parses back.
                Ok(ExprText(format!("{v:?}")))
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    #[serde(default)]
    chips: BTreeMap<String, BTreeMap<String, f64>>,
    #[serde(default)]
    defaults: FileDefaults,
    #[serde(default)]
    kernel: Vec<FileRule>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileDefaults {
    duration_ns: Option<ExprText>,
    #[serde(default)]
    counters: BTreeMap<String, ExprText>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRule {
    name: String,
    duration_ns: Option<ExprText>,
    #[serde(default)]
    counters: BTreeMap<String, ExprText>,
}

impl CostModel {
    /// Every counter name some rule (or the defaults) prices, sorted.
    pub fn counter_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .rules
            .iter()
            .flat_map(|r| r.counters.iter().map(|(n, _)| n.clone()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Parses and validates a model; `origin` (usually the file name) prefixes every error.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Self, ModelError> {
        let file: FileModel = toml::from_str(text).map_err(|e| {
            let (line, column) = match e.span() {
                Some(span) => {
                    let before = &text[..span.start.min(text.len())];
                    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                    (
                        Some(before.matches('\n').count() + 1),
                        Some(before[line_start..].chars().count() + 1),
                    )
                }
                None => (None, None),
            };
            ModelError::Toml {
                origin: origin.to_owned(),
                line,
                column,
                message: e.message().trim().replace('\n', "; "),
            }
        })?;

        let parse =
            |src: &ExprText, vars: &[&str], location: &dyn Fn() -> String, field: String| {
                Expr::parse(&src.0, vars).map_err(|source| ModelError::Expr {
                    origin: origin.to_owned(),
                    location: location(),
                    field,
                    source: Box::new(source),
                })
            };

        let defaults_location = || "[defaults]".to_owned();
        let default_duration = match &file.defaults.duration_ns {
            Some(src) => Some(parse(
                src,
                DURATION_VARIABLES,
                &defaults_location,
                "duration_ns".to_owned(),
            )?),
            None => None,
        };
        let mut default_counters = BTreeMap::new();
        for (name, src) in &file.defaults.counters {
            let e = parse(src, &VARIABLES, &defaults_location, counter_field(name))?;
            default_counters.insert(name.clone(), e);
        }

        if file.kernel.is_empty() {
            return Err(ModelError::NoRules {
                origin: origin.to_owned(),
            });
        }
        let mut rules = Vec::with_capacity(file.kernel.len());
        for (index, rule) in file.kernel.iter().enumerate() {
            let location = || rule_location(index, &rule.name);
            let duration = match (&rule.duration_ns, &default_duration) {
                (Some(src), _) => {
                    parse(src, DURATION_VARIABLES, &location, "duration_ns".to_owned())?
                }
                (None, Some(d)) => d.clone(),
                (None, None) => {
                    return Err(ModelError::MissingDuration {
                        origin: origin.to_owned(),
                        location: location(),
                    })
                }
            };
            let mut counters = default_counters.clone();
            for (name, src) in &rule.counters {
                let e = parse(src, &VARIABLES, &location, counter_field(name))?;
                counters.insert(name.clone(), e);
            }
            rules.push(Rule {
                pattern: rule.name.clone(),
                pattern_chars: rule.name.chars().collect(),
                duration,
                counters: counters.into_iter().collect(),
            });
        }
        let chips = chip_constants(&file.chips, origin)?;
        let device = &machine::get().device;
        let mut model = CostModel {
            origin: origin.to_owned(),
            rules,
            chips,
            chip: [0.0; CHIP_VARIABLES.len()],
        };
        let chip = machine::chip_for_cc(device.cc_major, device.cc_minor);
        model.chip = model.constants_for(chip.and_then(|c| c.to_str().ok()));
        Ok(model)
    }

    /// The constants of `chip`, else GH100's (a chip the model has none for is priced
    /// as the built-in H100), else zeros (a model without `[chips]`).
    fn constants_for(&self, chip: Option<&str>) -> [f64; CHIP_VARIABLES.len()] {
        chip.and_then(|c| self.chips.get(c))
            .or_else(|| self.chips.get("GH100"))
            .copied()
            .unwrap_or([0.0; CHIP_VARIABLES.len()])
    }

    /// The model pricing kernels on `chip` ("GA100", ...) rather than the simulated
    /// device's chip (what a test computes for a device of another process).
    pub fn with_chip(mut self, chip: &str) -> Self {
        self.chip = self.constants_for(Some(chip));
        self
    }

    /// The chips the model has constants for.
    pub fn chips(&self) -> impl Iterator<Item = &str> {
        self.chips.keys().map(String::as_str)
    }

    /// Reads and parses a model file; errors name the path.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml_str(&text, &path.display().to_string())
    }

    /// The built-in model ([`DEFAULT_MODEL_TOML`]).
    pub fn builtin() -> Self {
        // The crate's own tests load it, so this cannot fail in a released build.
        Self::from_toml_str(DEFAULT_MODEL_TOML, DEFAULT_MODEL_ORIGIN)
            .unwrap_or_else(|e| panic!("the built-in cost model is invalid: {e}"))
    }

    /// The model named by `$SIMCUDA_COST_MODEL` if it is set and not empty, else the
    /// built-in one.
    pub fn from_env() -> Result<Self, ModelError> {
        Self::from_env_value(std::env::var_os(ENV_VAR).as_deref())
    }

    /// [`CostModel::from_env`] given the variable's value: a file path, or the
    /// built-in model when unset or empty.
    pub fn from_env_value(value: Option<&std::ffi::OsStr>) -> Result<Self, ModelError> {
        match value {
            Some(path) if !path.is_empty() => Self::load(Path::new(path)),
            _ => Ok(Self::builtin()),
        }
    }

    /// Where the model came from (file path or [`DEFAULT_MODEL_ORIGIN`]).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The number of rules.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// The name pattern of rule `index`.
    pub fn rule_pattern(&self, index: usize) -> Option<&str> {
        self.rules.get(index).map(|r| r.pattern.as_str())
    }

    /// The index of the first rule whose pattern matches `kernel_name`.
    pub fn matching_rule(&self, kernel_name: &str) -> Option<usize> {
        let name: Vec<char> = kernel_name.chars().collect();
        self.rules
            .iter()
            .position(|r| glob_chars(&r.pattern_chars, &name))
    }

    /// Duration and counters of one launch, from the first rule matching its name.
    pub fn cost(&self, launch: &Launch) -> Result<KernelCost, ModelError> {
        let index = self
            .matching_rule(&launch.name)
            .ok_or_else(|| ModelError::NoMatch {
                origin: self.origin.clone(),
                kernel: launch.name.clone(),
            })?;
        let rule = &self.rules[index];
        let eval_error = |field: String, source: EvalError| ModelError::Eval {
            origin: self.origin.clone(),
            location: rule.location(index),
            field,
            kernel: launch.name.clone(),
            source: Box::new(source),
        };
        let bad_value = |field: String, value, problem| ModelError::BadValue {
            origin: self.origin.clone(),
            location: rule.location(index),
            field,
            kernel: launch.name.clone(),
            value,
            problem,
        };

        let mut values = launch.variables();
        values[CHIP_INDEX..CHIP_INDEX + CHIP_VARIABLES.len()].copy_from_slice(&self.chip);
        let raw = rule
            .duration
            .eval(&values)
            .map_err(|e| eval_error("duration_ns".to_owned(), e))?;
        let rounded = raw.round();
        // 2^64 is exactly representable; anything at or above it does not fit a u64.
        if !(1.0..18_446_744_073_709_551_616.0).contains(&rounded) {
            return Err(bad_value(
                "duration_ns".to_owned(),
                raw,
                "must round to an integer from 1 to 2^64-1",
            ));
        }
        let duration_ns = rounded as u64;
        values[DURATION_INDEX] = rounded;

        let mut counters = BTreeMap::new();
        for (name, e) in &rule.counters {
            let v = e
                .eval(&values)
                .map_err(|err| eval_error(counter_field(name), err))?;
            if !v.is_finite() {
                return Err(bad_value(counter_field(name), v, "must be finite"));
            }
            counters.insert(name.clone(), v);
        }
        Ok(KernelCost {
            duration_ns,
            counters,
            rule: index,
        })
    }
}

/// Each `[chips.<CHIP>]` table as its [`CHIP_VARIABLES`] values, every one present,
/// finite, and no other.
fn chip_constants(
    tables: &BTreeMap<String, BTreeMap<String, f64>>,
    origin: &str,
) -> Result<BTreeMap<String, [f64; CHIP_VARIABLES.len()]>, ModelError> {
    let mut out = BTreeMap::new();
    for (chip, table) in tables {
        let bad = |problem: String| ModelError::Chip {
            origin: origin.to_owned(),
            chip: chip.clone(),
            problem,
        };
        if let Some(other) = table.keys().find(|k| !CHIP_VARIABLES.contains(&k.as_str())) {
            return Err(bad(format!(
                "{other} is not a chip constant ({})",
                CHIP_VARIABLES.join(", ")
            )));
        }
        let mut values = [0.0; CHIP_VARIABLES.len()];
        for (v, name) in values.iter_mut().zip(CHIP_VARIABLES) {
            *v = *table
                .get(*name)
                .ok_or_else(|| bad(format!("{name} is missing")))?;
            if !v.is_finite() {
                return Err(bad(format!("{name} = {v} is not finite")));
            }
        }
        out.insert(chip.clone(), values);
    }
    Ok(out)
}

/// Whether `name` matches the glob `pattern` as a whole: `*` matches any run of characters
/// (including none), `?` exactly one character, any other character itself (case-sensitive).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = name.chars().collect();
    glob_chars(&p, &s)
}

/// Linear-backtracking glob match: on a mismatch, let the last `*` swallow one more char.
fn glob_chars(p: &[char], s: &[char]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == '?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests;
