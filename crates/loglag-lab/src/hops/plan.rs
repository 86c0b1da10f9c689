//! What `lab hops` is asked to do: the plan, its defaults, and the values it refuses.

use std::path::PathBuf;
use std::time::Duration;

use super::service::{Calls, Work};
use crate::load::Connection;
use crate::plan_error::PlanError;
use crate::sys::units::parse_duration;

/// What `lab hops` is asked to do.
#[derive(Debug, Clone)]
pub struct HopsPlan {
    /// Closed loop with this many users, or open loop at `rate`.
    pub users: Option<usize>,
    pub rate: Option<f64>,
    pub duration: Duration,
    pub calls: Calls,
    pub connection: Connection,
    pub work: Work,
    pub work_time: Duration,
    pub body_bytes: usize,
    pub threads: usize,
    pub trace_every: u64,
    /// Also run each topology untraced, to report what tracing cost.
    pub overhead: bool,
    pub warmup: usize,
    pub exe: PathBuf,
    /// Each service in its own network namespace, linked by veth pairs (root only).
    pub netns: bool,
    /// `--sweep`: after the runs above, both topologies untraced at each of these
    /// offered rates (open loop), for this long each.
    pub sweep: Option<(Vec<f64>, Duration)>,
}

/// `lab hops`'s defaults, stated once: the CLI shows them in `--help`.
pub mod defaults {
    /// Open-loop requests per second when neither a rate nor users are given: well
    /// below both topologies' capacity on 2 cores, as the reference's unsaturated
    /// service was.
    pub const RATE: f64 = 200.0;
    /// How long each topology is loaded.
    pub const DURATION: &str = "10s";
    /// Work per step.
    pub const WORK_TIME: &str = "1ms";
    /// Bytes of each step's response body.
    pub const BODY_BYTES: usize = 256;
    /// One request in this many is traced.
    pub const TRACE_EVERY: u64 = 10;
    /// `--sweep`'s offered rates, requests/s, and its load per point.
    pub const SWEEP_RATES: &str = "100,200,500,1000,2000,5000,10000,20000";
    pub const SWEEP_DURATION: &str = "3s";
    /// Requests before the measured load.
    pub const WARMUP: usize = 5;
    /// The smallest response body: the JSON around the padding.
    pub const MIN_BODY_BYTES: usize = 64;
}

impl HopsPlan {
    /// Checks what the plan's own values must satisfy, whoever built it.
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err(PlanError::NotPositive(
                "--rate",
                "a positive number of requests per second",
            ));
        }
        if self.users == Some(0) {
            return Err(PlanError::AtLeastOne("--users", ""));
        }
        if self.duration.is_zero() {
            return Err(PlanError::NotPositive("--duration", "positive"));
        }
        if self.threads == 0 {
            return Err(PlanError::AtLeastOne("--threads", ""));
        }
        if self.body_bytes < defaults::MIN_BODY_BYTES {
            return Err(PlanError::OutOfRange(
                "--body-bytes",
                "at least 64 (the JSON around the padding)",
            ));
        }
        if let Some((rates, duration)) = &self.sweep {
            if rates.is_empty() || rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
                return Err(PlanError::NotPositive(
                    "--sweep-rates",
                    "positive numbers of requests per second",
                ));
            }
            if duration.is_zero() {
                return Err(PlanError::NotPositive("--sweep-duration", "positive"));
            }
        }
        Ok(())
    }
}

/// Every flag of `loglag lab hops` that shapes its runs (clap's derive: each flag's help
/// beside the field it sets); [`HopsRequest::plan`] turns it into a checked plan.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "EXAMPLES:
    loglag lab hops                                  # the reference's conditions: 200 req/s, new connections
    loglag lab hops --duration 5s --out hops --report
    loglag lab hops --users 500 --connection keepalive  # closed loop at capacity: queueing, not the hop
    loglag lab hops --rate 2000 --calls concurrent
    loglag lab hops --sweep --no-overhead --out hops --report   # latency against load: each knee

