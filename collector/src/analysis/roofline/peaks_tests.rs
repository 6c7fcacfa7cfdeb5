//! The peak table, the derived fallback and the peaks file.

use wire::testing::device;

use super::*;

fn bf16(p: &Peaks) -> f64 {
    p.flops(Math::tensor(Precision::Bf16)).unwrap()
}

#[test]
fn table_has_the_datasheet_figures() {
    let h100 = known("NVIDIA H100 80GB HBM3").unwrap();
    assert_eq!(bf16(&h100), 989.4e12);
    assert_eq!(h100.bandwidth(), Some(3.35e12));
    assert_eq!(h100.flops(Math::tensor(Precision::Fp8)), Some(1978.8e12));
    assert_eq!(h100.flops(Math::tensor(Precision::Tf32)), Some(494.7e12));
    assert_eq!(h100.flops(Math::cuda(Precision::Fp32)), Some(67e12));
    assert_eq!(h100.flops(Math::tensor(Precision::Fp64)), Some(67e12));
    assert_eq!(h100.flops(Math::cuda(Precision::Fp64)), Some(34e12));
    assert_eq!(h100.flops(Math::cuda(Precision::Fp16)), None);
    assert_eq!(h100.flops(Math::tensor(Precision::Fp4)), None);
    assert!(h100
        .source
        .starts_with("NVIDIA H100 Tensor Core GPU datasheet, SXM5"));

    let h200 = known("NVIDIA H200").unwrap();
    assert_eq!((bf16(&h200), h200.bandwidth()), (989.4e12, Some(4.8e12)));
    let a100 = known("NVIDIA A100-SXM4-80GB").unwrap();
    assert_eq!((bf16(&a100), a100.bandwidth()), (312e12, Some(2.039e12)));
    assert_eq!(a100.flops(Math::tensor(Precision::Fp8)), None);
    let a100_40 = known("NVIDIA A100-SXM4-40GB").unwrap();
    assert_eq!(a100_40.bandwidth(), Some(1.555e12));
    assert_eq!(
        known("NVIDIA A100 80GB PCIe").unwrap().bandwidth(),
        Some(1.935e12)
    );
    assert_eq!(bf16(&known("NVIDIA H100 PCIe").unwrap()), 756.5e12);
    assert_eq!(bf16(&known("NVIDIA H100 NVL").unwrap()), 835.5e12);
    assert_eq!(bf16(&known("NVIDIA L40S").unwrap()), 362.05e12);
    assert_eq!(bf16(&known("NVIDIA L4").unwrap()), 121e12);
    assert_eq!(bf16(&known("NVIDIA B200").unwrap()), 2250e12);
    assert_eq!(bf16(&known("NVIDIA GeForce RTX 4090").unwrap()), 165.2e12);
    // Names match case-insensitively, surrounding spaces ignored, otherwise exactly.
    assert!(known(" nvidia h100 80gb hbm3 ").is_some());
    assert!(known("NVIDIA H100").is_none());
    // L40S has no FP64 tensor cores: FP64 GEMMs get the CUDA-core peak.
    let l40s = known("NVIDIA L40S").unwrap();
    assert_eq!(l40s.flops(Math::tensor(Precision::Fp64)), Some(1.43125e12));
}

#[test]
fn every_table_entry_is_consistent() {
    for g in KNOWN_GPUS {
        let p = known(g.names[0]).unwrap();
        let b = bf16(&p);
        assert_eq!(p.flops(Math::tensor(Precision::Fp16)), Some(b), "{}", p.gpu);
        assert_eq!(
            p.flops(Math::tensor(Precision::Tf32)),
            Some(b / 2.0),
            "{}",
            p.gpu
        );
        assert!(p.fp32 > 0.0 && p.fp64 > 0.0 && p.dram_bytes_per_s > 0.0);
        assert!(!p.source.is_empty());
    }
}

