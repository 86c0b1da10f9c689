//! What `lab hops` is asked to do: the plan, its defaults, and the values it refuses.

use std::path::PathBuf;
use std::time::Duration;

use super::service::{Calls, Work};
use crate::load::Connection;
use crate::plan_error::PlanError;

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
