"""A client of NVML through NVIDIA's own bindings (nvidia-ml-py, `import pynvml`),
for tests/tests/it/collector/collect/nvml_telemetry.rs: prints, as one JSON object,
what each device reports, then the return codes of calls NVML must refuse (made through ctypes on the
same library, since pynvml checks some arguments itself).

    python nvml_client.py     # libnvidia-ml.so.1 from the loader's path
"""

import ctypes
import json

import pynvml


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def device(i):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    pci = pynvml.nvmlDeviceGetPciInfo(h)
    m1 = pynvml.nvmlDeviceGetMemoryInfo(h)
    m2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
    u = pynvml.nvmlDeviceGetUtilizationRates(h)
    clock = pynvml.nvmlDeviceGetClockInfo
    return {
        "name": text(pynvml.nvmlDeviceGetName(h)),
        "uuid": text(pynvml.nvmlDeviceGetUUID(h)),
        "bus_id": text(pci.busId),
        "bus_id_legacy": text(pci.busIdLegacy),
        "bus": pci.bus,
        "pci_device_id": pci.pciDeviceId,
        "memory": [m1.total, m1.free, m1.used],
        "memory_v2": [m2.version, m2.total, m2.reserved, m2.free, m2.used],
        "util": [u.gpu, u.memory],
        "power_mw": pynvml.nvmlDeviceGetPowerUsage(h),
        "energy_mj": pynvml.nvmlDeviceGetTotalEnergyConsumption(h),
        "clocks": [clock(h, pynvml.NVML_CLOCK_GRAPHICS), clock(h, pynvml.NVML_CLOCK_SM),
                   clock(h, pynvml.NVML_CLOCK_MEM), clock(h, pynvml.NVML_CLOCK_VIDEO)],
        "max_sm_clock": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
        "temperature": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
        "event_reasons": pynvml.nvmlDeviceGetCurrentClocksEventReasons(h),
        "throttle_reasons": pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h),
    }


def refusals():
    """Return codes of calls the library must refuse, in a fixed order."""
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    n = ctypes.c_uint()
    h = ctypes.c_void_p()
    buf = ctypes.create_string_buffer(96)
    out = {}
    out["count_before_init"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(n))
    out["shutdown_before_init"] = lib.nvmlShutdown()
    out["init"] = lib.nvmlInit_v2()
    out["count_null"] = lib.nvmlDeviceGetCount_v2(None)
    out["handle_past_last"] = lib.nvmlDeviceGetHandleByIndex_v2(7, ctypes.byref(h))
    out["handle_null"] = lib.nvmlDeviceGetHandleByIndex_v2(0, None)
    lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
    out["name_short"] = lib.nvmlDeviceGetName(h, buf, 4)
    out["name_null"] = lib.nvmlDeviceGetName(h, None, 96)
    out["uuid_short"] = lib.nvmlDeviceGetUUID(h, buf, 40)
    out["bogus_handle"] = lib.nvmlDeviceGetName(ctypes.c_void_p(0x1234), buf, 96)
    out["null_handle"] = lib.nvmlDeviceGetName(None, buf, 96)
    m2 = pynvml.c_nvmlMemory_v2_t()
    m2.version = 1
    out["memory_v2_bad_version"] = lib.nvmlDeviceGetMemoryInfo_v2(h, ctypes.byref(m2))
    out["clock_unknown_type"] = lib.nvmlDeviceGetClockInfo(h, 9, ctypes.byref(n))
    out["temperature_unknown_sensor"] = lib.nvmlDeviceGetTemperature(h, 1, ctypes.byref(n))
    out["power_null"] = lib.nvmlDeviceGetPowerUsage(h, None)
    out["shutdown"] = lib.nvmlShutdown()
    out["name_after_shutdown"] = lib.nvmlDeviceGetName(h, buf, 96)
    out["shutdown_again"] = lib.nvmlShutdown()
    return out


def main():
    codes = refusals()
    pynvml.nvmlInit()
    count = pynvml.nvmlDeviceGetCount()
    devices = [device(i) for i in range(count)]
    pynvml.nvmlShutdown()
    print(json.dumps({"count": count, "devices": devices, "refusals": codes}))


main()
