//! What `loglag torture` is asked to run, as one typed request (its flags derive here,
//! beside the fields they set), and the run of its parts in order.

use std::path::PathBuf;
use std::time::Duration;

use loglag::Overflow;

use super::{hung_sink, kill9, rss_bytes, sink_faults, soak, soak_tracing_appender, Part};
use crate::child::ChildSpec;
use crate::report::{FloodPolicy, TortureSummary, Trial, SCHEMA};
use crate::sys::units::{parse_bytes, parse_duration, parse_rate};

fn parse_flood_policy(s: &str) -> Result<FloodPolicy, String> {
    match s {
        "block" => Ok(FloodPolicy::Block),
        "default" => Ok(FloodPolicy::Default),
        other => Err(format!(
            "unknown policy {other:?}: expected block or default"
        )),
    }
}

fn parse_part(s: &str) -> Result<Part, String> {
    s.parse().map_err(|e: loglag::ParseError| e.to_string())
}

/// Every flag of `loglag torture` that shapes what it runs.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "EXAMPLES:
    loglag torture                                # kill -9 trials, overload soak, hung sink
    loglag torture --only kill9 --trials 100
    loglag torture --only kill9 --kill9-policy default   # drops announced across kill -9
    loglag torture --only soak --soak 60s --format json

WHAT IT MEASURES:
    kill9  kill -9 a process flooding a spool-mode pipeline at random moments, recover,
           and check every record whose call returned is there exactly once, in order
    soak   offer 10x what a throttled sink takes, per overflow policy: RSS growth against
           the byte budget, the caller's p99, and the accounting
    hung   a sink that never returns: the caller's longest wait per policy
    faults ENOSPC (with and without a fallback) and EPIPE: the caller's longest wait")]
pub struct TortureRequest {
    /// Run only this part: kill9, soak, hung or faults.
    #[arg(long, value_parser = parse_part)]
    pub only: Option<Part>,
    /// kill -9 trials to run.
    #[arg(long, default_value_t = 20)]
    pub trials: usize,
    /// How long each policy's overload soak runs.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub soak: Duration,
    /// The throttled sink's rate in the soak (the offer is 10x this).
    #[arg(long, default_value = "1MiB", value_parser = parse_rate)]
    pub sink_rate: u64,
    /// Seed for the kill moments (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// kill9: the flooding child's overflow policy. `block` drops nothing, so every
    /// record whose call returned must be in the sink; `default` (ShedByLevel) drops
    /// under the flood, and every record whose call returned must be in the sink or
    /// counted in an in-band report, the one recovery writes for the killed process
    /// included.
    #[arg(long, default_value = "block", value_parser = parse_flood_policy)]
    pub kill9_policy: FloodPolicy,
    /// kill9: write through a rolling file sink that rotates at this size (e.g.
    /// 300KiB), and check every record exactly once across all files.
    #[arg(long, value_parser = parse_bytes)]
    pub rotate_bytes: Option<u64>,
}

/// The overflow policies the soak and the hung sink go through, in order.
const POLICIES: [Overflow; 5] = [
    Overflow::Block,
    Overflow::BlockFor(Duration::from_millis(1)),
    Overflow::DropNewest,
    Overflow::DropOldest,
    Overflow::ShedByLevel,
];

impl TortureRequest {
    /// Runs the parts asked for, in order; `exe` is the `loglag` executable the kill -9
    /// trials start as the flooding child, `say` hears each step and trial.
    pub fn run(&self, exe: PathBuf, say: impl Fn(&str)) -> std::io::Result<TortureSummary> {
        let wants = |part: Part| self.only.is_none_or(|o| o == part);
        let mut summary = TortureSummary {
            schema: SCHEMA,
            ..TortureSummary::default()
        };
        if wants(Part::Kill9) {
            let seed = self.seed.unwrap_or_else(crate::sys::clock::mono_ns);
            let policy = self.kill9_policy;
            say(&format!(
                "{} kill -9 trials (seed {seed}, policy {policy:?})",
                self.trials
            ));
            let flood =
                |spool: &std::path::Path, out: &std::path::Path, progress: &std::path::Path| {
                    ChildSpec::Flood {
                        spool: spool.to_owned(),
                        out: out.to_owned(),
                        progress: progress.to_owned(),
                        rotate_bytes: self.rotate_bytes,
                        policy,
                    }
                    .command(&exe)
                };
            let trial = |i: usize, t: &Trial| {
                say(&format!(
                    "  trial {}: returned {}, present {}, announced dropped {}, difference {}, duplicates {}, from spool {}, torn {}, files {}",
                    i + 1,
                    t.expected,
                    t.recovered,
                    t.announced,
                    t.expected as i64 - t.recovered as i64 - t.announced as i64,
                    t.duplicates,
                    t.from_spool,
                    t.torn,
                    t.files
                ))
            };
            summary.kill9 = Some(kill9(
                self.trials,
                seed,
                self.rotate_bytes,
                policy,
                flood,
                trial,
            )?);
        }
        if wants(Part::Soak) {
            let rate = self.sink_rate.max(1024);
            let baseline = rss_bytes();
            for policy in POLICIES {
                say(&format!("soak {policy:?} for {:?}", self.soak));
                summary.soak.push(soak(policy, self.soak, rate, baseline));
            }
            say(&format!("soak tracing-appender for {:?}", self.soak));
            summary.soak_tracing_appender = Some(soak_tracing_appender(self.soak, rate, baseline));
        }
        if wants(Part::Hung) {
            for policy in &POLICIES[1..] {
                summary.hung.push(hung_sink(*policy, 10_000));
            }
        }
        if wants(Part::Faults) {
            summary.faults = sink_faults(100_000)?;
        }
        Ok(summary)
    }
}
