//! The simulated machine: how many devices, what they are, and the driver version,
//! as the simulated driver (sim/cuda) and the simulated NVML (sim/nvml) both report it.
//! An H100 SXM by default; `SIMCUDA_CHIP` (GA100, AD102, GH100, GB100) makes it one
//! of the other GPUs of [`CHIPS`], and other `SIMCUDA_*` environment variables
//! override single values.
//! An unusable value is named once on stderr and the default is used instead.

use std::sync::OnceLock;

/// One simulated GPU (all devices of a process are alike).
#[derive(Debug, Clone)]
pub struct Device {
    pub name: String,
    pub cc_major: i32,
    pub cc_minor: i32,
    pub sm_count: i32,
    pub clock_khz: i32,
    pub mem_clock_khz: i32,
    pub bus_width_bits: i32,
    pub total_mem_bytes: usize,
    pub l2_bytes: i32,
}

/// The whole simulated driver configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub driver_version: i32,
    pub device_count: i32,
    pub device: Device,
}

/// The configuration, read from the environment on first use.
pub fn get() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| from_env(&|k| std::env::var(k).ok()))
}

/// PCI device id of the H100 SXM5 80GB (0x2330) combined with NVIDIA's vendor id
/// (0x10de), as NVML's `nvmlPciInfo_t::pciDeviceId` holds them.
pub const PCI_DEVICE_ID: u32 = 0x2330_10de;

/// Device `ordinal`'s UUID (the sim has no MIG, so the driver's `cuDeviceGetUuid`, its
/// `_v2` and NVML agree): fixed bytes, then the ordinal, big-endian.
pub fn uuid(ordinal: u32) -> [u8; 16] {
    let mut b: [u8; 16] = [
        0x5a, 0x1c, 0x0d, 0xa0, 0x90, 0x00, 0x4e, 0x11, 0x80, 0x00, 0x51, 0xc0, 0x00, 0x00, 0x00,
        0x00,
    ];
    b[12..].copy_from_slice(&ordinal.to_be_bytes());
    b
}

/// The UUID as NVML and `nvidia-smi` print it: `GPU-` and 8-4-4-4-12 lowercase hex.
pub fn uuid_string(ordinal: u32) -> String {
    let h: String = uuid(ordinal).iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Device `ordinal`'s PCI location: domain 0, bus `ordinal + 1`, device 0, function 0
/// (what the driver's `CU_DEVICE_ATTRIBUTE_PCI_*` attributes report).
pub fn pci_bus(ordinal: u32) -> u32 {
    ordinal + 1
}

/// The PCI bus id as NVML formats `nvmlPciInfo_t::busId` (`"%08X:%02X:%02X.0"`).
pub fn pci_bus_id(ordinal: u32) -> String {
    format!("{:08X}:{:02X}:{:02X}.0", 0, pci_bus(ordinal), 0)
}

/// A GPU the simulated machine can be (`SIMCUDA_CHIP`): what its driver reports.
#[derive(Debug, Clone, Copy)]
pub struct ChipPreset {
    /// NVIDIA's chip name, as CUPTI's `cuptiDeviceGetChipName` gives it.
    pub chip: &'static str,
    pub name: &'static str,
    pub cc: (i32, i32),
    pub sm_count: i32,
    pub clock_khz: i32,
    pub mem_clock_khz: i32,
    pub bus_width_bits: i32,
    pub total_mem_bytes: usize,
    pub l2_bytes: i32,
}

/// The GPUs of the serving fleets gpuprof is for, with their datasheet SM counts,
/// boost clocks and memory systems (2 x memory clock x bus width = DRAM bandwidth:
/// 2.04, 0.864, 3.35 and 8.0 TB/s).
pub const CHIPS: [ChipPreset; 4] = [
    ChipPreset {
        chip: "GA100",
        name: "NVIDIA A100-SXM4-80GB",
        cc: (8, 0),
        sm_count: 108,
        clock_khz: 1_410_000,
        mem_clock_khz: 1_593_000,
        bus_width_bits: 5120,
        total_mem_bytes: 80 << 30,
        l2_bytes: 40 << 20,
    },
    ChipPreset {
        chip: "AD102",
        name: "NVIDIA L40S",
        cc: (8, 9),
        sm_count: 142,
        clock_khz: 2_520_000,
        mem_clock_khz: 9_001_000,
        bus_width_bits: 384,
        total_mem_bytes: 48 << 30,
        l2_bytes: 96 << 20,
    },
    ChipPreset {
        chip: "GH100",
        name: "NVIDIA H100 80GB HBM3",
        cc: (9, 0),
        sm_count: 132,
        clock_khz: 1_980_000,
        mem_clock_khz: 2_619_000,
        bus_width_bits: 5120,
        total_mem_bytes: 80 << 30,
        l2_bytes: 50 << 20,
    },
    ChipPreset {
        chip: "GB100",
        name: "NVIDIA B200",
        cc: (10, 0),
        sm_count: 148,
        clock_khz: 1_965_000,
        mem_clock_khz: 3_906_000,
        bus_width_bits: 8192,
        total_mem_bytes: 180 << 30,
        l2_bytes: 126 << 20,
    },
];

/// The default machine's GPU: an H100 SXM.
const DEFAULT_CHIP: ChipPreset = CHIPS[2];

/// The chip of compute capability `major.minor` (as `cuptiDeviceGetChipName` names
/// it: a C string), for the capabilities the sim knows.
pub fn chip_for_cc(major: i32, minor: i32) -> Option<&'static std::ffi::CStr> {
    Some(match (major, minor) {
        (7, 0) => c"GV100",
        (7, 5) => c"TU102",
        (8, 0) => c"GA100",
        (8, 6) => c"GA102",
        (8, 9) => c"AD102",
        (9, 0) => c"GH100",
        (10, 0) => c"GB100",
        _ => return None,
    })
}

