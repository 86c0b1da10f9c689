//! This crate's integration tests: one program, a module per subject, so the suite
//! links once per target. Tests run side by side in one process, as the tests of one
//! file always did.

#[macro_use]
mod support;

mod against;
mod app;
mod browser;
mod emit;
mod hops;
mod input;
mod lab;
mod load;
mod presets;
mod recover_refusals;
mod report;
mod torture;
