//! What every command's results share: the schema, the machine, the generator's lateness.

use serde::{Deserialize, Serialize};

/// The version of the JSON layout.
pub const SCHEMA: u32 = 2;

/// Every schema this version reads.
pub const READABLE_SCHEMAS: [u32; 2] = [1, 2];

/// The machine the lab ran on.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub kernel: String,
    /// The operating system and the CPU architecture (`linux`, `x86_64`): with the
    /// CPU model and the cores, the kind of machine `--against` holds a baseline to.
    /// Empty in results written before they were recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub os: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub arch: String,
}

/// How late the generator sent requests, measured from each one's due time. Every
/// latency includes this delay, so a large figure means the instrument, not the API,
/// set the floor.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Lateness {
    pub mean_us: f64,
    /// The median (results written before it existed lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Lateness {
    /// The default limit on p99 lateness before a run is flagged.
    pub const DEFAULT_LIMIT_US: f64 = 100.0;

    /// From per-request lateness in ns; `None` for no requests.
    pub fn of(lateness_ns: &[u64]) -> Option<Lateness> {
        let mut sorted = lateness_ns.to_vec();
        let us = |ns: u64| ns as f64 / 1e3;
        Some(Lateness {
            mean_us: crate::stats::mean(lateness_ns.iter().map(|&l| us(l)))?,
            p50_us: crate::stats::quantile(&mut sorted, 0.50).map(us),
            p99_us: us(crate::stats::quantile(&mut sorted, 0.99)?),
            max_us: us(crate::stats::quantile(&mut sorted, 1.0)?),
        })
    }

    /// The lateness at a latency percentile (`q` 0.5 or 0.99), µs: what the
    /// generator's own delay adds to a latency at that percentile. Without a median
    /// (older results), the mean stands for it.
    pub fn at_us(&self, q: f64) -> f64 {
        if q >= 0.99 {
            self.p99_us
        } else {
            self.p50_us.unwrap_or(self.mean_us)
        }
    }

    /// A sentence for runs whose p99 lateness exceeds `limit_us`.
    pub fn warning(&self, limit_us: f64) -> Option<String> {
        (self.p99_us > limit_us).then(|| {
            format!(
                "the load generator sent late (p99 {:.0} µs, max {:.0} µs, over the {limit_us:.0} µs limit): these latencies include its own delay",
                self.p99_us, self.max_us
            )
        })
    }
}
