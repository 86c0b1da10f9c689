//! This crate's integration tests: one program, a module per subject, so the suite
//! links once per target. Tests run side by side in one process, as the tests of one
//! file always did.

mod coordinated_omission;
mod exporters;
mod layers;
mod torture;
