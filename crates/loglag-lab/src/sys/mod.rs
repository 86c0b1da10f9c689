//! What talks to the operating system: child processes and the contract with them,
//! cgroups, scratch directories, what a second Ctrl-C tears down, the shared clock,
//! and the units users type.
pub mod cgroup;
pub mod child;
pub mod clock;
pub mod poll;
pub mod procfs;
pub mod scratch;
pub mod signal;
pub mod stop;
pub mod teardown;
pub mod units;
