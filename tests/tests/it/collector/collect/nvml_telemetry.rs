//! The simulated NVML (tests/sim/nvml) against its model, driven by real clients:
//! NVIDIA's `nvidia-ml-py` and, through `gpuprof record`, `nvml-wrapper`; and the
//! telemetry `gpuprof record` stores and `gpuprof report` shows for a run on the
//! simulated stack, against the cost model's exact values.

use std::path::Path;
use std::process::{Command, Output};

use gpuprof_collector::store::device_samples::DeviceSample;
use gpuprof_collector::store::Store;
use gpuprof_tests::{
    artifact, compile_c, nvidia_extra, record_session_on_sim, sim_lib_dir, venv_python_of, Scratch,
    SimCommand,
};
use serde_json::Value;
use wire::Record;

const H100: &str = "NVIDIA H100 80GB HBM3";
const UUID0: &str = "GPU-5a1c0da0-9000-4e11-8000-51c000000000";
const UUID1: &str = "GPU-5a1c0da0-9000-4e11-8000-51c000000001";
const GIB: u64 = 1 << 30;

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A telemetry directory as the simulated driver leaves it (the format of
/// `sim_core::telemetry`), with two devices and a period of 100 ms:
/// - device 0: in every period around now, a kernel for its first quarter and a copy
///   for a tenth from its middle; 3 GiB held by this (live) process and 1 GiB by a
///   process that is gone;
/// - device 1: kernels of 1.5 s and 0.25 s in total, ended seconds ago.
fn telemetry_dir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let p = 100_000_000u64;
    let now = now_ns();
    let mut busy0 = String::new();
    for k in (now / p - 50)..(now / p + 600) {
        let t = k * p;
        busy0 += &format!(
            "k {t} {}\nm {} {}\n",
            t + p / 4,
            t + p / 2,
            t + p / 2 + p / 10
        );
    }
    std::fs::write(dir.join("gpu0.busy"), busy0).unwrap();
    let s = now - 10_000_000_000;
    std::fs::write(
        dir.join("gpu1.busy"),
        format!(
            "k {s} {}\nk {} {}\nm {} {}\n",
            s + 1_500_000_000,
            s + 2_000_000_000,
            s + 2_250_000_000,
            s + 3_000_000_000,
            s + 3_100_000_000
        ),
    )
    .unwrap();
    let me = std::process::id();
    std::fs::write(dir.join(format!("gpu0.mem.{me}")), (3 * GIB).to_string()).unwrap();
    std::fs::write(dir.join("gpu0.mem.999999999"), GIB.to_string()).unwrap();
    std::fs::write(dir.join("loaded"), (now - 60_000_000_000).to_string()).unwrap();
}

/// The simulated NVML's settings these tests read it with: no idle power (so energy
/// is the kernels' alone), a 100 ms period, the SM clock held at 1500 MHz.
fn nvml_env(cmd: &mut Command, dir: &Path) {
    cmd.env("SIMCUDA_TELEMETRY_DIR", dir)
        .env("SIMCUDA_DEVICE_COUNT", "2")
        .env("SIMNVML_IDLE_W", "0")
        .env("SIMNVML_SAMPLE_PERIOD_MS", "100")
        .env("SIMNVML_SM_CLOCK_MHZ", "1500");
}

/// Device 1's energy: 700 W for 1.75 s of kernels, in mJ.
const ENERGY1_MJ: u64 = 1_225_000;