#[test]
fn derived_peaks_of_an_h100_sxm() {
    let p = derived(&device("Some Hopper", (9, 0), 132, 1_980_000)).unwrap();
    // 132 SMs x 2048 FMA x 2 x 1.98 GHz.
    assert_eq!(bf16(&p), 1_070_530_560_000_000.0);
    assert_eq!(
        p.flops(Math::tensor(Precision::Fp8)),
        Some(2_141_061_120_000_000.0)
    );
    // 132 x 128 lanes x 2 x 1.98 GHz = 66.9 TFLOP/s (datasheet: 67).
    assert_eq!(p.fp32, 66_908_160_000_000.0);
    assert_eq!(p.fp64, 33_454_080_000_000.0);
    // 2,619,000 kHz x 2 x 5120 / 8 = 3.352 TB/s (datasheet: 3.35).
    assert_eq!(p.dram_bytes_per_s, 3_352_320_000_000.0);
    assert_eq!(
        p.source,
        "derived from 132 SMs x 1980 MHz (sm_90 rates: 2048 BF16 tensor FMA, 128 FP32 and 64 \
         FP64 lanes per SM per clock) and 2619 MHz memory x 2 x 5120-bit bus"
    );
    // At the datasheet's 1.83 GHz the derivation gives the datasheet's figure.
    let at_183 = derived(&device("Some Hopper", (9, 0), 132, 1_830_000)).unwrap();
    assert_eq!(bf16(&at_183), 989_429_760_000_000.0);
}

#[test]
fn derived_peaks_per_architecture() {
    // A100: 108 SMs at 1.41 GHz: 312 TFLOP/s BF16, 19.5 FP32.
    let a = derived(&device("x", (8, 0), 108, 1_410_000)).unwrap();
    assert_eq!(bf16(&a), 311_869_440_000_000.0);
    assert_eq!(a.fp32, 19_491_840_000_000.0);
    assert_eq!(a.flops(Math::tensor(Precision::Fp8)), None);
    // L40S: 142 SMs at 2.52 GHz: 366.4 TFLOP/s BF16, FP8 twice that.
    let l = derived(&device("x", (8, 9), 142, 2_520_000)).unwrap();
    assert_eq!(bf16(&l), 366_428_160_000_000.0);
    assert_eq!(
        l.flops(Math::tensor(Precision::Fp8)),
        Some(732_856_320_000_000.0)
    );
    assert_eq!(l.tensor.get(&Precision::Fp64), None);
    // B200: FP4 at four times BF16.
    let b = derived(&device("x", (10, 0), 148, 1_965_000)).unwrap();
    assert_eq!(b.flops(Math::tensor(Precision::Fp4)), Some(4.0 * bf16(&b)));
}

#[test]
fn derivation_names_what_is_missing() {
    let mut d = device("NVIDIA Tesla T4", (7, 5), 40, 1_590_000);
    assert_eq!(
        derived(&d).unwrap_err(),
        "no peaks for GPU \"NVIDIA Tesla T4\" (device 0): not in the table of known GPUs, and \
         cannot derive them without the per-SM rates of architecture sm_75 (known: sm_80, \
         sm_86, sm_89, sm_90, sm_100); give them in a peaks file (--peaks)"
    );
    d.compute_capability = (9, 0);
    d.sm_count = 0;
    d.core_clock_khz = 0;
    d.memory_bus_width_bits = 0;
    assert_eq!(
        derived(&d).unwrap_err(),
        "no peaks for GPU \"NVIDIA Tesla T4\" (device 0): not in the table of known GPUs, and \
         cannot derive them without the SM count (0), core clock (0 kHz), memory bus width \
         (0 bits); give them in a peaks file (--peaks)"
    );
}

const FILE: &str = r#"
# lab figures
[[gpu]]
name = "NVIDIA H100 80GB HBM3"
bf16 = 900
dram_tb_s = 3.0

[[gpu]]
name = "NVIDIA Tesla T4"
fp16 = 65
fp32 = 8.1
dram_tb_s = 0.32
source = "T4 datasheet"
"#;

