//! Peak FLOP/s and DRAM bandwidth of a GPU: the ceilings of its roofline.
//!
//! Where a GPU's peaks come from, first match wins:
//! 1. the table of known GPUs (`peak_table`), by the exact CUDA device name
//!    (`cuDeviceGetName`, e.g. "NVIDIA H100 80GB HBM3"), each entry naming the NVIDIA
//!    datasheet its dense (no sparsity) figures come from;
//! 2. otherwise figures derived from the device record: SM count x core clock x the
//!    per-SM rates of the architecture (sm_80, sm_86, sm_89, sm_90, sm_100), and DRAM
//!    bandwidth = memory clock x 2 (double data rate) x bus width / 8. CUDA reports the
//!    HBM clock so that this holds (H100 SXM: 2,619,000 kHz x 2 x 5120 bits / 8 =
//!    3.35 TB/s). The derived figures use the clock the device reports (its maximum),
//!    which can exceed the datasheet's (H100 SXM: 1.98 GHz gives 1070.5 TFLOP/s BF16,
//!    the datasheet's 989.4 is at 1.83 GHz);
//! 3. either is then overridden, field by field, by the user's peaks file.
//!
//! The peaks file (`gpuprof report --peaks FILE`, or `$GPUPROF_PEAKS`) is TOML:
//!
//! ```toml
//! [[gpu]]
//! name = "NVIDIA H100 80GB HBM3"   # exact CUDA device name (required)
//! bf16 = 989.4                     # dense tensor TFLOP/s
//! dram_tb_s = 3.35                 # DRAM bandwidth, TB/s (10^12 bytes/s)
//! source = "our lab's measurements" # optional: shown in the report
//! ```
//!
//! See [`PEAKS_FILE_HELP`] for every key. Keys not given keep the table's or the
//! derived value. Unknown keys, values that are not positive finite numbers, a missing
//! name, a name given twice and TOML syntax errors are errors naming the file, the
//! entry and the key (and the line).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use toml::de::{DeTable, DeValue};
use toml::Spanned;
use wire::DeviceInfo;

use super::peak_table::{ArchRates, ARCH_RATES, INT8_FACTOR, KNOWN_GPUS};
use crate::analysis::precision::{Math, Pipe, Precision};

/// The peaks of one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peaks {
    /// The CUDA device name.
    pub gpu: String,
    /// Where the numbers come from (datasheet, derivation, peaks file).
    pub source: String,
    /// Dense tensor-core peaks, FLOP/s (INT8: operations/s). A precision the GPU has no
    /// tensor path for is absent.
    pub tensor: BTreeMap<Precision, f64>,
    /// Non-tensor (CUDA core) FP32 peak, FLOP/s; 0 when unknown.
    pub fp32: f64,
    /// Non-tensor (CUDA core) FP64 peak, FLOP/s; 0 when unknown.
    pub fp64: f64,
    /// DRAM bandwidth, bytes/s; 0 when unknown.
    pub dram_bytes_per_s: f64,
}

fn positive(v: f64) -> Option<f64> {
    (v.is_finite() && v > 0.0).then_some(v)
}

impl Peaks {
    /// The peak FLOP/s for `math`, if known. FP64 on tensor cores falls back to the
    /// CUDA-core FP64 peak on GPUs without FP64 tensor cores; CUDA cores have peaks for
    /// FP32 and FP64 only.
    pub fn flops(&self, math: Math) -> Option<f64> {
        match (math.pipe, math.precision) {
            (Pipe::Tensor, Precision::Fp64) => self
                .tensor
                .get(&Precision::Fp64)
                .copied()
                .and_then(positive)
                .or_else(|| positive(self.fp64)),
            (Pipe::Tensor, p) => self.tensor.get(&p).copied().and_then(positive),
            (Pipe::Cuda, Precision::Fp32) => positive(self.fp32),
            (Pipe::Cuda, Precision::Fp64) => positive(self.fp64),
            (Pipe::Cuda, _) => None,
        }
    }

    /// The DRAM bandwidth in bytes/s, if known.
    pub fn bandwidth(&self) -> Option<f64> {
        positive(self.dram_bytes_per_s)
    }