WHAT IT RUNS:
    monolith   order, payment and inventory as function calls in one process
    services   order calls payment and inventory over HTTP (hyper), W3C traceparent
               propagated; each process on loopback
    Each step does --work-time of work (1 ms, as in the reference); both return the same
    bytes. One request in --trace-every is traced: every handler and outgoing call is a
    tracing span, written through a loglag pipeline; --out gets spans.otlp.json (OTLP/JSON,
    one document: Jaeger 1.55+ imports it via the UI's upload; JSON Lines does not import).
    Each topology also runs with tracing off, to show what collecting spans cost.")]
pub struct HopsRequest {
    /// Closed loop with this many users instead of --rate, each sending its next request
    /// when the last is answered (no think time: each topology then runs at its
    /// capacity, and the lab says so).
    #[arg(long, conflicts_with = "rate", value_parser = clap::value_parser!(u64).range(1..))]
    pub users: Option<u64>,
    #[arg(long, help = format!(
        "Open loop at this many requests per second [default: {}, below both topologies' capacity on 2 cores, as the reference's unsaturated service was]",
        defaults::RATE
    ))]
    pub rate: Option<f64>,
    /// How long each topology is loaded.
    #[arg(long, default_value = defaults::DURATION, value_parser = parse_duration)]
    pub duration: Duration,
    /// order's two calls: sequential (the reference) or concurrent.
    #[arg(long, default_value = "sequential")]
    pub calls: Calls,
    /// order's outgoing connections: new (one per call, as the reference's
    /// `httpx.Client()` per request) or keepalive (pooled).
    #[arg(long, default_value = "new")]
    pub connection: Connection,
    /// How a step works: sleep (async, the thread is free) or spin (busy).
    #[arg(long, default_value = "sleep")]
    pub work: Work,
    /// Work per step.
    #[arg(long, default_value = defaults::WORK_TIME, value_parser = parse_duration)]
    pub work_time: Duration,
    /// Bytes of each step's response body (the serialisation cost).
    #[arg(long, default_value_t = defaults::BODY_BYTES)]
    pub body_bytes: usize,
    /// Worker threads per process [default: one per core].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Trace one request in this many.
    #[arg(long, default_value_t = defaults::TRACE_EVERY, value_parser = clap::value_parser!(u64).range(1..))]
    pub trace_every: u64,
    /// Skip the untraced runs that measure tracing's own cost.
    #[arg(long)]
    pub no_overhead: bool,
    /// Also load both topologies (untraced) at each of --sweep-rates, open loop: p50 and
    /// p99 against offered load, the knee where each stops keeping up, its capacity,
    /// and the tax at each load.
    #[arg(long)]
    pub sweep: bool,
    /// The offered rates of --sweep, requests/s; it stops early once both topologies
    /// serve under half the offer.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = defaults::SWEEP_RATES
    )]
    pub sweep_rates: Vec<f64>,
    /// Load per --sweep point.
    #[arg(long, default_value = defaults::SWEEP_DURATION, value_parser = parse_duration)]
    pub sweep_duration: Duration,
    /// Give each service (and the monolith) its own network namespace, joined by veth
    /// pairs, so every hop crosses a real network stack instead of loopback. Needs root
    /// and `ip` (iproute2); every namespace is removed on exit.
    #[arg(long)]
    pub netns: bool,
}

impl HopsRequest {
    /// The checked plan: the reference's unsaturated open loop unless users or a rate
    /// are given, a thread per core unless said; `exe` is the `loglag` the services run.
    pub fn plan(&self, exe: PathBuf) -> Result<HopsPlan, PlanError> {
        let users = self.users.map(|n| n as usize);
        let plan = HopsPlan {
            users,
            rate: users.is_none().then(|| self.rate.unwrap_or(defaults::RATE)),
            duration: self.duration,
            calls: self.calls,
            connection: self.connection,
            work: self.work,
            work_time: self.work_time,
            body_bytes: self.body_bytes,
            threads: self
                .threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            trace_every: self.trace_every,
            overhead: !self.no_overhead,
            warmup: defaults::WARMUP,
            exe,
            netns: self.netns,
            sweep: self.sweep.then(|| {
                let mut rates = self.sweep_rates.clone();
                rates.sort_by(f64::total_cmp);
                rates.dedup();
                (rates, self.sweep_duration)
            }),
        };
        plan.validate()?;
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value the plan cannot run with is refused naming its flag, by the plan
    /// itself (the CLI only builds it); a good plan passes.
    #[test]
    fn a_plan_names_what_it_cannot_run_with() {
        let good = || HopsPlan {
            users: None,
            rate: Some(defaults::RATE),
            duration: Duration::from_secs(1),
            calls: Calls::default(),
            connection: Connection::New,
            work: Work::default(),
            work_time: Duration::from_millis(1),
            body_bytes: defaults::BODY_BYTES,
            threads: 1,
            trace_every: defaults::TRACE_EVERY,
            overhead: false,
            warmup: defaults::WARMUP,
            exe: PathBuf::from("loglag"),
            netns: false,
            sweep: Some((vec![100.0], Duration::from_secs(1))),
        };
        assert_eq!(good().validate(), Ok(()));
        let refused = |change: fn(&mut HopsPlan)| {
            let mut plan = good();
            change(&mut plan);
            plan.validate().unwrap_err().to_string()
        };
        assert!(refused(|p| p.rate = Some(0.0)).starts_with("--rate must be"));
        assert_eq!(
            refused(|p| p.duration = Duration::ZERO),
            "--duration must be positive"
        );
        assert_eq!(refused(|p| p.threads = 0), "--threads must be at least 1");
        assert!(refused(|p| p.body_bytes = 10).starts_with("--body-bytes must be at least 64"));
        assert!(
            refused(|p| p.sweep = Some((vec![100.0, -1.0], Duration::from_secs(1))))
                .starts_with("--sweep-rates must be")
        );
        assert_eq!(
            refused(|p| p.sweep = Some((vec![100.0], Duration::ZERO))),
            "--sweep-duration must be positive"
        );
    }
}
