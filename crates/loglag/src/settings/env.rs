//! The `LOGLAG_*` variables that are not settings: which ones loglag reads elsewhere
//! or its tests and lab set, the warning for a misspelt one (naming the nearest valid
//! one), and the rule for an entry point that does not read the environment into its
//! settings. `Config::with_env` and the builder's start both use it, each warning
//! once per process per variable.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::Mutex;

use crate::settings::{edit_distance, SETTINGS};

/// `LOGLAG_*` variables that are not the pipeline's, which [`Config::with_env`] does
/// not warn about: loglag's own elsewhere, and those of its tests, CI and lab.
pub(crate) const OTHER_VARIABLES: [&str; 14] = [
    crate::record::clock::CLOCK_ENV,
    "LOGLAG_EMULATOR",
    "LOGLAG_EDGES_CHILD",
    "LOGLAG_EDGES_OUT",
    "LOGLAG_GIT_REVISION",
    "LOGLAG_HARDENING_ARG",
    "LOGLAG_HARDENING_CHILD",
    "LOGLAG_LAB_APP",
    "LOGLAG_RELP_PORT",
    "LOGLAG_RELP_SENDER",
    "LOGLAG_RELP_SPOOL",
    "LOGLAG_SOAK_SECS",
    "LOGLAG_TORTURE_TRIALS",
    "LOGLAG_TEST_CHILD",
];

/// Prefixes of other such variables (`LOGLAG_REQUIRE_MOUNT` and the like, set by CI).
const OTHER_PREFIXES: [&str; 3] = ["LOGLAG_REQUIRE_", "LOGLAG_TEST_", "LOGLAG_LAB_"];

/// The unknown variables warned about so far: each once per process.
static WARNED_UNKNOWN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// A warning from reading variables.
pub(crate) struct Warning {
    pub(crate) text: String,
    /// An unknown variable's name: warned about once per process.
    pub(crate) unknown: Option<String>,
}

/// The warning for a `LOGLAG_*` variable that is no setting of the pipeline's, naming
/// the nearest that is; `None` for the variables loglag reads elsewhere.
pub(crate) fn unknown_variable(name: String) -> Option<Warning> {
    (!OTHER_VARIABLES.contains(&name.as_str())
        && !OTHER_PREFIXES.iter().any(|p| name.starts_with(p)))
    .then(|| Warning {
        text: format!(
            "loglag: {name} is not a loglag variable (did you mean {}?); it is ignored",
            nearest_variable(&name)
        ),
        unknown: Some(name),
    })
}

/// The rule for every entry point that does not read the environment into its
/// settings (a builder, `non_blocking`, a `Config` without `with_env`): it reads
/// `LOGLAG_MODE` only, and says once per process which other `LOGLAG_*` variables are
/// set and ignored, a misspelt one as `with_env` says it. Nothing is ignored silently.
pub(crate) fn warn_unread_variables() {
    for text in once_per_process(unread_variables(std::env::vars_os())) {
        eprintln!("{text}");
    }
}

/// What [`warn_unread_variables`] warns about, for `vars`.
pub(crate) fn unread_variables(vars: impl Iterator<Item = (OsString, OsString)>) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for (name, _) in vars {
        let name = name.to_string_lossy().into_owned();
        if !name.starts_with("LOGLAG_") || name == crate::settings::mode::MODE_ENV {
            continue;
        }
        if SETTINGS.iter().any(|s| s.variable() == name) {
            warnings.push(Warning {
                text: format!(
                    "loglag: {name} is set, but this pipeline was built without reading the environment, so it is ignored (Config::from_env() or Config::with_env() reads every LOGLAG_* variable)"
                ),
                unknown: Some(name),
            });
        } else if let Some(warning) = unknown_variable(name) {
            warnings.push(warning);
        }
    }
    warnings
}

pub(crate) fn once_per_process(warnings: Vec<Warning>) -> Vec<String> {
    let mut warned = WARNED_UNKNOWN.lock().unwrap_or_else(|e| e.into_inner());
    warnings
        .into_iter()
        .filter(|w| {
            w.unknown
                .as_ref()
                .is_none_or(|name| warned.insert(name.clone()))
        })
        .map(|w| w.text)
        .collect()
}

/// The valid variable nearest `name` by edit distance (case aside).
fn nearest_variable(name: &str) -> String {
    let name = name.to_ascii_uppercase();
    SETTINGS
        .iter()
        .map(|s| s.variable())
        .chain(std::iter::once(crate::record::clock::CLOCK_ENV.to_owned()))
        .min_by_key(|valid| edit_distance(&name, valid))
        .unwrap_or_default()
}