    /// Every known ceiling: `(math, FLOP/s)`, tensor ones first, widest first.
    pub fn ceilings(&self) -> Vec<(Math, f64)> {
        let mut out: Vec<(Math, f64)> = self
            .tensor
            .iter()
            .filter_map(|(p, v)| positive(*v).map(|v| (Math::tensor(*p), v)))
            .collect();
        for (p, v) in [(Precision::Fp32, self.fp32), (Precision::Fp64, self.fp64)] {
            if let Some(v) = positive(v) {
                out.push((Math::cuda(p), v));
            }
        }
        out
    }
}

/// TFLOP/s (or TB/s) to FLOP/s (bytes/s), exact for figures with up to nine decimals
/// (2.039 TB/s is 2,039,000,000,000 bytes/s, not 2.039 x 10^12 in binary).
fn from_tera(v: f64) -> f64 {
    (v * 1e9).round() * 1e3
}

fn same_name(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// The table's peaks for the GPU named `name` (the CUDA device name), if it is there.
pub fn known(name: &str) -> Option<Peaks> {
    let g = KNOWN_GPUS
        .iter()
        .find(|g| g.names.iter().any(|n| same_name(n, name)))?;
    Some(Peaks {
        gpu: name.trim().to_string(),
        source: g.source.to_string(),
        tensor: g.tensor.iter().map(|(p, v)| (*p, from_tera(*v))).collect(),
        fp32: from_tera(g.fp32),
        fp64: from_tera(g.fp64),
        dram_bytes_per_s: from_tera(g.dram_tb_s),
    })
}

/// Peaks derived from what the device record says (see the module documentation).
/// Errors name everything that is missing, for which GPU.
pub fn derived(dev: &DeviceInfo) -> Result<Peaks, String> {
    let (major, minor) = dev.compute_capability;
    let rates: Option<&ArchRates> = ARCH_RATES
        .iter()
        .find(|r| r.capability == dev.compute_capability);
    let mut missing = Vec::new();
    if rates.is_none() {
        let known: Vec<String> = ARCH_RATES
            .iter()
            .map(|r| format!("sm_{}{}", r.capability.0, r.capability.1))
            .collect();
        missing.push(format!(
            "per-SM rates of architecture sm_{major}{minor} (known: {})",
            known.join(", ")
        ));
    }
    if dev.sm_count == 0 {
        missing.push("SM count (0)".to_string());
    }
    if dev.core_clock_khz == 0 {
        missing.push("core clock (0 kHz)".to_string());
    }
    if dev.memory_clock_khz == 0 {
        missing.push("memory clock (0 kHz)".to_string());
    }
    if dev.memory_bus_width_bits == 0 {
        missing.push("memory bus width (0 bits)".to_string());
    }
    let Some(r) = rates.filter(|_| missing.is_empty()) else {
        return Err(format!(
            "no peaks for GPU \"{}\" (device {}): not in the table of known GPUs, and \
             cannot derive them without the {}; give them in a peaks file (--peaks)",
            dev.name,
            dev.id,
            missing.join(", ")
        ));
    };
    let sms = f64::from(dev.sm_count);
    let hz = f64::from(dev.core_clock_khz) * 1000.0;
    // FLOP per second from FMAs per SM per clock.
    let fma = |per_sm: u32| f64::from(per_sm) * 2.0 * sms * hz;
    let bf16 = fma(r.tensor_fma);
    let mut tensor = BTreeMap::new();
    tensor.insert(Precision::Bf16, bf16);
    tensor.insert(Precision::Fp16, bf16);
    tensor.insert(Precision::Tf32, bf16 / 2.0);
    tensor.insert(Precision::Int8, bf16 * f64::from(INT8_FACTOR));
    if r.fp8_factor > 0 {
        tensor.insert(Precision::Fp8, bf16 * f64::from(r.fp8_factor));
    }
    if r.fp4_factor > 0 {
        tensor.insert(Precision::Fp4, bf16 * f64::from(r.fp4_factor));
    }
    if r.fp64_tensor_fma > 0 {
        tensor.insert(Precision::Fp64, fma(r.fp64_tensor_fma));
    }
    let dram =
        f64::from(dev.memory_clock_khz) * 1000.0 * 2.0 * f64::from(dev.memory_bus_width_bits) / 8.0;
    Ok(Peaks {
        gpu: dev.name.trim().to_string(),
        source: format!(
            "derived from {} SMs x {} MHz (sm_{major}{minor} rates: {} BF16 tensor FMA, {} FP32 \
             and {} FP64 lanes per SM per clock) and {} MHz memory x 2 x {}-bit bus",
            dev.sm_count,
            dev.core_clock_khz / 1000,
            r.tensor_fma,
            r.fp32_lanes,
            r.fp64_lanes,
            dev.memory_clock_khz / 1000,
            dev.memory_bus_width_bits
        ),
        tensor,
        fp32: fma(r.fp32_lanes),
        fp64: fma(r.fp64_lanes),
        dram_bytes_per_s: dram,
    })
}

/// The keys of a `[[gpu]]` entry besides `name` and `source`: (key, what it sets).
const VALUE_KEYS: [(&str, &str); 11] = [
    ("bf16", "BF16 tensor TFLOP/s"),
    ("fp16", "FP16 tensor TFLOP/s"),
    ("tf32", "TF32 tensor TFLOP/s"),
    ("fp8", "FP8 tensor TFLOP/s"),
    ("int8", "INT8 tensor TOP/s"),
    ("fp4", "FP4 tensor TFLOP/s"),
    ("fp64_tensor", "FP64 tensor TFLOP/s"),
    ("fp32", "FP32 non-tensor (CUDA core) TFLOP/s"),
    ("fp64", "FP64 non-tensor (CUDA core) TFLOP/s"),
    ("dram_tb_s", "DRAM bandwidth, TB/s (10^12 bytes/s)"),
    ("source", "where the numbers come from (text; optional)"),
];

/// The peaks file format, for `--help`.
pub const PEAKS_FILE_HELP: &str = "\
Peaks file (TOML): one [[gpu]] entry per GPU model, matched by its exact CUDA
device name as the report's Processes section shows it. Values are dense
(no sparsity); keys not given keep the built-in value.

  [[gpu]]
  name = \"NVIDIA H100 80GB HBM3\"
  bf16 = 989.4          # BF16 tensor TFLOP/s
  fp16 = 989.4          # FP16 tensor TFLOP/s
  tf32 = 494.7          # TF32 tensor TFLOP/s
  fp8 = 1978.8          # FP8 tensor TFLOP/s
  int8 = 1978.8         # INT8 tensor TOP/s
  fp4 = 9000            # FP4 tensor TFLOP/s (Blackwell only)
  fp64_tensor = 67      # FP64 tensor TFLOP/s
  fp32 = 67             # FP32 non-tensor TFLOP/s
  fp64 = 34             # FP64 non-tensor TFLOP/s
  dram_tb_s = 3.35      # DRAM bandwidth, TB/s
  source = \"measured\"   # optional, shown in the report
";

/// One `[[gpu]]` entry of a peaks file.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub name: String,
    pub source: Option<String>,
    /// Tensor peaks given, FLOP/s.
    pub tensor: BTreeMap<Precision, f64>,
    /// FLOP/s.
    pub fp32: Option<f64>,
    pub fp64: Option<f64>,
    /// Bytes/s.
    pub dram_bytes_per_s: Option<f64>,
    /// The keys given, in file order (for the source line).
    pub keys: Vec<String>,
}

