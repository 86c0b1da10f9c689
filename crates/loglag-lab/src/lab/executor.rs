//! The seam between a run's phases (`run_one` in `lab/mod.rs`: warm-up, measure, stop,
//! drain, verify) and what they drive: the sink reader, the API and the load.
//! [`Processes`] starts the real ones, child processes and a load generator on a tokio
//! runtime; the phases' unit tests (`lab/tests.rs`) give a scripted executor instead,
//! so that every phase and its accounting runs in milliseconds without a process.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::api::condition::RunCondition;
use crate::api::control::{ApiStats, ControlClient};
use crate::api::launch::{ApiKind, ApiProc, AppExit};
use crate::load::{LoadConfig, LoadResult};
use crate::reader::client::ReaderProc;
use crate::reader::{FinalReport, ReadConfig, ReaderStats};
use crate::sys::signal::Signal;

/// Starts what a run needs, and runs its load.
pub trait Executor {
    /// A reader of the run's log pipe at `fifo`, capped as `read` says.
    fn start_reader(
        &self,
        fifo: &Path,
        read: ReadConfig,
        pipe_size: Option<usize>,
    ) -> io::Result<Box<dyn RunReader>>;

    /// The API, logging into `fifo` (or where `kind` says), ready for requests.
    fn start_api(
        &self,
        kind: ApiKind<'_>,
        condition: &RunCondition,
        fifo: &Path,
        stderr: &Path,
    ) -> io::Result<Box<dyn RunApi>>;

    /// Runs `config`'s load to its end; `None` if `cancel` was set meanwhile.
    fn load(&self, config: &LoadConfig, cancel: &AtomicBool) -> Option<LoadResult>;

    /// The clock of the phases' deadlines (`--warmup-timeout`, `--drain-timeout`) and
    /// quiet periods: real time here. The phases' tests keep a clock of their own,
    /// which [`Executor::pause`] advances, so a timeout is reached by counting looks,
    /// not by sleeping.
    fn now(&self) -> Instant {
        Instant::now()
    }

    /// Waits between two looks at the reader and the API.
    fn pause(&self, length: Duration) {
        std::thread::sleep(length);
    }
}

/// The sink reader of one run.
pub trait RunReader: Send {
    /// What it has read since its start or last reset.
    fn stats(&mut self) -> io::Result<ReaderStats>;
    /// Zeroes its counters (after the warm-up).
    fn reset(&mut self) -> io::Result<()>;
    /// Its last counts, and what it found in the lines, once the log has ended.
    fn finish(self: Box<Self>) -> io::Result<FinalReport>;
    /// Its process, to limit and to measure (`None`: not a process).
    fn pid(&self) -> Option<u32>;
}

/// What the built-in API's control channel answers.
pub trait ApiControl: Send + Sync {
    fn stats(&self) -> io::Result<ApiStats>;
    /// Zeroes its counters (after the warm-up).
    fn reset(&self) -> io::Result<()>;
    /// Writes what its logger still buffers, as it would at exit.
    fn flush(&self) -> io::Result<()>;
    /// Takes the network conditions' collector down for `length`.
    fn outage(&self, length: Duration) -> io::Result<()>;
}

/// The API of one run: the built-in one, or an `--app`.
pub trait RunApi {
    /// Where it serves HTTP.
    fn http(&self) -> SocketAddr;
    /// Its control channel: the built-in API has one, an `--app` none.
    fn control(&self) -> Option<Arc<dyn ApiControl>>;
    /// Its counters, through the control channel (`None` for an `--app`).
    fn stats(&self) -> io::Result<Option<ApiStats>>;
    /// An error naming how it exited, if it did.
    fn check_alive(&mut self) -> io::Result<()>;
    /// Stops it as a deployment does (`signal`, then up to `timeout`, then SIGKILL) and
    /// ends whatever it started.
    fn stop(&mut self, signal: Signal, timeout: Duration) -> AppExit;
    /// Runs `command` (an `--app-recover`, filled in) after its stop, as its next
    /// start would: an error if it fails or outlasts `timeout`; the records it says it
    /// delivered, if it says.
    fn recover(&mut self, command: &str, timeout: Duration) -> io::Result<Option<u64>>;
    /// Ends it at the end of a run that did not stop it by `stop`.
    fn end(&mut self);
    /// Stops copying an `--app-log FILE` into the pipe after a last look.
    fn stop_following(&mut self) -> io::Result<()>;
    /// Its main process (`None`: not a process).
    fn pid(&self) -> Option<u32>;
    /// CPU seconds it has used, everything it forked included where that is known.
    fn cpu_seconds(&self) -> Option<f64>;
    /// Its processes now, everything it forked included where that is known (none:
    /// not a process).
    fn processes(&self) -> Vec<u32> {
        self.pid().into_iter().collect()
    }
}

