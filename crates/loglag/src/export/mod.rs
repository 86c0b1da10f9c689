//! The ways a pipeline's metrics leave the process: a Prometheus text endpoint, and
//! the `metrics` crate's facade. Both read `Metrics` snapshots through a handle.

#[cfg(feature = "metrics")]
pub mod metrics_facade;
#[cfg(feature = "prometheus")]
pub mod prometheus;
