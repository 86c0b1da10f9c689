//! The lab's results: the only types that derive `Serialize` for output. JSON carries
//! `"schema": 2` (schema 1, before the presets' fields, still reads: every field added
//! since has a default).
//!
//! One file per command; every type is re-exported here, so `report::PairSummary`
//! and the JSON are what they were before the split.

mod common;
mod emit;
mod hops;
mod lab;
mod load;
mod manifest;
mod preset;
mod torture;

pub use self::common::*;
pub use self::emit::*;
pub use self::hops::*;
pub use self::lab::*;
pub use self::load::*;
pub use self::manifest::*;
pub use self::preset::*;
pub use self::torture::*;
