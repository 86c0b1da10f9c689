//! `manifest.json`: what a result directory holds, written by every command that writes
//! one (last, so a directory with a manifest is complete), and read by `loglag report`
//! instead of guessing the kind from the keys of `summary.json`.

use serde::{Deserialize, Serialize};

/// The kind of result a directory holds: the command that wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultKind {
    /// `loglag lab`: one run of (condition, sink) pairs.
    Lab,
    /// `loglag lab --preset`: a table over steps, each step a `lab` result in a
    /// subdirectory of its own (`parts`).
    Preset,
    /// `loglag lab hops`.
    Hops,
    /// `loglag load`.
    Load,
    /// `loglag sink`.
    Sink,
    /// `loglag emit`.
    Emit,
    /// `loglag torture`.
    Torture,
}

impl ResultKind {
    pub const ALL: [ResultKind; 7] = [
        ResultKind::Lab,
        ResultKind::Preset,
        ResultKind::Hops,
        ResultKind::Load,
        ResultKind::Sink,
        ResultKind::Emit,
        ResultKind::Torture,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ResultKind::Lab => "lab",
            ResultKind::Preset => "preset",
            ResultKind::Hops => "hops",
            ResultKind::Load => "load",
            ResultKind::Sink => "sink",
            ResultKind::Emit => "emit",
            ResultKind::Torture => "torture",
        }
    }
}

/// The file name every result directory's manifest has.
pub const MANIFEST: &str = "manifest.json";

/// What one result directory holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: u32,
    pub kind: ResultKind,
    /// The file the result is read back from (its JSON).
    pub summary: String,
    /// Every file the command wrote here, in the order written, the manifest excluded.
    pub files: Vec<String>,
    /// Subdirectories that are results of their own (a preset's steps), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
    /// The loglag that wrote it.
    pub loglag: String,
}
