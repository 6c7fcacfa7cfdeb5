//! `--serve [ADDR]` of `gpuprof record` and `gpuprof collect`: live metrics at
//! `http://ADDR/metrics` in the Prometheus text format while the program runs
//! (docs/METRICS.md lists the series).
//!
//! The collector's own thread `gpuprof-serve` answers HTTP requests
//! ([`crate::collect::metrics_http`]: hyper, with limits on what a client may cost) with the
//! page the draining loop last rendered: once a second the loop updates
//! the live aggregate ([`crate::analysis::live`]) and swaps in a new page, so a
//! scrape never waits for draining and draining never waits for a scrape. Nothing
//! runs in the profiled processes for it.
//!
//! At the end the final values are published (`gpuprof_program_ended` 1); with
//! `--serve-linger S` the server stays up S more seconds so that scrapers read them,
//! or until SIGINT, SIGTERM or SIGHUP, while the DCGM windows not yet shown follow one
//! per second.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::analysis::live::dcgm;
use crate::analysis::live::device_fields::add_readings;
use crate::analysis::live::snapshot::Snapshot;
use crate::analysis::live::{GpuFields, Live};
use crate::analysis::roofline::peaks::Overrides;
use crate::collect::nvml::Latest;
use crate::output::prometheus::{render, CONTENT_TYPE};
use crate::store::device_samples::DeviceSample;
use anyhow::{anyhow, Result};

use crate::collect::drain::Drainer;
use crate::collect::metrics_http::{MetricsServer, Page};
use crate::collect::signals;

/// Where `--serve` listens without an address: loopback only, the port after
/// dcgm-exporter's 9400.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9401";

/// `GPUPROF_SERVE`: `--serve` for a collector started from the environment
/// (env-var-only mode runs `gpuprof collect`, which inherits it).
pub const SERVE_ENV: &str = "GPUPROF_SERVE";

/// How often the live values are updated: one DCGM window of the GPU's timeline,
/// so each published window is shown for about as long as it is.
pub const UPDATE_EVERY: Duration = Duration::from_nanos(dcgm::WINDOW_BINS * dcgm::BIN_NS);

/// What `--serve` was asked for (the command line's `ServeArgs`, resolved).
pub struct ServeSettings {
    /// HOST:PORT to listen on.
    pub addr: String,
    /// Kernel and range names with series of their own.
    pub top: usize,
    /// How long the final values stay served after the program ended.
    pub linger: Duration,
    /// The peaks the live MFU and MBU are computed against.
    pub peaks: Overrides,
}

struct Server {
    page: Arc<Page>,
    /// Stops the server thread when dropped.
    _http: MetricsServer,
    addr: SocketAddr,
}

impl Server {
    fn bind(addr: &str) -> Result<Server> {
        let resolved: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|e| {
                anyhow!("--serve {addr}: not an address to listen on (HOST:PORT, e.g. {DEFAULT_ADDR}): {e}")
            })?
            .collect();
        let listener = TcpListener::bind(&resolved[..])
            .map_err(|e| anyhow!("--serve {addr}: cannot listen there: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| anyhow!("--serve {addr}: {e}"))?;
        let page = Arc::new(Page::default());
        let http = MetricsServer::start(listener, Arc::clone(&page), CONTENT_TYPE)
            .map_err(|e| anyhow!("--serve {addr}: cannot start the server: {e}"))?;
        Ok(Server {
            page,
            _http: http,
            addr: local,
        })
    }

    fn publish(&self, text: String) {
        self.page.publish(text);
    }
}

/// Each GPU's DCGM profiling fields replaced by `fields` (by UUID), then NVML's
/// `readings` added as every update adds them.
fn set_fields(s: &mut Snapshot, mut fields: GpuFields, readings: &[DeviceSample], hostname: &str) {
    for g in &mut s.gpus {
        if let Some(f) = fields.remove(&g.uuid) {
            g.fields = f;
        }
    }
    add_readings(&mut s.gpus, readings, hostname);
}

/// This machine's host name (for GPUs only NVML reports), empty when unknown.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// A server and the live aggregate's update clock.
pub struct Serving {
    server: Server,
    top: usize,
    peaks: Option<Overrides>,
    linger: Duration,
    last: Instant,
    /// The NVML sampler's latest readings, for the `DCGM_FI_DEV_*` series.
    nvml: Option<Latest>,
    hostname: String,
}

impl Serving {
    /// Binds the address (an error names it). Call before the program starts, so a
    /// bad address stops everything before anything runs.
    pub fn start(settings: ServeSettings) -> Result<Serving> {
        Ok(Serving {
            server: Server::bind(&settings.addr)?,
            top: settings.top,
            peaks: Some(settings.peaks),
            linger: settings.linger,
            last: Instant::now(),
            nvml: None,
            hostname: hostname(),
        })
    }