/// A parsed peaks file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Overrides {
    /// The file name, for the report's source lines.
    pub file: String,
    pub entries: Vec<Override>,
}

/// What is wrong with a peaks file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeaksFileError {
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based `[[gpu]]` entry index and its name, when the error is inside one.
    pub entry: Option<(usize, Option<String>)>,
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for PeaksFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "peaks file {}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        if let Some((i, name)) = &self.entry {
            write!(f, ", [[gpu]] entry {i}")?;
            if let Some(n) = name {
                write!(f, " (\"{n}\")")?;
            }
        }
        if let Some(k) = &self.key {
            write!(f, ", key `{k}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for PeaksFileError {}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// A TOML number as f64 (integers and floats; `inf` and `nan` come out non-finite).
fn number(v: &DeValue<'_>) -> Option<f64> {
    let text = match v {
        DeValue::Integer(i) => {
            let digits = i.as_str().replace('_', "");
            return i64::from_str_radix(&digits, i.radix())
                .ok()
                .map(|x| x as f64);
        }
        DeValue::Float(x) => x.as_str().replace('_', ""),
        _ => return None,
    };
    match text.trim_start_matches(['+', '-']) {
        "inf" => Some(f64::INFINITY),
        "nan" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

fn value_kind(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// A peaks file being parsed: its text, for line numbers, and its name, for errors.
#[derive(Clone, Copy)]
struct PeaksFile<'a> {
    text: &'a str,
    file: &'a str,
}

/// The `[[gpu]]` entry an error is in: its 1-based index and, once known, its name.
type EntryAt = Option<(usize, Option<String>)>;

impl PeaksFile<'_> {
    /// The 1-based line of byte `offset`.
    fn line(&self, offset: usize) -> Option<usize> {
        Some(line_of(self.text, offset))
    }

    /// An error in this file.
    fn error(
        &self,
        line: Option<usize>,
        entry: EntryAt,
        key: Option<&str>,
        message: String,
    ) -> PeaksFileError {
        PeaksFileError {
            file: self.file.to_string(),
            line,
            entry,
            key: key.map(str::to_string),
            message,
        }
    }
}

/// Parses a peaks file's text; `file` names it in errors and source lines.
pub fn parse_overrides(text: &str, file: &str) -> Result<Overrides, PeaksFileError> {
    let src = PeaksFile { text, file };
    let doc = DeTable::parse(text).map_err(|e| {
        src.error(
            e.span().map(|s| line_of(text, s.start)),
            None,
            None,
            e.message().trim().to_string(),
        )
    })?;
    let mut out = Overrides {
        file: file.to_string(),
        entries: Vec::new(),
    };
    for (key, value) in doc.get_ref().iter() {
        let line = src.line(key.span().start);
        if key.get_ref().as_ref() != "gpu" {
            return Err(src.error(
                line,
                None,
                Some(key.get_ref()),
                "unknown key (the file holds [[gpu]] entries only)".to_string(),
            ));
        }
        let DeValue::Array(entries) = value.get_ref() else {
            return Err(src.error(
                line,
                None,
                Some("gpu"),
                "must be an array of tables ([[gpu]])".to_string(),
            ));
        };
        for (i, entry) in entries.iter().enumerate() {
            let o = parse_entry(src, i + 1, entry, &out.entries)?;
            out.entries.push(o);
        }
    }
    Ok(out)
}

/// The `[[gpu]]` entry number `index` (1-based); `earlier` are the entries before it,
/// none of which may name the same GPU.
fn parse_entry(
    src: PeaksFile<'_>,
    index: usize,
    entry: &Spanned<DeValue<'_>>,
    earlier: &[Override],
) -> Result<Override, PeaksFileError> {
    let entry_line = src.line(entry.span().start);
    let DeValue::Table(table) = entry.get_ref() else {
        return Err(src.error(
            entry_line,
            Some((index, None)),
            None,
            "must be a table ([[gpu]])".to_string(),
        ));
    };
    let name = parse_entry_name(src, entry_line, index, table)?;
    let here = Some((index, Some(name.clone())));
    if let Some(j) = earlier.iter().position(|e| same_name(&e.name, &name)) {
        return Err(src.error(
            entry_line,
            here,
            Some("name"),
            format!("the same GPU as entry {}", j + 1),
        ));
    }
    let mut o = Override {
        name,
        source: None,
        tensor: BTreeMap::new(),
        fp32: None,
        fp64: None,
        dram_bytes_per_s: None,
        keys: Vec::new(),
    };
    for (k, v) in table.iter() {
        let key: &str = k.get_ref();
        if key != "name" {
            let line = src.line(k.span().start);
            parse_entry_key(src, line, &here, key, v.get_ref(), &mut o)?;
        }
    }
    Ok(o)
}

/// The `name` of entry number `index` (which starts at `entry_line`): a non-empty
/// string, trimmed.
fn parse_entry_name(
    src: PeaksFile<'_>,
    entry_line: Option<usize>,
    index: usize,
    table: &DeTable<'_>,
) -> Result<String, PeaksFileError> {
    let err = |message: String| src.error(entry_line, Some((index, None)), Some("name"), message);
    match table.get("name").map(|v| v.get_ref()) {
        Some(DeValue::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Some(DeValue::String(_)) => Err(err("is empty".to_string())),
        Some(other) => Err(err(format!("must be a string, got {}", value_kind(other)))),
        None => Err(err(
            "missing: every entry names its GPU (the CUDA device name)".to_string(),
        )),
    }
}

/// Key `key` (at `line`) of entry `here` other than `name`, into `o`: `source` as
/// text, the others as peaks (positive finite numbers, in TFLOP/s or TB/s). Unknown
/// keys are errors.
fn parse_entry_key(
    src: PeaksFile<'_>,
    line: Option<usize>,
    here: &EntryAt,
    key: &str,
    value: &DeValue<'_>,
    o: &mut Override,
) -> Result<(), PeaksFileError> {
    let err = |message: String| src.error(line, here.clone(), Some(key), message);
    if key == "source" {
        return match value {
            DeValue::String(s) => {
                o.source = Some(s.to_string());
                Ok(())
            }
            other => Err(err(format!("must be a string, got {}", value_kind(other)))),
        };
    }
    if !VALUE_KEYS.iter().any(|(k, _)| *k == key) {
        let known: Vec<&str> = VALUE_KEYS.iter().map(|(k, _)| *k).collect();
        return Err(err(format!(
            "unknown key (known: name, {})",
            known.join(", ")
        )));
    }
    let x = match number(value) {
        Some(x) if x.is_finite() && x > 0.0 => x,
        Some(x) => return Err(err(format!("must be a positive finite number, got {x}"))),
        None => return Err(err(format!("must be a number, got {}", value_kind(value)))),
    };
    set_peak(o, key, from_tera(x));
    Ok(())
}

/// Sets the peak value key `key` names to `x` (FLOP/s, or bytes/s for `dram_tb_s`)
/// and notes the key as given.
fn set_peak(o: &mut Override, key: &str, x: f64) {
    match key {
        "bf16" => o.tensor.insert(Precision::Bf16, x),
        "fp16" => o.tensor.insert(Precision::Fp16, x),
        "tf32" => o.tensor.insert(Precision::Tf32, x),
        "fp8" => o.tensor.insert(Precision::Fp8, x),
        "int8" => o.tensor.insert(Precision::Int8, x),
        "fp4" => o.tensor.insert(Precision::Fp4, x),
        "fp64_tensor" => o.tensor.insert(Precision::Fp64, x),
        "fp32" => o.fp32.replace(x),
        "fp64" => o.fp64.replace(x),
        _ => o.dram_bytes_per_s.replace(x),
    };
    o.keys.push(key.to_string());
}

impl Overrides {
    /// The entry for the GPU named `name`, if any.
    pub fn find(&self, name: &str) -> Option<&Override> {
        self.entries.iter().find(|e| same_name(&e.name, name))
    }
}

/// The peaks of the GPU of `dev`: the table's, else derived, then the peaks file's
/// values for that GPU on top. Without a table entry or derivation, a peaks-file entry
/// alone gives the peaks it names; without either, the error says what is missing.
pub fn peaks_for(dev: &DeviceInfo, overrides: &Overrides) -> Result<Peaks, String> {
    let base = match known(&dev.name) {
        Some(p) => Ok(p),
        None => derived(dev),
    };
    let Some(o) = overrides.find(&dev.name) else {
        return base;
    };
    let mut p = base.unwrap_or_else(|_| Peaks {
        gpu: dev.name.trim().to_string(),
        source: String::new(),
        tensor: BTreeMap::new(),
        fp32: 0.0,
        fp64: 0.0,
        dram_bytes_per_s: 0.0,
    });
    for (prec, v) in &o.tensor {
        p.tensor.insert(*prec, *v);
    }
    if let Some(v) = o.fp32 {
        p.fp32 = v;
    }
    if let Some(v) = o.fp64 {
        p.fp64 = v;
    }
    if let Some(v) = o.dram_bytes_per_s {
        p.dram_bytes_per_s = v;
    }
    p.source = match (&o.source, p.source.is_empty()) {
        (Some(s), _) => format!("{s} (peaks file {})", overrides.file),
        (None, true) => format!("peaks file {}: {}", overrides.file, o.keys.join(", ")),
        (None, false) => format!(
            "{}; overridden by peaks file {}: {}",
            p.source,
            overrides.file,
            o.keys.join(", ")
        ),
    };
    Ok(p)
}

#[cfg(test)]
#[path = "peaks_tests.rs"]
pub(crate) mod tests;
