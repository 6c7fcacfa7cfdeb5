//! `--serve [ADDR]` of `gpuprof record` and `gpuprof collect`: live metrics at
//! `http://ADDR/metrics` in the Prometheus text format while the program runs
//! (docs/METRICS.md lists the series).
//!
//! The collector's own thread `gpuprof-serve` answers HTTP requests
//! ([`crate::metrics_http`]: hyper, with limits on what a client may cost) with the
//! page the draining loop last rendered: once a second the loop updates
//! the live aggregate ([`gpuprof_collector::live`]) and swaps in a new page, so a
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

use anyhow::{anyhow, Result};
use gpuprof_collector::live::dcgm;
use gpuprof_collector::live::device_fields::add_readings;
use gpuprof_collector::live::exposition::{render, CONTENT_TYPE};
use gpuprof_collector::live::snapshot::Snapshot;
use gpuprof_collector::live::{GpuFields, Live};
use gpuprof_collector::nvml::{DeviceSample, Latest};

use crate::drain::Drainer;
use crate::metrics_http::{MetricsServer, Page};
use crate::report::load_peaks;
use crate::signals;

/// Where `--serve` listens without an address: loopback only, the port after
/// dcgm-exporter's 9400.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9401";

/// `GPUPROF_SERVE`: `--serve` for a collector started from the environment
/// (env-var-only mode runs `gpuprof collect`, which inherits it).
pub const SERVE_ENV: &str = "GPUPROF_SERVE";

/// How often the live values are updated: one DCGM window of the GPU's timeline,
/// so each published window is shown for about as long as it is.
pub const UPDATE_EVERY: Duration = Duration::from_nanos(dcgm::WINDOW_BINS * dcgm::BIN_NS);

#[derive(clap::Args, Clone, Default)]
pub struct ServeArgs {
    /// Serve live metrics at http://ADDR/metrics (Prometheus text format:
    /// dcgm-exporter's DCGM_FI_* per GPU and gpuprof_* series, see
    /// docs/METRICS.md) while the program runs. ADDR defaults to 127.0.0.1:9401;
    /// $GPUPROF_SERVE sets it when the option is not given.
    #[arg(long, value_name = "ADDR", num_args = 0..=1,
          default_missing_value = DEFAULT_ADDR, require_equals = false)]
    serve: Option<String>,
    /// With --serve: kernel names (and NVTX range names) that get series of their
    /// own, the first ones by GPU time; the others are summed as "other".
    #[arg(long, value_name = "N", default_value_t = 20)]
    serve_top: usize,
    /// With --serve: once the program has ended, keep serving its final values for
    /// S seconds (SIGINT, SIGTERM or SIGHUP ends this sooner), so that a scraper
    /// reads them. The DCGM fields lag the GPU by 5 s: their last windows are shown
    /// one per second meanwhile (the last second holds the rest), so 5 or more
    /// keeps their average over the run equal to the report's "GPU activity".
    #[arg(long, value_name = "S", default_value_t = 0)]
    serve_linger: u64,
}

impl ServeArgs {
    /// The address to serve on, from the option or `$GPUPROF_SERVE`; `None`: off.
    fn addr(&self) -> Option<String> {
        self.serve.clone().or_else(|| {
            std::env::var(SERVE_ENV)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        })
    }

    /// Starts serving when asked: binds ADDR (an error names it), and gives `drainer`
    /// the live aggregate. Call before the program starts, so a bad address stops
    /// everything before anything runs.
    pub fn start(&self) -> Result<Option<Serving>> {
        let Some(addr) = self.addr() else {
            return Ok(None);
        };
        let server = Server::bind(&addr)?;
        Ok(Some(Serving {
            server,
            top: self.serve_top,
            linger: Duration::from_secs(self.serve_linger),
            last: Instant::now(),
            nvml: None,
            hostname: hostname(),
        }))
    }
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
    linger: Duration,
    last: Instant,
    /// The NVML sampler's latest readings, for the `DCGM_FI_DEV_*` series.
    nvml: Option<Latest>,
    hostname: String,
}

impl Serving {
    /// Gives `drainer` the live aggregate (peaks as `gpuprof report` takes them:
    /// `$GPUPROF_PEAKS`) and says where the metrics are.
    pub fn attach(&mut self, drainer: &mut Drainer) {
        let peaks = load_peaks(None).unwrap_or_else(|e| {
            eprintln!("gpuprof: warning: {e:#}; the live metrics use the built-in peaks");
            Default::default()
        });
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
