//! The simulated driver's API behaviour end to end, seen by C clients
//! (`tests/c/driver_workload.c`, `tests/c/driver_tracer.c`) that load it as
//! `libcuda.so.1`, with a cost model written by the test (every kernel lasts
//! `1000 + blocks` ns), so durations are exact.

use std::path::PathBuf;
use std::process::{Command, Output};

use gpuprof_tests::{compile_c, target_profile_dir, SimCommand};

/// Writes `text` as a cost model file for this test process; returns its path.
fn cost_model(name: &str, text: &str) -> PathBuf {
    let dir = target_profile_dir().join("sim-driver-api");
    std::fs::create_dir_all(&dir).expect("create sim-driver-api dir");
    let f = dir.join(format!("{name}-{}.toml", std::process::id()));
    std::fs::write(&f, text).expect("write cost model");
    f
}

/// Every kernel lasts `1000 + blocks` ns.
const MODEL: &str = gpuprof_tests::DRIVER_WORKLOAD_MODEL;

/// Runs a C client (compiled from `tests/c/<src>`) on the simulated stack and `$SIMCUDA_COST_MODEL` = `model`.
fn run(src: &str, exe: &str, model: &PathBuf) -> Output {
    run_args(src, exe, model, &[])
}

/// [`run`] with command-line arguments.
fn run_args(src: &str, exe: &str, model: &PathBuf, args: &[&str]) -> Output {
    let mut cmd = SimCommand::new(Command::new(compile_c(src, exe, &[]))).command();
    cmd.args(args)
        .env("SIMCUDA_COST_MODEL", model)
        .output()
        .expect("run C client")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Contexts, memory round trip, PTX module and function attributes, launches between
/// events (elapsed time exact: 1004 + 1016 ns), a captured graph of 3 launches replayed
/// 3 times, and the documented error codes: CUDA_ERROR_INVALID_HANDLE (400) for a NULL
/// function and an unknown stream, CUDA_ERROR_INVALID_VALUE (1) for a too-large block
/// and bad device ranges and a double free, CUDA_ERROR_NOT_FOUND (500) for an unknown
/// kernel name, CUDA_ERROR_ILLEGAL_STATE (401) for ending a capture that was not begun,
/// CUDA_ERROR_INVALID_CONTEXT (201) once the current context is destroyed.
#[test]
fn a_driver_api_workload() {
    let model = cost_model("workload", MODEL);
    let out = run("driver_workload.c", "driver_workload", &model);
    assert_eq!(stdout(&out), gpuprof_tests::DRIVER_WORKLOAD_STDOUT);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert!(out.status.success());
}

/// The tracer interface (sim_abi::DriverTable via cuGetExportTable): an unknown table
/// id is CUDA_ERROR_INVALID_VALUE; a second tracer is refused; every API call is seen
/// at entry and exit with its CUPTI cbid and the tracer's correlation id; resources are
/// reported with CUPTI's cbids (CONTEXT_CREATED 1, STREAM_CREATED 3, MODULE_LOADED 6,
/// GRAPH_CREATED 9, GRAPHNODE_CREATED 13, GRAPHEXEC_CREATE_STARTING 17,
/// GRAPHEXEC_CREATED 18, GRAPHNODE_CLONED 20, and the DESTROY / UNLOAD_STARTING ones);
/// instantiation clones each node into the executable graph's copy of the graph (graph
/// 2: GRAPHNODE_CREATED then GRAPHNODE_CLONED per node, new node ids 3 and 4); GPU
/// operations carry the correlation id of the call that started them (both replays of
/// the graph: cuGraphLaunch's, with the clones' node ids),
/// exact durations (HtoD 4096 B = 1000 + 4096/25 rounded up = 1164 ns, memset 4096 B =
/// 1000 + 3, kernels 1000 + blocks), copy kinds (HTOD 1 / DTOH 2) and memory kinds
/// (PAGEABLE 1, DEVICE 3); captured work runs no GPU operation; a replayed memset
/// changes device memory (the final value 9).
#[test]
fn a_tracer_sees_calls_resources_and_gpu_operations() {
    let model = cost_model("tracer", MODEL);
    let out = run("driver_tracer.c", "driver_tracer", &model);
    assert_eq!(
        stdout(&out),
        r#"cuGetExportTable(bad id)=1
cuGetExportTable=0
set_tracer=0 again=1
cuInit=0
api enter cuDevicePrimaryCtxRetain cbid=386 corr=100 ctx=0
resource cbid=1 ctx=1
api exit  cuDevicePrimaryCtxRetain cbid=386 corr=100 ctx=0 result=0
api enter cuCtxSetCurrent cbid=303 corr=101 ctx=0
api exit  cuCtxSetCurrent cbid=303 corr=101 ctx=1 result=0
api enter cuStreamCreate cbid=124 corr=102 ctx=1
resource cbid=3 ctx=1 stream=2
api exit  cuStreamCreate cbid=124 corr=102 ctx=1 result=0
api enter cuModuleLoadData cbid=19 corr=103 ctx=1
resource cbid=6 ctx=1 module=1 size=184
api exit  cuModuleLoadData cbid=19 corr=103 ctx=1 result=0
api enter cuModuleGetFunction cbid=23 corr=104 ctx=1
api exit  cuModuleGetFunction cbid=23 corr=104 ctx=1 result=0
api enter cuModuleGetFunction cbid=23 corr=105 ctx=1
api exit  cuModuleGetFunction cbid=23 corr=105 ctx=1 result=0
api enter cuMemAlloc_v2 cbid=243 corr=106 ctx=1
api exit  cuMemAlloc_v2 cbid=243 corr=106 ctx=1 result=0
api enter cuMemcpyHtoD_v2 cbid=276 corr=107 ctx=1
op kind=2 corr=107 dur=1164 ctx=1 stream=1 bytes=4096 copy=1 src=1 dst=3 value=0
api exit  cuMemcpyHtoD_v2 cbid=276 corr=107 ctx=1 result=0
api enter cuLaunchKernel cbid=307 corr=108 ctx=1 symbol=fill
op kind=1 corr=108 dur=1008 ctx=1 stream=2 name=fill grid=4 block=128 regs=40 smem=1024
api exit  cuLaunchKernel cbid=307 corr=108 ctx=1 symbol=fill result=0
api enter cuMemsetD32Async cbid=220 corr=109 ctx=1
op kind=3 corr=109 dur=1003 ctx=1 stream=2 bytes=4096 copy=0 src=0 dst=3 value=7
api exit  cuMemsetD32Async cbid=220 corr=109 ctx=1 result=0
api enter cuStreamBeginCapture_v2 cbid=539 corr=110 ctx=1
resource cbid=9 ctx=1 graph=1
api exit  cuStreamBeginCapture_v2 cbid=539 corr=110 ctx=1 result=0
api enter cuLaunchKernel cbid=307 corr=111 ctx=1 symbol=scale
resource cbid=13 ctx=1 graph=1 node=1 type=0
api exit  cuLaunchKernel cbid=307 corr=111 ctx=1 symbol=scale result=0
api enter cuMemsetD32Async cbid=220 corr=112 ctx=1
resource cbid=13 ctx=1 graph=1 node=2 type=2
api exit  cuMemsetD32Async cbid=220 corr=112 ctx=1 result=0
api enter cuStreamEndCapture cbid=497 corr=113 ctx=1
api exit  cuStreamEndCapture cbid=497 corr=113 ctx=1 result=0
api enter cuGraphInstantiateWithFlags cbid=643 corr=114 ctx=1
resource cbid=17 ctx=1 graph=1
resource cbid=13 ctx=1 graph=2 node=3 type=0
resource cbid=20 ctx=1
resource cbid=13 ctx=1 graph=2 node=4 type=2
resource cbid=20 ctx=1
resource cbid=18 ctx=1 graph=1 exec=set
api exit  cuGraphInstantiateWithFlags cbid=643 corr=114 ctx=1 result=0
api enter cuGraphLaunch cbid=514 corr=115 ctx=1
op kind=1 corr=115 dur=1003 ctx=1 stream=2 name=scale grid=3 block=64 regs=32 smem=0 graph=1 node=3
op kind=3 corr=115 dur=1001 ctx=1 stream=2 bytes=64 copy=0 src=0 dst=3 value=9 graph=1 node=4
api exit  cuGraphLaunch cbid=514 corr=115 ctx=1 result=0
api enter cuGraphLaunch cbid=514 corr=116 ctx=1
op kind=1 corr=116 dur=1003 ctx=1 stream=2 name=scale grid=3 block=64 regs=32 smem=0 graph=1 node=3
op kind=3 corr=116 dur=1001 ctx=1 stream=2 bytes=64 copy=0 src=0 dst=3 value=9 graph=1 node=4
api exit  cuGraphLaunch cbid=514 corr=116 ctx=1 result=0
api enter cuMemcpyDtoH_v2 cbid=278 corr=117 ctx=1
op kind=2 corr=117 dur=1003 ctx=1 stream=1 bytes=64 copy=2 src=3 dst=1 value=0
api exit  cuMemcpyDtoH_v2 cbid=278 corr=117 ctx=1 result=0
api enter cuGraphExecDestroy cbid=516 corr=118 ctx=1
resource cbid=19 ctx=1 graph=1 exec=set
api exit  cuGraphExecDestroy cbid=516 corr=118 ctx=1 result=0
api enter cuGraphDestroy cbid=517 corr=119 ctx=1
resource cbid=10 ctx=1 graph=1
api exit  cuGraphDestroy cbid=517 corr=119 ctx=1 result=0
api enter cuModuleUnload cbid=22 corr=120 ctx=1
resource cbid=7 ctx=1 module=1 size=184
api exit  cuModuleUnload cbid=22 corr=120 ctx=1 result=0
api enter cuStreamDestroy_v2 cbid=326 corr=121 ctx=1
resource cbid=4 ctx=1 stream=2
api exit  cuStreamDestroy_v2 cbid=326 corr=121 ctx=1 result=0
api enter cuDevicePrimaryCtxRelease_v2 cbid=544 corr=122 ctx=1
resource cbid=2 ctx=1
api exit  cuDevicePrimaryCtxRelease_v2 cbid=544 corr=122 ctx=0 result=0
value 9
"#
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert!(out.status.success());
}

/// An invalid cost model fails cuInit with CUDA_ERROR_INVALID_VALUE after one line on
/// stderr naming the problem.
#[test]
fn an_invalid_cost_model_fails_cuinit() {
    let model = cost_model(
        "invalid",
        "[[kernel]]\nname = \"*\"\nduration_ns = \"1000 +\"\n",
    );
    let out = run("driver_workload.c", "driver_workload", &model);
    assert_eq!(stdout(&out), "cuInit(0) = 1\n");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("simcuda: "), "{err}");
}

/// GPU work that waits for a value the host writes later (`cuStreamWaitValue32` /
/// `cuStreamWriteValue32`, `tests/c/wait_value.c`): behind the wait, the kernel and a
/// copy do not run (the stream is not ready, the copy's data has not landed) until
/// the host's write on another stream; then they do.
#[test]
fn work_behind_a_wait_value_runs_after_the_host_writes_it() {
    let model = cost_model("wait-value", MODEL);
    let out = run_args("wait_value.c", "wait_value", &model, &[]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{out:?}");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("write_ns "))
        .collect();
    assert_eq!(lines, gpuprof_tests::WAIT_VALUE_STDOUT);
}

/// The same with `cuStreamWaitValue64` / `cuStreamWriteValue64` on a value above
/// 2^32: a write of its low 32 bits alone leaves the stream waiting (query 600,
/// CUDA_ERROR_NOT_READY).
#[test]
fn a_64_bit_wait_needs_all_64_bits() {
    let model = cost_model("wait-value-64", MODEL);
    let out = run_args("wait_value.c", "wait_value", &model, &["wide"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{out:?}");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("write_ns "))
        .collect();
    let mut want = gpuprof_tests::WAIT_VALUE_STDOUT.to_vec();
    want.insert(3, "query after a partial write 600");
    assert_eq!(lines, want);
}

/// What a tracer (the sim's private table, as the simulated CUPTI gets it) sees of a
/// wait and a write: each call with its params struct (`generated_cuda_meta.h`
/// layouts: the wait's value 1 and flags CU_STREAM_WAIT_VALUE_EQ; 64-bit: 2^40 + 1);
/// the kernel and the copy queued behind the wait are reported inside the write call
/// that releases them, with the correlation ids of their launch and copy calls. The
/// write is queued on stream B behind a 20 ms kernel ("produce", 1000 + 20,000,000
/// blocks ns), so it executes after the write call has returned; the kernel starts
/// exactly when "produce" (and so the write) ends, and the copy exactly when the
/// kernel ends (1000 + 4 blocks ns; 4 B copy: 1000 + 4/25 rounded up ns).
#[test]
fn queued_work_starts_when_the_write_executes() {
    let model = cost_model("wait-value-trace", MODEL);
    for (wide, params) in [
        (
            false,
            &[
                "params wait value=1 flags=1",
                "params write value=1 flags=0",
            ][..],
        ),
        (
            true,
            &[
                "params wait value=1099511627777 flags=1",
                "params write value=1 flags=0",
                "params write value=1099511627777 flags=0",
            ][..],
        ),
    ] {
        let args: &[&str] = if wide { &["wide", "trace"] } else { &["trace"] };
        let out = run_args("wait_value.c", "wait_value", &model, args);
        let text = stdout(&out);
        assert!(out.status.success(), "{text}\n{out:?}");
        let trace: Vec<&str> = text.lines().skip_while(|l| *l != "done").skip(1).collect();
        let mut want = params.to_vec();
        want.extend([
            // cuMemcpyHtoD of the flag and the data word, cuMemcpyDtoH of the data.
            "op kind=2  by=other before the write",
            "op kind=2  by=other before the write",
            "op kind=2  by=other before the write",
            "op kind=1 produce by=other before the write",
            "op kind=1 consume by=launch inside the write",
            "op kind=2  by=copy inside the write",
            // cuMemcpyDtoH of the data after the sync.
            "op kind=2  by=other after the write",
            "produce ends after the write call 1",
            "kernel start - produce end 0",
            "kernel duration 1004",
            "copy start - kernel end 0",
            "copy duration 1001",
        ]);
        assert_eq!(trace, want, "wide={wide}\n{text}");
    }
}

/// Synchronising on the stream before writing the value it waits for waits forever,
/// as on a GPU: the program is still waiting in cuStreamSynchronize when killed 2 s
/// later (it printed that it launched, and nothing after).
#[test]
fn synchronising_before_the_write_waits_forever() {
    let model = cost_model("wait-value-hang", MODEL);
    let mut cmd =
        SimCommand::new(Command::new(compile_c("wait_value.c", "wait_value", &[]))).command();
    cmd.arg("sync-first").env("SIMCUDA_COST_MODEL", &model);
    let mut child = gpuprof_tests::TimedChild::spawn(cmd, std::time::Duration::from_secs(60));
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(!child.exited(), "the program stopped waiting");
    let out = child.kill();
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("launched\n", ""),
        "{:?}",
        out.status
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9),
        "killed, not exited"
    );
}
