//! `tests/c/driver_workload.c`: a C client of the simulated driver API, and what it
//! prints under a cost model that makes its output exact.

/// Every kernel lasts `1000 + blocks` ns: `driver_workload`'s output is then exact.
pub const DRIVER_WORKLOAD_MODEL: &str =
    "[[kernel]]\nname = \"*\"\nduration_ns = \"1000 + blocks\"\n";

/// What `driver_workload` prints with [`DRIVER_WORKLOAD_MODEL`], profiled or not.
pub const DRIVER_WORKLOAD_STDOUT: &str = "alloc 0x700000000000
round trip equal
fill regs=40 shared=1024 max_threads=1024
elapsed 0.002020 ms
graph nodes 3
graph replayed 3 times
bad function handle 400
block too large 1
bad stream 400
range past end 1
not device memory 1
unknown function 500
double free 1
end capture not capturing 401
destroyed context 201
";