#[test]
fn peaks_file_overrides_field_by_field() {
    let o = parse_overrides(FILE, "lab.toml").unwrap();
    assert_eq!(o.entries.len(), 2);
    let h100 = device("NVIDIA H100 80GB HBM3", (9, 0), 132, 1_980_000);
    let p = peaks_for(&h100, &o).unwrap();
    assert_eq!(bf16(&p), 900e12);
    assert_eq!(p.bandwidth(), Some(3e12));
    // Not overridden: the table's.
    assert_eq!(p.flops(Math::tensor(Precision::Fp16)), Some(989.4e12));
    assert!(p
        .source
        .ends_with("; overridden by peaks file lab.toml: bf16, dram_tb_s"));

    // A GPU that is neither known nor derivable gets what the file gives.
    let t4 = device("NVIDIA Tesla T4", (7, 5), 40, 1_590_000);
    let p = peaks_for(&t4, &o).unwrap();
    assert_eq!(p.flops(Math::tensor(Precision::Fp16)), Some(65e12));
    assert_eq!(p.flops(Math::cuda(Precision::Fp32)), Some(8.1e12));
    assert_eq!(p.flops(Math::tensor(Precision::Bf16)), None);
    assert_eq!(p.bandwidth(), Some(0.32e12));
    assert_eq!(p.source, "T4 datasheet (peaks file lab.toml)");
    // Without the file, an error.
    assert!(peaks_for(&t4, &Overrides::default()).is_err());
}

fn error(text: &str) -> String {
    parse_overrides(text, "p.toml").unwrap_err().to_string()
}

#[test]
fn peaks_file_errors_name_file_entry_key_and_line() {
    assert_eq!(
        error("[[gpu]]\nname = \"A\"\nbf16 = 1\n[[gpu]]\nname = \"B\"\nbf61 = 2\n"),
        "peaks file p.toml, line 6, [[gpu]] entry 2 (\"B\"), key `bf61`: unknown key (known: \
         name, bf16, fp16, tf32, fp8, int8, fp4, fp64_tensor, fp32, fp64, dram_tb_s, source)"
    );
    assert_eq!(
        error("[[gpu]]\nname = \"A\"\nbf16 = -1\n"),
        "peaks file p.toml, line 3, [[gpu]] entry 1 (\"A\"), key `bf16`: must be a positive \
         finite number, got -1"
    );
    assert_eq!(
        error("[[gpu]]\nname = \"A\"\ndram_tb_s = 0\n"),
        "peaks file p.toml, line 3, [[gpu]] entry 1 (\"A\"), key `dram_tb_s`: must be a \
         positive finite number, got 0"
    );
    assert_eq!(
        error("[[gpu]]\nname = \"A\"\nfp8 = inf\n"),
        "peaks file p.toml, line 3, [[gpu]] entry 1 (\"A\"), key `fp8`: must be a positive \
         finite number, got inf"
    );
    assert_eq!(
        error("[[gpu]]\nname = \"A\"\nfp8 = \"fast\"\n"),
        "peaks file p.toml, line 3, [[gpu]] entry 1 (\"A\"), key `fp8`: must be a number, got \
         a string"
    );
    assert_eq!(
        error("\n[[gpu]]\nbf16 = 1\n"),
        "peaks file p.toml, line 2, [[gpu]] entry 1, key `name`: missing: every entry names \
         its GPU (the CUDA device name)"
    );
    assert_eq!(
        error("[[gpu]]\nname = \"A\"\n[[gpu]]\nname = \"a\"\n"),
        "peaks file p.toml, line 3, [[gpu]] entry 2 (\"a\"), key `name`: the same GPU as entry 1"
    );
    assert_eq!(
        error("gpus = 1\n"),
        "peaks file p.toml, line 1, key `gpus`: unknown key (the file holds [[gpu]] entries \
         only)"
    );
    let syntax = error("[[gpu]]\nname = \"A\"\nbf16 = = 3\n");
    assert!(
        syntax.starts_with("peaks file p.toml, line 3: "),
        "{syntax}"
    );
    // Integers and floats with underscores are numbers.
    let o = parse_overrides("[[gpu]]\nname = \"A\"\nbf16 = 1_000\nfp32 = 6_0.5\n", "p").unwrap();
    assert_eq!(o.entries[0].tensor[&Precision::Bf16], 1000e12);
    assert_eq!(o.entries[0].fp32, Some(60.5e12));
    assert_eq!(parse_overrides("", "p").unwrap().entries, vec![]);
}

#[test]
fn help_text_documents_every_key() {
    for (k, _) in VALUE_KEYS {
        assert!(PEAKS_FILE_HELP.contains(&format!("  {k} = ")), "{k}");
    }
    // The example in the help text parses.
    let example: String = PEAKS_FILE_HELP
        .lines()
        .skip_while(|l| l.trim() != "[[gpu]]")
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(parse_overrides(&example, "help").unwrap().entries.len(), 1);
}
