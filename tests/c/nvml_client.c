/* A client of NVML compiled against NVIDIA's nvml.h (the nvidia-nvml-dev-cu12 wheel)
 * and linked to libnvidia-ml.so.1: the header maps nvmlInit, nvmlDeviceGetCount,
 * nvmlDeviceGetHandleByIndex and nvmlDeviceGetPciInfo to their versioned entry points,
 * and every struct is read with the header's own layout. Prints one line per value of
 * device 0, then the codes of calls that must be refused. Used by
 * tests/tests/it/collector/collect/nvml_telemetry.rs. */
#include <stdio.h>
#include <string.h>
#include <nvml.h>

int main(void) {
    unsigned int count = 0, v = 0;
    nvmlDevice_t dev;
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    printf("count_before_init %d\n", nvmlDeviceGetCount(&count));
    if (nvmlInit() != NVML_SUCCESS) return 1;
    if (nvmlDeviceGetCount(&count) != NVML_SUCCESS) return 1;
    printf("count %u\n", count);
    if (nvmlDeviceGetHandleByIndex(0, &dev) != NVML_SUCCESS) return 1;
    nvmlDeviceGetName(dev, buf, sizeof buf);
    printf("name %s\n", buf);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlDeviceGetUUID(dev, uuid, sizeof uuid);
    printf("uuid %s\n", uuid);
    nvmlPciInfo_t pci;
    memset(&pci, 0xff, sizeof pci);
    nvmlDeviceGetPciInfo(dev, &pci);
    printf("pci %s %s %u %u %u %#x %u\n", pci.busId, pci.busIdLegacy, pci.domain, pci.bus,
           pci.device, pci.pciDeviceId, pci.pciSubSystemId);
    nvmlMemory_t m1;
    nvmlDeviceGetMemoryInfo(dev, &m1);
    printf("memory %llu %llu %llu\n", m1.total, m1.free, m1.used);
    nvmlMemory_v2_t m2;
    memset(&m2, 0xff, sizeof m2);
    m2.version = nvmlMemory_v2;
    nvmlDeviceGetMemoryInfo_v2(dev, &m2);
    printf("memory_v2 %#x %llu %llu %llu %llu\n", m2.version, m2.total, m2.reserved, m2.free,
           m2.used);
    nvmlUtilization_t u;
    nvmlDeviceGetUtilizationRates(dev, &u);
    printf("util %u %u\n", u.gpu, u.memory);
    nvmlDeviceGetPowerUsage(dev, &v);
    printf("power_mw %u\n", v);
    nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &v);
    printf("sm_clock %u\n", v);
    nvmlDeviceGetMaxClockInfo(dev, NVML_CLOCK_SM, &v);
    printf("max_sm_clock %u\n", v);
    nvmlDeviceGetClockInfo(dev, NVML_CLOCK_MEM, &v);
    printf("mem_clock %u\n", v);
    nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &v);
    printf("temperature %u\n", v);
    unsigned long long reasons = 0;
    nvmlDeviceGetCurrentClocksEventReasons(dev, &reasons);
    printf("reasons %#llx %d\n", reasons,
           (reasons & nvmlClocksEventReasonSwPowerCap) != 0);
    printf("refused %d %d %d %d\n", nvmlDeviceGetName(dev, buf, 4),
           nvmlDeviceGetHandleByIndex(count, &dev),
           nvmlDeviceGetClockInfo(dev, NVML_CLOCK_COUNT, &v),
           nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_COUNT, &v));
    int first = nvmlShutdown();
    printf("shutdown %d %d\n", first, nvmlShutdown());
    return 0;
}
