//! The simulated machine: how many devices, what they are, and the driver version,
//! as the simulated driver (sim/cuda) and the simulated NVML (sim/nvml) both report it.
//! An H100 SXM by default; `SIMCUDA_*` environment variables override single values.
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

const H100_NAME: &str = "NVIDIA H100 80GB HBM3";

fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Config {
    let (cc_major, cc_minor) = setting(var, "SIMCUDA_CC", (9, 0), "9.0", parse_cc);
    Config {
        driver_version: setting(var, "SIMCUDA_DRIVER_VERSION", 13000, "13000", positive),
        device_count: setting(var, "SIMCUDA_DEVICE_COUNT", 1, "1", non_negative),
        device: Device {
            name: setting(
                var,
                "SIMCUDA_DEVICE_NAME",
                H100_NAME.to_string(),
                H100_NAME,
                parse_name,
            ),
            cc_major,
            cc_minor,
            sm_count: setting(var, "SIMCUDA_SM_COUNT", 132, "132", positive),
            clock_khz: setting(var, "SIMCUDA_CLOCK_KHZ", 1_980_000, "1980000", positive),
            mem_clock_khz: setting(var, "SIMCUDA_MEM_CLOCK_KHZ", 2_619_000, "2619000", positive),
            bus_width_bits: setting(var, "SIMCUDA_BUS_WIDTH", 5120, "5120", positive),
            total_mem_bytes: 80 << 30,
            l2_bytes: 50 << 20,
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