fn parse_chip(s: &str) -> Option<ChipPreset> {
    CHIPS
        .iter()
        .find(|c| c.chip.eq_ignore_ascii_case(s.trim()))
        .copied()
}

fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Config {
    let p = setting(
        var,
        "SIMCUDA_CHIP",
        DEFAULT_CHIP,
        DEFAULT_CHIP.chip,
        parse_chip,
    );
    let cc = format!("{}.{}", p.cc.0, p.cc.1);
    let (cc_major, cc_minor) = setting(var, "SIMCUDA_CC", p.cc, &cc, parse_cc);
    let num = |key: &str, default: i32| setting(var, key, default, &default.to_string(), positive);
    Config {
        driver_version: setting(var, "SIMCUDA_DRIVER_VERSION", 13000, "13000", positive),
        device_count: setting(var, "SIMCUDA_DEVICE_COUNT", 1, "1", non_negative),
        device: Device {
            name: setting(
                var,
                "SIMCUDA_DEVICE_NAME",
                p.name.to_string(),
                p.name,
                parse_name,
            ),
            cc_major,
            cc_minor,
            sm_count: num("SIMCUDA_SM_COUNT", p.sm_count),
            clock_khz: num("SIMCUDA_CLOCK_KHZ", p.clock_khz),
            mem_clock_khz: num("SIMCUDA_MEM_CLOCK_KHZ", p.mem_clock_khz),
            bus_width_bits: num("SIMCUDA_BUS_WIDTH", p.bus_width_bits),
            total_mem_bytes: p.total_mem_bytes,
            l2_bytes: p.l2_bytes,
        },
    }
}

/// The value of `key` (read through `var`) parsed by `parse`, or `default` (shown as `shown`) when unset
/// or unusable; an unusable value is reported on stderr.
pub fn setting<T>(
    var: &dyn Fn(&str) -> Option<String>,
    key: &str,
    default: T,
    shown: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> T {
    match var(key) {
        None => default,
        Some(v) => parse(&v).unwrap_or_else(|| {
            // Named by the library the variable is for: SIMCUDA_X -> simcuda.
            let lib = key.split('_').next().unwrap_or(key).to_ascii_lowercase();
            eprintln!("{lib}: {key}={v} is invalid, using {shown}");
            default
        }),
    }
}

/// A whole number above 0.
pub fn positive(s: &str) -> Option<i32> {
    s.trim().parse().ok().filter(|v| *v > 0)
}

/// A whole number, 0 or above.
pub fn non_negative(s: &str) -> Option<i32> {
    s.trim().parse().ok().filter(|v| *v >= 0)
}

/// `"<major>.<minor>"`, e.g. `8.0`, `9.0`, `12.1`.
fn parse_cc(s: &str) -> Option<(i32, i32)> {
    let (major, minor) = s.trim().split_once('.')?;
    let major: i32 = major.parse().ok()?;
    let minor: i32 = minor.parse().ok()?;
    (major > 0 && (0..10).contains(&minor)).then_some((major, minor))
}

/// A device name: non-empty, printable ASCII, shorter than the 256 bytes the runtime's
/// `cudaDeviceProp::name` holds.
fn parse_name(s: &str) -> Option<String> {
    let ok = !s.is_empty() && s.len() < 256 && s.bytes().all(|b| (0x20..0x7f).contains(&b));
    ok.then(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Config {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        from_env(&move |k| pairs.iter().find(|(pk, _)| pk == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn defaults_are_an_h100_sxm() {
        let c = with(&[]);
        assert_eq!(c.driver_version, 13000);
        assert_eq!(c.device_count, 1);
        assert_eq!(c.device.name, "NVIDIA H100 80GB HBM3");
        assert_eq!((c.device.cc_major, c.device.cc_minor), (9, 0));
        assert_eq!(c.device.sm_count, 132);
        assert_eq!(c.device.total_mem_bytes, 85_899_345_920);
        assert_eq!(c.device.l2_bytes, 52_428_800);
    }

    #[test]
    fn identities() {
        assert_eq!(uuid_string(0), "GPU-5a1c0da0-9000-4e11-8000-51c000000000");
        assert_eq!(uuid_string(3), "GPU-5a1c0da0-9000-4e11-8000-51c000000003");
        assert_eq!(pci_bus_id(0), "00000000:01:00.0");
        assert_eq!(pci_bus_id(10), "00000000:0B:00.0");
    }

    #[test]
    fn overrides_and_invalid_values() {
        let c = with(&[("SIMCUDA_CC", "8.0"), ("SIMCUDA_SM_COUNT", "-3")]);
        assert_eq!((c.device.cc_major, c.device.cc_minor), (8, 0));
        assert_eq!(c.device.sm_count, 132);
        assert_eq!(parse_cc("9"), None);
        assert_eq!(parse_cc("12.1"), Some((12, 1)));
    }
}
