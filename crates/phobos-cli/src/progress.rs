//! A line on standard error while a simulation runs long: after the first
//! second, then every five, so a user who asked for a big launch sees that
//! it is working. `sim`, `explain` and `profile` wrap their runs in it.
//!
//! `PHOBOS_PROGRESS_AFTER_MS` sets the first delay in milliseconds instead
//! of one second. It exists so a test can see the line without a run that
//! takes seconds; it changes nothing but when the line appears.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Progress {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl Progress {
    /// Starts reporting `what` (e.g. "simulating `k`: 64 CTAs x 256
    /// threads") with the elapsed time.
    pub fn start(what: String) -> Progress {
        let first = std::env::var("PHOBOS_PROGRESS_AFTER_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(Duration::from_secs(1), Duration::from_millis);
        let (stop, stopped) = channel::<()>();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut wait = first;
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(wait) {
                eprintln!("{what}: {:.1} s so far", started.elapsed().as_secs_f64());
                wait = Duration::from_secs(5);
            }
        });
        Progress { stop, thread }
    }

    /// Ends the reports; returns once the reporting thread has.
    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}
