//! The loglag lab: measures what logging, or a service hop, costs an HTTP API.
pub mod cgroup;
pub mod child;
pub mod clock;
pub mod condition;
pub mod control;
pub mod export;
pub mod html;
pub mod load;
pub mod reader;
pub mod report;
pub mod runner;
pub mod server;
pub mod stats;
pub mod torture;
