//! `gpuprof record --serve` against hostile clients while the program runs: a request
//! declaring a 100 GB body, 1000 idle connections, and a client that never reads its
//! answer. `/metrics` keeps answering, and `record` ends with the program's status and
//! a complete session. (The HTTP server used before allocated the declared body when
//! it dropped the request: one such request aborted the collector.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use gpuprof_tests::{free_port, http_get, record_serving_with, report_json, Scratch, TimedChild};

/// Raises this process's open-file limit to its hard limit (the collector, started
/// from here, inherits it): the test holds 1000 sockets.
fn raise_file_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// Waits (at most 60 s) until `/metrics` answers 200.
fn wait_until_served(addr: &str) {
    let start = Instant::now();
    while !matches!(http_get(addr, "/metrics"), Ok((200, _))) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{addr}/metrics never answered"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `/metrics` answers with the live series.
fn assert_answers(addr: &str, while_: &str) {
    let (status, body) =
        http_get(addr, "/metrics").unwrap_or_else(|e| panic!("{while_}: no answer: {e}"));
    assert_eq!(status, 200, "{while_}: {body}");
    assert!(body.contains("gpuprof_program_ended 0"), "{while_}: {body}");
}

#[test]
fn hostile_clients_cost_their_own_connections_only() {
    raise_file_limit();
    let scratch = Scratch::new("serve-hostile");
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let out = scratch.join("out");
    // About 6 s of decode with idle gaps: time for every attack while it runs.
    let args = ["--decode-steps", "60", "--step-gap-ms", "100"];
    let record = TimedChild::spawn(
        record_serving_with(&out, port, 3, 0, &[], &args),
        Duration::from_secs(240),
    );
    wait_until_served(&addr);

    // A request declaring a 100 GB body, with a few bytes of it: answered, and the
    // collector lives on.
    let mut big = TcpStream::connect(&addr).expect("connect");
    big.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        big,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 100000000000\r\n\r\nabcdef"
    )
    .expect("send");
    let mut head = [0u8; 12];
    big.read_exact(&mut head).expect("an answer");
    assert_eq!(&head, b"HTTP/1.1 200");
    drop(big);
    assert_answers(&addr, "after a 100 GB Content-Length");

    // 1000 connections that send nothing, held open.
    let idle: Vec<TcpStream> = (0..1000)
        .map(|_| TcpStream::connect(&addr).expect("an idle connection"))
        .collect();
    assert_answers(&addr, "with 1000 idle connections");

    // A client that asks and never reads: its answer waits in the socket buffers.
    let mut slow = TcpStream::connect(&addr).expect("connect");
    for _ in 0..50 {
        write!(slow, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("send");
    }
    assert_answers(&addr, "beside a client that never reads");

    let o = record.wait();
    drop(idle);
    drop(slow);
    assert_eq!(o.status.code(), Some(0), "gpuprof record: {o:?}");
    assert!(o.stdout.contains("cudarc-llm: ok"), "{o:?}");
    // A complete session: the report reads it whole, with every launch.
    let report = report_json(&out);
    assert_eq!(report["unfinished"], serde_json::json!([]), "{report}");
    let launches: u64 = report["processes"][0]["kernels"].as_u64().expect("kernels");
    assert!(launches > 60 * 21, "{launches} kernels");
}
