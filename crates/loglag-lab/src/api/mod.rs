//! The API under test: the built-in server and its conditions, and the control channel
//! through which the lab asks it for counters (server and client together), and
//! starting it (built in, or any `--app`), and the collector behind its network
//! conditions.
pub mod collector;
pub mod condition;
pub mod control;
pub mod launch;
pub mod server;