/// The name of the load generator's runtime threads: how the lab tells the
/// generator's CPU wait from its other threads' (the sampler, the main thread).
pub const GENERATOR_THREAD: &str = "load-generator";

/// The real executor: child processes of the `loglag` executable at `exe`, an
/// `--app`'s shell command, and the load generator on the runtime each loop runs best
/// on ([`crate::load::runtime`]: one worker for an open loop, a worker per core for a
/// closed one; threads named [`GENERATOR_THREAD`]).
#[derive(Debug)]
pub struct Processes {
    exe: PathBuf,
    open_loop: tokio::runtime::Runtime,
    closed_loop: tokio::runtime::Runtime,
}

impl Processes {
    pub fn new(exe: &Path) -> io::Result<Processes> {
        Ok(Processes {
            exe: exe.to_owned(),
            open_loop: crate::load::runtime(false, GENERATOR_THREAD)?,
            closed_loop: crate::load::runtime(true, GENERATOR_THREAD)?,
        })
    }
}

impl Executor for Processes {
    fn start_reader(
        &self,
        fifo: &Path,
        read: ReadConfig,
        pipe_size: Option<usize>,
    ) -> io::Result<Box<dyn RunReader>> {
        Ok(Box::new(ReaderProc::start(
            &self.exe, fifo, read, pipe_size,
        )?))
    }

    fn start_api(
        &self,
        kind: ApiKind<'_>,
        condition: &RunCondition,
        fifo: &Path,
        stderr: &Path,
    ) -> io::Result<Box<dyn RunApi>> {
        Ok(Box::new(ApiProc::start(kind, condition, fifo, stderr)?))
    }

    fn load(&self, config: &LoadConfig, cancel: &AtomicBool) -> Option<LoadResult> {
        let runtime = if config.closed.is_some() {
            &self.closed_loop
        } else {
            &self.open_loop
        };
        runtime.block_on(async {
            tokio::select! {
                r = crate::load::run(config) => Some(r),
                () = super::watch(cancel) => None,
            }
        })
    }
}

impl RunReader for ReaderProc {
    fn stats(&mut self) -> io::Result<ReaderStats> {
        ReaderProc::stats(self)
    }

    fn reset(&mut self) -> io::Result<()> {
        ReaderProc::reset(self)
    }

    fn finish(self: Box<Self>) -> io::Result<FinalReport> {
        ReaderProc::finish(*self)
    }

    fn pid(&self) -> Option<u32> {
        Some(self.guard.pid())
    }
}

impl ApiControl for ControlClient {
    fn stats(&self) -> io::Result<ApiStats> {
        ControlClient::stats(self)
    }

    fn reset(&self) -> io::Result<()> {
        ControlClient::reset(self)
    }

    fn flush(&self) -> io::Result<()> {
        ControlClient::flush(self)
    }

    fn outage(&self, length: Duration) -> io::Result<()> {
        ControlClient::outage(self, length)
    }
}

impl RunApi for ApiProc {
    fn http(&self) -> SocketAddr {
        self.http
    }

    fn control(&self) -> Option<Arc<dyn ApiControl>> {
        self.control
            .clone()
            .map(|c| Arc::new(c) as Arc<dyn ApiControl>)
    }

    fn stats(&self) -> io::Result<Option<ApiStats>> {
        ApiProc::stats(self)
    }

    fn check_alive(&mut self) -> io::Result<()> {
        ApiProc::check_alive(self)
    }

    fn stop(&mut self, signal: Signal, timeout: Duration) -> AppExit {
        ApiProc::stop(self, signal, timeout)
    }

    fn recover(&mut self, command: &str, timeout: Duration) -> io::Result<Option<u64>> {
        ApiProc::recover(self, command, timeout)
    }

    fn end(&mut self) {
        self.guard.stop(Duration::from_secs(2));
    }

    fn stop_following(&mut self) -> io::Result<()> {
        ApiProc::stop_following(self)
    }

    fn pid(&self) -> Option<u32> {
        Some(self.guard.pid())
    }

    fn cpu_seconds(&self) -> Option<f64> {
        ApiProc::cpu_seconds(self)
    }

    fn processes(&self) -> Vec<u32> {
        ApiProc::processes(self)
    }
}
