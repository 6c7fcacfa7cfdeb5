//! Durations of simulated copies and sets: one fixed formula, shared by the simulated
//! driver and the tests that check what it reports.

/// Bytes per ns of host<->device copies (and host-to-host) on the simulated link.
pub const HOST_LINK_BYTES_PER_NS: u64 = 25;
/// Bytes per ns of device-to-device copies and of memsets.
pub const DEVICE_BYTES_PER_NS: u64 = 1500;
/// Fixed cost of every copy or set, ns.
pub const TRANSFER_OVERHEAD_NS: u64 = 1000;

/// Duration of a copy or set of `bytes` at `bytes_per_ns`:
/// `1000 + ceil(bytes / bytes_per_ns)` ns.
pub fn transfer_ns(bytes: u64, bytes_per_ns: u64) -> u64 {
    TRANSFER_OVERHEAD_NS + bytes.div_ceil(bytes_per_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_durations_round_up() {
        assert_eq!(transfer_ns(0, HOST_LINK_BYTES_PER_NS), 1000);
        assert_eq!(transfer_ns(1, HOST_LINK_BYTES_PER_NS), 1001);
        assert_eq!(transfer_ns(4096, HOST_LINK_BYTES_PER_NS), 1164);
        assert_eq!(transfer_ns(3000, DEVICE_BYTES_PER_NS), 1002);
    }
}