    /// Gives `drainer` the live aggregate and says where the metrics are.
    pub fn attach(&mut self, drainer: &mut Drainer) {
        let peaks = self.peaks.take().unwrap_or_default();
        drainer.serve(Live::new(self.top, peaks));
        eprintln!(
            "gpuprof: live metrics at http://{}/metrics",
            self.server.addr
        );
        self.update(drainer);
    }

    /// Shows NVML's latest readings (`gpuprof record`'s sampler) with each update.
    pub fn nvml(&mut self, latest: Latest) {
        self.nvml = Some(latest);
    }

    fn update(&mut self, drainer: &mut Drainer) {
        self.last = Instant::now();
        if let Some(mut s) = drainer.live_update() {
            let readings = self
                .nvml
                .as_ref()
                .and_then(|l| l.lock().ok().map(|l| l.clone()))
                .unwrap_or_default();
            self.publish(&mut s, &readings);
        }
    }

    fn publish(&self, s: &mut Snapshot, readings: &[DeviceSample]) {
        add_readings(&mut s.gpus, readings, &self.hostname);
        self.server.publish(render(s));
    }

    /// Updates the page when [`UPDATE_EVERY`] has passed since the last update.
    pub fn tick(&mut self, drainer: &mut Drainer) {
        if self.last.elapsed() >= UPDATE_EVERY {
            self.update(drainer);
        }
    }

    /// Publishes the final values (call once every record is drained), with NVML's
    /// last `readings` (taken after the program ended) when there are any. The DCGM
    /// windows not yet shown (the last [`dcgm::LAG_NS`] of the run) follow one per
    /// [`UPDATE_EVERY`] on a thread, as long as the linger lasts (the last one holds
    /// whatever is left), so each window is shown for about as long as it is.
    pub fn finish(&mut self, drainer: &mut Drainer, readings: &[DeviceSample]) {
        let steps = usize::try_from(self.linger.as_secs()).unwrap_or(usize::MAX);
        let Some((mut s, tail)) = drainer.live_finish(steps) else {
            return;
        };
        let readings = if readings.is_empty() {
            self.nvml
                .as_ref()
                .and_then(|l| l.lock().ok().map(|l| l.clone()))
                .unwrap_or_default()
        } else {
            readings.to_vec()
        };
        let page = Arc::clone(&self.server.page);
        let mut tail = tail.into_iter();
        // With no linger, everything at once.
        let now = if steps == 0 { tail.next() } else { None };
        set_fields(&mut s, now.unwrap_or_default(), &readings, &self.hostname);
        page.publish(render(&s));
        if steps > 0 {
            let hostname = self.hostname.clone();
            // Detached: it ends with its last window or with the process.
            std::thread::spawn(move || {
                for fields in tail {
                    std::thread::sleep(UPDATE_EVERY);
                    set_fields(&mut s, fields, &readings, &hostname);
                    page.publish(render(&s));
                }
            });
        }
    }

    /// Serves the final values for the linger time (a stop signal ends it), then
    /// stops the server.
    pub fn linger(self) {
        let until = Instant::now() + self.linger;
        while Instant::now() < until {
            let sig = signals::poll();
            if sig.stop || sig.forward.is_some() || sig.forward_interrupt {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
