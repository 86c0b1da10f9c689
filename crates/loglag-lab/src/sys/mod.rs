//! What talks to the operating system: child processes and the contract with them,
//! cgroups, scratch directories, the shared clock, and the units users type.
pub mod cgroup;
pub mod child;
pub mod clock;
pub mod procfs;
pub mod scratch;
pub mod signal;
pub mod stop;
pub mod units;
