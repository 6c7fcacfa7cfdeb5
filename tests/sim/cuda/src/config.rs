//! The simulated machine: how many devices, what they are, and the driver version.
//! An H100 SXM by default; `SIMCUDA_*` environment variables override single values.
//! An unusable value is named once on stderr and the default is used instead.

use std::sync::OnceLock;

/// One simulated GPU (all devices of a process are alike).
#[derive(Debug, Clone)]
pub(crate) struct Device {
    pub(crate) name: String,
    pub(crate) cc_major: i32,
    pub(crate) cc_minor: i32,
    pub(crate) sm_count: i32,
    pub(crate) clock_khz: i32,
    pub(crate) mem_clock_khz: i32,
    pub(crate) bus_width_bits: i32,
    pub(crate) total_mem_bytes: usize,
    pub(crate) l2_bytes: i32,
}

/// The whole simulated driver configuration.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) driver_version: i32,
    pub(crate) device_count: i32,
    pub(crate) device: Device,
}

/// The configuration, read from the environment on first use.
pub(crate) fn get() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| from_env(&|k| std::env::var(k).ok()))
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

/// The value of `key` parsed by `parse`, or `default` (shown as `shown`) when unset
/// or unusable; an unusable value is reported on stderr.
fn setting<T>(
    var: &dyn Fn(&str) -> Option<String>,
    key: &str,
    default: T,
    shown: &str,
    parse: fn(&str) -> Option<T>,
) -> T {
    match var(key) {
        None => default,
        Some(v) => parse(&v).unwrap_or_else(|| {
            eprintln!("simcuda: {key}={v} is invalid, using {shown}");
            default
        }),
    }
}

fn positive(s: &str) -> Option<i32> {
    s.trim().parse().ok().filter(|v| *v > 0)
}

fn non_negative(s: &str) -> Option<i32> {
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
    fn overrides_and_invalid_values() {
        let c = with(&[("SIMCUDA_CC", "8.0"), ("SIMCUDA_SM_COUNT", "-3")]);
        assert_eq!((c.device.cc_major, c.device.cc_minor), (8, 0));
        assert_eq!(c.device.sm_count, 132);
        assert_eq!(parse_cc("9"), None);
        assert_eq!(parse_cc("12.1"), Some((12, 1)));
    }
}
