//! The library's integration tests: one program, a module per subject (as cargo's
//! and rust-analyzer's own suites are kept), so the suite links once per target.
//! Tests run side by side in one process: a test that uses loglag's process-wide
//! macros takes `support::macros_lock`, and a test whose subject is process-wide (a
//! time zone, resident memory, a `fork`, a global subscriber, the thread list) runs
//! alone in a child process (`support::alone`).

#[macro_use]
mod support;

mod accounting;
mod alloc;
mod batching;
mod capture;
mod config;
mod config_edges;
mod defaults;
mod drop_in;
mod fork;
mod frontends;
mod layer_fmt_options;
mod macro_records;
mod metrics_facade;
mod misbehaving_sinks;
mod modes;
#[cfg(feature = "otlp")]
mod otlp;
mod overflow;
mod platform_table;
mod policies;
mod process;
#[cfg(feature = "prometheus")]
mod prometheus;
#[cfg(feature = "prometheus")]
mod prometheus_clients;
mod relp;
mod relp_peers;
mod report_format;
mod ring_stress;
mod rolling;
mod rolling_clock;
mod rolling_faults;
mod rolling_restart;
mod rolling_trust;
mod settings_table;
mod shutdown;
mod signal_handlers;
mod spool_recovery;
mod spool_refusals;
mod spool_sync;
mod syslog;
mod thread_churn;
mod thread_rings;
mod tracing_appender_suite;
mod whole_lines;
