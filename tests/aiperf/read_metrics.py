"""Reads `gpuprof record --serve`'s /metrics with AIPerf's own collectors and prints
what they got, as JSON, for tests/tests/it/collector/collect/serve/aiperf.rs.

    read_metrics.py URL CUSTOM_CSV

- AIPerf's DCGM telemetry collector (`aiperf.gpu_telemetry.dcgm_collector`), with
  the custom metrics CSV applied as AIPerf applies its `metrics_file` (its loader's
  mappings added to `DCGM_TO_FIELD_MAPPING`): its records, one per GPU.
- AIPerf's server-metrics collector (`aiperf.server_metrics.data_collector`): every
  sample of every family it parsed, as [family, type, labels, value].

Values are written as Python's `repr` strings, which the test parses exactly.
"""

import asyncio
import json
import sys
from pathlib import Path

from aiperf.gpu_telemetry import constants
from aiperf.gpu_telemetry.dcgm_collector import DCGMTelemetryCollector
from aiperf.gpu_telemetry.metrics_config import MetricsConfigLoader
from aiperf.server_metrics.data_collector import ServerMetricsDataCollector


async def collect(collector_class, url, **kwargs):
    records, errors = [], []

    async def on_records(batch, _collector_id):
        records.extend(batch)

    async def on_error(error, _collector_id):
        errors.append(str(error))

    collector = collector_class(
        url, record_callback=on_records, error_callback=on_error, **kwargs
    )
    await collector.initialize()
    try:
        await collector.collect_and_process_metrics()
    finally:
        await collector.stop()
    if errors:
        raise SystemExit(f"{collector_class.__name__}: {errors}")
    return records


async def main(url, csv_path):
    _metrics, mappings = MetricsConfigLoader().build_custom_metrics_from_csv(
        custom_csv_path=Path(csv_path)
    )
    constants.DCGM_TO_FIELD_MAPPING.update(mappings)
    dcgm = await collect(DCGMTelemetryCollector, url)
    server = await collect(ServerMetricsDataCollector, url)
    out = {
        "custom_mappings": mappings,
        "dcgm": [
            {
                "gpu_index": r.gpu_index,
                "gpu_uuid": r.gpu_uuid,
                "gpu_model_name": r.gpu_model_name,
                "pci_bus_id": r.pci_bus_id,
                "device": r.device,
                "hostname": r.hostname,
                "telemetry_data": {
                    k: repr(v)
                    for k, v in r.telemetry_data.model_dump(exclude_none=True).items()
                },
            }
            for r in dcgm
        ],
        "server": [
            [name, str(family.type), sample.labels or {}, repr(sample.value)]
            for r in server
            for name, family in r.metrics.items()
            for sample in family.samples
        ],
    }
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