#[test]
fn nvidia_ml_py_reads_what_the_model_says_and_is_refused_what_nvml_refuses() {
    let scratch = Scratch::new("nvml-pynvml");
    let dir = scratch.join("telemetry");
    telemetry_dir(&dir);
    let mut cmd = SimCommand::new(Command::new(venv_python_of("nvml"))).command();
    nvml_env(&mut cmd, &dir);
    let out = cmd
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/python/nvml_client.py"))
        .output()
        .expect("run the nvidia-ml-py client");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["count"], 2);
    let d0 = &v["devices"][0];
    let total = 80 * GIB;
    let expected0 = serde_json::json!({
        "name": H100,
        "uuid": UUID0,
        "bus_id": "00000000:01:00.0",
        "bus_id_legacy": "0000:01:00.0",
        "bus": 1,
        "pci_device_id": 0x2330_10de_u32,
        // Only the live process's memory.
        "memory": [total, total - 3 * GIB, 3 * GIB],
        "memory_v2": [0x0200_0028, total, 0, total - 3 * GIB, 3 * GIB],
        // A quarter of the period in kernels, a tenth in copies.
        "util": [25, 10],
        // 700 W × 1/4.
        "power_mw": 175_000,
        "energy_mj": d0["energy_mj"],
        "clocks": [1500, 1500, 2619, 1755],
        "max_sm_clock": 1980,
        "temperature": 40,
        // The SW power cap, by both names of the call.
        "event_reasons": 4,
        "throttle_reasons": 4,
    });
    assert_eq!(d0, &expected0);
    let d1 = &v["devices"][1];
    assert_eq!(d1["uuid"], UUID1);
    assert_eq!(d1["bus_id"], "00000000:02:00.0");
    assert_eq!(d1["memory"], serde_json::json!([total, total, 0]));
    assert_eq!(d1["util"], serde_json::json!([0, 0]));
    assert_eq!(d1["power_mw"], 0);
    assert_eq!(d1["energy_mj"], ENERGY1_MJ);

    // 1 uninitialised, 2 invalid argument, 7 insufficient size, 25 version mismatch.
    let expected_codes = serde_json::json!({
        "count_before_init": 1,
        "shutdown_before_init": 1,
        "init": 0,
        "count_null": 2,
        "handle_past_last": 2,
        "handle_null": 2,
        "name_short": 7,
        "name_null": 2,
        "uuid_short": 7,
        "bogus_handle": 2,
        "null_handle": 2,
        "memory_v2_bad_version": 25,
        "clock_unknown_type": 2,
        "temperature_unknown_sensor": 2,
        "power_null": 2,
        "shutdown": 0,
        "name_after_shutdown": 1,
        "shutdown_again": 1,
    });
    assert_eq!(v["refusals"], expected_codes);
}

#[test]
fn a_c_client_built_with_nvidia_s_nvml_h_reads_the_same() {
    let scratch = Scratch::new("nvml-c-client");
    let dir = scratch.join("telemetry");
    telemetry_dir(&dir);
    let include = nvidia_extra("nvml_include");
    let lib_dir = sim_lib_dir();
    let client = compile_c(
        "nvml_client.c",
        "nvml_client",
        &[
            "-Wl,--no-as-needed",
            "-I",
            include.to_str().unwrap(),
            "-L",
            lib_dir.to_str().unwrap(),
            "-l:libnvidia-ml.so.1",
        ],
    );
    let mut cmd = SimCommand::new(Command::new(client)).command();
    nvml_env(&mut cmd, &dir);
    let out = cmd.output().expect("run the C client");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let total = 80 * GIB;
    let (free, used) = (total - 3 * GIB, 3 * GIB);
    assert_eq!(
        text(&out.stdout),
        format!(
            "count_before_init 1\n\
             count 2\n\
             name {H100}\n\
             uuid {UUID0}\n\
             pci 00000000:01:00.0 0000:01:00.0 0 1 0 0x233010de 0\n\
             memory {total} {free} {used}\n\
             memory_v2 0x2000028 {total} 0 {free} {used}\n\
             util 25 10\n\
             power_mw 175000\n\
             sm_clock 1500\n\
             max_sm_clock 1980\n\
             mem_clock 2619\n\
             temperature 40\n\
             reasons 0x4 1\n\
             refused 7 2 2 2\n\
             shutdown 0 1\n"
        )
    );
}

/// `gpuprof record` with `extra` arguments, running `cmd`.
fn record(out: &Path, extra: &[&str], cmd: &[&std::ffi::OsStr]) -> Command {
    record_session_on_sim(out, "13.4", extra, cmd)
}

fn samples(session: &Path) -> Vec<DeviceSample> {
    let store = Store::open(session).unwrap();
    (0..store.parts.len())
        .flat_map(|i| store.read_device_samples(i).unwrap())
        .collect()
}

