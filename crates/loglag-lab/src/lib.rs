//! The loglag lab: measures what logging, or a service hop, costs an HTTP API.
//!
//! The folders follow the processes of a lab run: `api` (the API under test and its
//! control channel, both ends), `reader` (the rate-capped sink reader and the lab's
//! client for it), `load` (the generator, in the lab's own process), and `lab`, which
//! orchestrates them and turns raw results into summaries. `torture` is the fault
//! injector; `sys` holds what talks to the OS (child processes, cgroups, the clock,
//! units); `report`, `stats`, `export` and `html` are the outputs.
pub mod api;
pub mod child;
pub mod emit;
pub mod export;
pub mod hops;
pub mod html;
pub mod lab;
pub mod load;
pub mod outputs;
pub mod plan_error;
pub mod reader;
pub mod report;
pub mod stats;
pub mod sys;
pub mod torture;
