//! The HTTP side of `--serve`: `GET /metrics` answers the page the draining loop last
//! rendered, anything else 404, on hyper's HTTP/1 server (the Rust HTTP stack
//! production servers run) in a single-threaded tokio runtime on the thread
//! `gpuprof-serve`.
//!
//! A client costs its own connection and nothing else:
//! - a request body is never read (nothing is allocated for it, whatever its
//!   `Content-Length`), and a request head over [`MAX_HEAD_BYTES`] is refused;
//! - the head must arrive within [`HEAD_TIMEOUT`], and a connection lives at most
//!   [`CONNECTION_TIME`] (a client that reads slowly is cut off);
//! - at most [`MAX_CONNECTIONS`] connections are open at once (each a task, not a
//!   thread); one over that is closed at once.

use std::convert::Infallible;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{header, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{watch, Semaphore};

/// The largest request head (request line and headers) read, bytes.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long a client has to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one connection may stay open, requests and responses included.
pub const CONNECTION_TIME: Duration = Duration::from_secs(30);
/// Connections open at once.
pub const MAX_CONNECTIONS: usize = 2048;

/// The text `/metrics` serves, swapped whole by each update (answers share it).
#[derive(Default)]
pub struct Page {
    text: Mutex<Bytes>,
}

impl Page {
    /// Replaces the text `/metrics` serves.
    pub fn publish(&self, text: String) {
        let text = Bytes::from(text);
        if let Ok(mut p) = self.text.lock() {
            *p = text;
        }
    }

    fn current(&self) -> Bytes {
        self.text.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

/// The server thread and the way to stop it.
pub struct MetricsServer {
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Serves `page` on `listener` from a new thread; `content_type` is the page's.
    pub fn start(
        listener: TcpListener,
        page: Arc<Page>,
        content_type: &'static str,
    ) -> std::io::Result<MetricsServer> {
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (stop, stopped) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("gpuprof-serve".into())
            .spawn(move || runtime.block_on(accept(listener, page, content_type, stopped)))?;
        Ok(MetricsServer {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accepts connections until told to stop; each is served on its own task.
async fn accept(
    listener: TcpListener,
    page: Arc<Page>,
    content_type: &'static str,
    mut stop: watch::Receiver<bool>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            _ = stop.changed() => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // Out of descriptors, or the peer gave up: try again shortly.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let page = Arc::clone(&page);
        tokio::spawn(async move {
            let _slot = slot;
            let service = service_fn(move |req| answer(req, Arc::clone(&page), content_type));
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_TIME, connection).await;
        });
    }
}

/// `GET /metrics`: the page (503 until the first is published: a scrape then fails
/// rather than reading no series as a program with none); anything else 404. The
/// request body is not read.
async fn answer(
    req: Request<Incoming>,
    page: Arc<Page>,
    content_type: &'static str,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let response = if req.method() == Method::GET && req.uri().path() == "/metrics" {
        let text = page.current();
        if text.is_empty() {
            Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .header(header::RETRY_AFTER, "1")
                .body(Full::new(Bytes::from_static(
                    b"gpuprof: the first live metrics are not ready yet\n",
                )))
        } else {
            Response::builder()
                .header(header::CONTENT_TYPE, content_type)
                .body(Full::new(text))
        }
    } else {
        Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Full::new(Bytes::from_static(
                b"gpuprof: live metrics are at /metrics\n",
            )))
    };
    Ok(response.unwrap_or_else(|_| Response::new(Full::new(Bytes::new()))))
}