fn run(mut cmd: Command) -> Output {
    let out = cmd.output().expect("run gpuprof");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    out
}

#[test]
fn record_reads_every_device_through_nvml_wrapper() {
    let scratch = Scratch::new("nvml-record-wrapper");
    let dir = scratch.join("telemetry");
    telemetry_dir(&dir);
    let out = scratch.join("session");
    let mut cmd = record(
        &out,
        &["--nvml-interval", "20"],
        &["sleep".as_ref(), "0.2".as_ref()],
    );
    nvml_env(&mut cmd, &dir);
    run(cmd);
    let all = samples(&out);
    // At start, every 20 ms for 0.2 s, and at the end: for each of two devices.
    assert!(all.len() >= 2 * 4, "{all:?}");
    assert_eq!(all.len() % 2, 0);
    for pair in all.chunks(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(a.time_ns <= b.time_ns);
        let expected_a = DeviceSample {
            time_ns: a.time_ns,
            index: 0,
            uuid: UUID0.into(),
            name: H100.into(),
            pci_bus_id: "00000000:01:00.0".into(),
            gpu_util_pct: 25,
            mem_util_pct: 10,
            power_w: 175.0,
            energy_mj: a.energy_mj,
            fb_used_mib: 3072,
            sm_clock_mhz: 1500,
            mem_clock_mhz: 2619,
            max_sm_clock_mhz: 1980,
            temperature_c: 40,
            throttle_reasons: 4,
        };
        assert_eq!(a, &expected_a);
        let expected_b = DeviceSample {
            time_ns: b.time_ns,
            index: 1,
            uuid: UUID1.into(),
            pci_bus_id: "00000000:02:00.0".into(),
            gpu_util_pct: 0,
            mem_util_pct: 0,
            power_w: 0.0,
            energy_mj: ENERGY1_MJ,
            fb_used_mib: 0,
            ..expected_a.clone()
        };
        assert_eq!(b, &expected_b);
    }
    // The report: both devices, clocks below the maximum named.
    let report = run({
        let mut c = gpuprof_tests::gpuprof_command();
        c.arg("report").arg(&out);
        c
    });
    let stdout = text(&report.stdout);
    let n = all.len() / 2;
    let expected = format!(
        "\nDevices (NVML, over the run)\n\
         \x20 dev  samples  SM MHz min/mean/max  max MHz  power W mean/max  energy J  mem max MiB  util %  clock event reasons\n\
         \x20 0    {n:>7}       1500/1500/1500     1980       175.0/175.0{e0:>10}         3072    25.0  SW power cap\n\
         \x20 1    {n:>7}       1500/1500/1500     1980           0.0/0.0     0.000            0     0.0  SW power cap\n\
         \x20 dev 0: {H100} {UUID0} at PCI 00000000:01:00.0\n\
         \x20 dev 1: {H100} {UUID1} at PCI 00000000:02:00.0\n\
         \x20 dev 0: SM clock below its maximum in {n} of {n} samples (min 1500 MHz of 1980):\n\
         \x20   MFU is against the peak at 1980 MHz; at 1500 MHz the real peak is 76% of it\n\
         \x20 dev 1: SM clock below its maximum in {n} of {n} samples (min 1500 MHz of 1980):\n\
         \x20   MFU is against the peak at 1980 MHz; at 1500 MHz the real peak is 76% of it\n",
        e0 = {
            let used = all[all.len() - 2].energy_mj - all[0].energy_mj;
            format!("{}.{:03}", used / 1000, used % 1000)
        },
    );
    assert!(stdout.contains(&expected), "{stdout}\n---\n{expected}");
    assert!(stdout.lines().all(|l| l.chars().count() <= 120), "{stdout}");

    // JSON and CSV: the same per device, with its UUID and name.
    let json = run({
        let mut c = gpuprof_tests::gpuprof_command();
        c.args(["report", "--format", "json"]).arg(&out);
        c
    });
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        v["device_telemetry"][1],
        serde_json::json!({
            "session": 1, "index": 1, "uuid": UUID1, "name": H100,
            "pci_bus_id": "00000000:02:00.0", "samples": n,
            "sm_clock_min_mhz": 1500, "sm_clock_mean_mhz": 1500.0, "sm_clock_max_mhz": 1500,
            "max_sm_clock_mhz": 1980, "below_max_samples": n,
            "power_mean_w": 0.0, "power_max_w": 0.0, "energy_j": 0.0,
            "fb_used_max_mib": 0, "gpu_util_mean_pct": 0.0,
            "throttle_reasons": "SW power cap", "throttle_mask": 4,
        })
    );
    let csv = run({
        let mut c = gpuprof_tests::gpuprof_command();
        c.args(["report", "--format", "csv"]).arg(&out);
        c
    });
    let csv = text(&csv.stdout);
    let section = format!(
        "# device_telemetry\n\
         session,index,uuid,name,pci_bus_id,samples,sm_clock_min_mhz,sm_clock_mean_mhz,\
         sm_clock_max_mhz,max_sm_clock_mhz,below_max_samples,power_mean_w,power_max_w,energy_j,\
         fb_used_max_mib,gpu_util_mean_pct,throttle_reasons,throttle_mask\n\
         1,0,{UUID0},{H100},00000000:01:00.0,{n},1500,1500.0,1500,1980,{n},175.0,175.0,"
    );
    assert!(csv.contains(&section), "{csv}");
}

