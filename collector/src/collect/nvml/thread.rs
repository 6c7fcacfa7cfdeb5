//! [`SamplingThread`]: a [`Sampler`] read every interval on a thread of its own.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::sampler::Sampler;
use crate::store::device_samples::DeviceSample;

/// The latest reading of every device (empty before the first), for whoever shows live
/// values.
pub type Latest = Arc<Mutex<Vec<DeviceSample>>>;

/// Samples at start, then every interval until stopped, then once more.
pub struct SamplingThread {
    stop: Sender<()>,
    readings: Receiver<Vec<DeviceSample>>,
    latest: Latest,
    handle: Option<JoinHandle<()>>,
}

impl SamplingThread {
    /// Starts sampling with `sampler` every `interval`.
    pub fn start(mut sampler: Sampler, interval: Duration) -> SamplingThread {
        let (stop, stopped) = mpsc::channel::<()>();
        let (send, readings) = mpsc::channel();
        let latest: Latest = Arc::default();
        let shared = Arc::clone(&latest);
        let body = move || loop {
            let reading = sampler.sample();
            if let Ok(mut l) = shared.lock() {
                l.clone_from(&reading);
            }
            if send.send(reading).is_err() {
                return;
            }
            match stopped.recv_timeout(interval) {
                Err(RecvTimeoutError::Timeout) => {}
                // Stop asked (or the owner is gone): one last reading, then done.
                _ => {
                    let _ = send.send(sampler.sample());
                    return;
                }
            }
        };
        // A thread cannot fail to start but for resources; without one, no telemetry.
        let handle = std::thread::Builder::new()
            .name("gpuprof-nvml".into())
            .spawn(body)
            .ok();
        SamplingThread {
            stop,
            readings,
            latest,
            handle,
        }
    }

    /// The latest reading, shared.
    pub fn latest(&self) -> Latest {
        Arc::clone(&self.latest)
    }

    /// The readings taken since the last call, oldest first.
    pub fn take(&self) -> Vec<DeviceSample> {
        self.readings.try_iter().flatten().collect()
    }

    /// Takes a last reading, stops the thread and returns the readings not yet taken.
    pub fn stop(self) -> Vec<DeviceSample> {
        let _ = self.stop.send(());
        if let Some(h) = self.handle {
            let _ = h.join();
        }
        self.readings.try_iter().flatten().collect()
    }
}
