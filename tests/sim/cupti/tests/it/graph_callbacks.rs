//! CUDA graphs as a CUPTI subscriber sees them on the simulated stack: a C client
//! (`tests/c/graph_callbacks.c`, compiled against each release's CUPTI headers and
//! decoding records with that release's structs) captures a kernel launch and a memset,
//! instantiates the graph twice and launches both executable graphs.
//!
//! Needs the workspace built (`cargo build --workspace`), the NVIDIA wheels
//! (`python3 scripts/nvidia-wheels.py fetch`) and a C compiler.

use crate::common::{compile, include_dirs, lib_dir, lines, run};
use cupti_sys::records::RELEASES;

fn record_struct(release: &str, family: &str) -> &'static str {
    let r = RELEASES
        .iter()
        .find(|r| r.name == release)
        .expect("release");
    r.records.iter().find(|x| x.0 == family).expect("family").1
}

fn client_output(release: &str) -> Vec<String> {
    let mut args: Vec<String> = include_dirs(release)
        .iter()
        .map(|d| format!("-I{}", d.display()))
        .collect();
    args.push(format!(
        "-DCUPTI_RECORD_KERNEL={}",
        record_struct(release, "Kernel")
    ));
    args.push(format!(
        "-DCUPTI_RECORD_MEMSET={}",
        record_struct(release, "Memset")
    ));
    args.extend(["-Wall".into(), "-Werror".into()]);
    let client = compile(
        "graph_callbacks.c",
        &format!("graph-callbacks-{release}-{}", std::process::id()),
        &args,
    );
    let (dir, cupti) = lib_dir("graphs", release);
    let out = run(
        &client,
        &[&cupti],
        &[
            ("LD_LIBRARY_PATH", dir.as_os_str()),
            ("SIMCUPTI_VERSION", release.as_ref()),
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&client);
    lines(&out)
}

/// The order of callbacks, and the node ids:
/// - a node captured from a launch (or memset) on a capturing stream is reported by
///   `GRAPHNODE_CREATED` between that call's driver API enter and exit callbacks, so a
///   subscriber ties it to the call's correlation id;
/// - each instantiation (`cuGraphInstantiateWithFlags`) reports
///   `GRAPHEXEC_CREATE_STARTING`, then per node, in node order, `GRAPHNODE_CREATED` and
///   `GRAPHNODE_CLONED` for a clone with a new id in the executable graph's copy of the
///   graph (graph ids 2 and 3), with `originalGraph` / `originalNode` the graph and node
///   it was cloned from and `graphExec` the executable graph the call returns; then
///   `GRAPHEXEC_CREATED`;
/// - kernel and memset records of each launch carry the clones' node ids (3, 4 for the
///   first executable graph, 5, 6 for the second), the graph's id and the launch's
///   correlation id; mapping clones back through `GRAPHNODE_CLONED` (as NVIDIA's
///   cuda_graphs_trace sample does) finds the launch and memset calls that created the
///   original nodes (correlation ids 2 and 3);
/// - the graph itself keeps its own nodes (1, 2).
fn check(release: &str) {
    let got = client_output(release);
    let expected = "\
cuInit 0
subscribe 0
enable driver 0
enable resource 0
enter cuStreamBeginCapture_v2 corr=1
  GRAPH_CREATED graph=1 graphExec=NULL
exit  cuStreamBeginCapture_v2 corr=1
enter cuLaunchKernel corr=2
  GRAPHNODE_CREATED graph=1 node=1 type=0 graphExec=NULL
exit  cuLaunchKernel corr=2
enter cuMemsetD32Async corr=3
  GRAPHNODE_CREATED graph=1 node=2 type=2 graphExec=NULL
exit  cuMemsetD32Async corr=3
enter cuStreamEndCapture corr=4
exit  cuStreamEndCapture corr=4
enter cuGraphInstantiateWithFlags corr=5
  GRAPHEXEC_CREATE_STARTING graph=1 graphExec=NULL
  GRAPHNODE_CREATED graph=2 node=3 type=0 graphExec=NULL
  GRAPHNODE_CLONED graph=2 node=3 type=0 originalGraph=1 originalNode=1 graphExec=set
  GRAPHNODE_CREATED graph=2 node=4 type=2 graphExec=NULL
  GRAPHNODE_CLONED graph=2 node=4 type=2 originalGraph=1 originalNode=2 graphExec=set
  GRAPHEXEC_CREATED graph=1 graphExec=set
exit  cuGraphInstantiateWithFlags corr=5
cloned graphExec is the one returned: 1
enter cuGraphInstantiateWithFlags corr=6
  GRAPHEXEC_CREATE_STARTING graph=1 graphExec=NULL
  GRAPHNODE_CREATED graph=3 node=5 type=0 graphExec=NULL
  GRAPHNODE_CLONED graph=3 node=5 type=0 originalGraph=1 originalNode=1 graphExec=set
  GRAPHNODE_CREATED graph=3 node=6 type=2 graphExec=NULL
  GRAPHNODE_CLONED graph=3 node=6 type=2 originalGraph=1 originalNode=2 graphExec=set
  GRAPHEXEC_CREATED graph=1 graphExec=set
exit  cuGraphInstantiateWithFlags corr=6
cloned graphExec is the one returned: 1
enter cuGraphLaunch corr=7
exit  cuGraphLaunch corr=7
enter cuGraphLaunch corr=8
exit  cuGraphLaunch corr=8
enter cuStreamSynchronize corr=9
exit  cuStreamSynchronize corr=9
enter cuGraphExecDestroy corr=10
  GRAPHEXEC_DESTROY_STARTING graph=1 graphExec=set
exit  cuGraphExecDestroy corr=10
enter cuGraphExecDestroy corr=11
  GRAPHEXEC_DESTROY_STARTING graph=1 graphExec=set
exit  cuGraphExecDestroy corr=11
enter cuGraphGetNodes corr=12
exit  cuGraphGetNodes corr=12
graph 1 nodes: 1 2
flush 0
record scale corr=7 graphId=1 graphNodeId=3 node created by corr=2
record memset corr=7 graphId=1 graphNodeId=4 node created by corr=3
record scale corr=8 graphId=1 graphNodeId=5 node created by corr=2
record memset corr=8 graphId=1 graphNodeId=6 node created by corr=3
unsubscribe 0";
    let expected: Vec<&str> = expected.lines().collect();
    assert_eq!(got, expected, "release {release}");
}

#[test]
fn graph_callbacks_12_9() {
    check("12.9");
}

#[test]
fn graph_callbacks_13_4() {
    check("13.4");
}