/// A cost model in which every kernel runs 20 ms: a run of a few dozen kernels keeps
/// the device busy long enough for whole periods of it to be seen.
const SLOW_KERNELS: &str = "[[kernel]]\nname = \"*\"\nduration_ns = \"20000000\"\n";

/// The period the recorded run's NVML averages over, and how close to a period's end
/// a reading may be taken for the test to compare it (the sampler notes the time just
/// before NVML reads; a reading that crossed into the next period in between is not
/// compared).
const PERIOD_NS: u64 = 100_000_000;
const MARGIN_NS: u64 = 10_000_000;

#[test]
fn a_recorded_run_has_the_energy_and_utilisation_of_its_kernels() {
    let scratch = Scratch::new("nvml-recorded-run");
    let model = scratch.join("slow.toml");
    std::fs::write(&model, SLOW_KERNELS).unwrap();
    let dir = scratch.join("telemetry");
    std::fs::create_dir_all(&dir).unwrap();
    let out = scratch.join("session");
    let mut cmd = record(
        &out,
        &["--nvml-interval", "25"],
        &[
            artifact("cudarc-llm").as_os_str(),
            "--decode-steps".as_ref(),
            "2".as_ref(),
        ],
    );
    cmd.env("SIMCUDA_TELEMETRY_DIR", &dir)
        .env("SIMCUDA_COST_MODEL", &model)
        .env("SIMNVML_IDLE_W", "0")
        .env("SIMNVML_SAMPLE_PERIOD_MS", "100")
        .env("GPUPROF_COUNTERS", "off");
    let done = run(cmd);
    assert!(text(&done.stdout).contains("Devices (NVML, over the run)"));

    let store = Store::open(&out).unwrap();
    let mut kernels: Vec<(u64, u64)> = Vec::new();
    for i in 0..store.parts.len() {
        for (_, r) in store.read_part(i).unwrap().records {
            if let Record::Kernel(k) = r {
                kernels.push((k.start_ns, k.end_ns));
            }
        }
    }
    assert!(kernels.len() >= 36, "{kernels:?}");
    assert!(kernels.iter().all(|(s, e)| e - s == 20_000_000));
    let all = samples(&out);
    assert!(all.len() >= 10, "{all:?}");
    // Energy: 700 W for every kernel's 20 ms, nothing at idle; the last reading is
    // after the program ended.
    let last = &all[all.len() - 1];
    assert_eq!(last.energy_mj, kernels.len() as u64 * 14_000);
    assert_eq!(last.fb_used_mib, 0, "the program is gone: it holds nothing");
    // Utilisation and power: the kernels' share of the last whole period.
    let busy_in = |from: u64, to: u64| -> u64 {
        kernels
            .iter()
            .map(|&(s, e)| e.min(to).saturating_sub(s.max(from)))
            .sum()
    };
    let mut compared = 0;
    let mut busy_seen = 0;
    for s in &all {
        if (s.time_ns % PERIOD_NS) + MARGIN_NS >= PERIOD_NS {
            continue;
        }
        let end = s.time_ns / PERIOD_NS * PERIOD_NS;
        let busy = busy_in(end - PERIOD_NS, end);
        assert_eq!(
            u64::from(s.gpu_util_pct),
            busy * 100 / PERIOD_NS,
            "{s:?} {kernels:?}"
        );
        assert_eq!(s.power_w, (700_000 * busy / PERIOD_NS) as f64 / 1000.0);
        compared += 1;
        busy_seen += u64::from(s.gpu_util_pct > 0);
        assert_eq!((s.uuid.as_str(), s.sm_clock_mhz), (UUID0, 1980));
        assert_eq!(s.throttle_reasons, 0);
    }
    assert!(compared >= all.len() * 3 / 4, "{compared} of {}", all.len());
    assert!(busy_seen >= 3, "{all:?}");
}

