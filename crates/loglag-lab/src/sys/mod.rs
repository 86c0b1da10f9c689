//! What talks to the operating system: child processes and the contract with them,
//! cgroups, the shared clock.
pub mod cgroup;
pub mod child;
pub mod clock;
pub mod spawn;