#[test]
fn without_nvml_one_line_and_the_session_is_otherwise_the_same() {
    let scratch = Scratch::new("nvml-missing");
    let with = scratch.join("with");
    let without = scratch.join("without");
    let workload = [
        artifact("cudarc-llm").into_os_string(),
        "--decode-steps".into(),
        "2".into(),
    ];
    let args: Vec<&std::ffi::OsStr> = workload.iter().map(|a| a.as_os_str()).collect();
    let ran_with = run(record(&with, &[], &args));
    let missing = sim_lib_dir().join("no-such-libnvidia-ml.so.1");
    let mut cmd = record(&without, &[], &args);
    cmd.env("GPUPROF_NVML_LIB", &missing);
    let ran_without = run(cmd);

    let stderr_with = text(&ran_with.stderr).replace(with.to_str().unwrap(), "OUT");
    let stderr_without = text(&ran_without.stderr).replace(without.to_str().unwrap(), "OUT");
    let line = format!(
        "gpuprof: no GPU telemetry (NVML): cannot initialise NVML from {}: ",
        missing.display()
    );
    let (nvml, rest): (Vec<&str>, Vec<&str>) = stderr_without
        .split_inclusive('\n')
        .partition(|l| l.starts_with("gpuprof: no GPU telemetry"));
    assert_eq!(nvml.len(), 1, "{stderr_without}");
    assert!(nvml[0].starts_with(&line), "{stderr_without}");
    assert_eq!(rest.concat(), stderr_with);

    // The same tables but device_samples, the same kernels, no device section.
    let tables = |session: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(session.join("parts"))
            .unwrap()
            .flat_map(|p| std::fs::read_dir(p.unwrap().path()).unwrap())
            .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names.dedup();
        names
    };
    let mut expected = tables(&with);
    expected.retain(|n| n != "device_samples.parquet");
    assert_eq!(tables(&without), expected);
    assert!(samples(&without).is_empty());
    assert!(!samples(&with).is_empty());
    let kernels = |session: &Path| {
        let store = Store::open(session).unwrap();
        let mut v: Vec<u64> = (0..store.parts.len())
            .flat_map(|i| store.read_part(i).unwrap().records)
            .filter_map(|(_, r)| match r {
                Record::Kernel(k) => Some(k.end_ns - k.start_ns),
                _ => None,
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(kernels(&without), kernels(&with));
    assert!(!text(&ran_without.stdout).contains("Devices (NVML"));
    assert!(text(&ran_with.stdout).contains("Devices (NVML"));

    // --no-nvml: not even the line.
    let quiet = scratch.join("quiet");
    let mut cmd = record(&quiet, &["--no-nvml"], &args);
    cmd.env("GPUPROF_NVML_LIB", &missing);
    let ran_quiet = run(cmd);
    assert_eq!(
        text(&ran_quiet.stderr).replace(quiet.to_str().unwrap(), "OUT"),
        stderr_with
    );
    assert!(samples(&quiet).is_empty());
}
