//! Why a plan cannot run, for every command's plan (`LabPlan`, `HopsPlan`, `EmitPlan`,
//! `LoadConfig`): each checks its own values, whoever built it, and names the flag.

/// Why a plan cannot run: each message names the flag a user sets and what is valid.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanError {
    /// A count or size that must be at least 1 (`--rounds`, `--threads`, `--read-size`).
    AtLeastOne(&'static str, &'static str),
    /// A rate, duration or limit that must be positive (with its flag and an example).
    NotPositive(&'static str, &'static str),
    /// A condition listed twice.
    ConditionTwice(String),
    /// A sink listed twice.
    SinkTwice(&'static str),
    /// `--sinks slow-disk` with an `--app`.
    SlowDiskWithApp,
    /// An `--app` command without `{port}`.
    AppWithoutPort(String),
    /// An `--app` that logs to a file without `{log_path}`.
    AppWithoutLogPath(String),
    /// `--ready log:` while the app's log is its stderr.
    ReadyLogOnStderr,
    /// `--baseline` names a condition the plan does not run.
    BaselineNotRun(String, Vec<String>),
    /// A value outside its range (with its flag and the range in words).
    OutOfRange(&'static str, &'static str),
    /// Flags that do not go together, or a flag that only another makes meaningful;
    /// the message names them and says what to give instead.
    Flags(String),
    /// A preset's step whose plan cannot run: the preset, the step and why.
    InStep {
        preset: &'static str,
        step: String,
        error: Box<PlanError>,
    },
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::AtLeastOne(flag, unit) => write!(f, "{flag} must be at least 1{unit}"),
            PlanError::NotPositive(flag, what) | PlanError::OutOfRange(flag, what) => {
                write!(f, "{flag} must be {what}")
            }
            PlanError::ConditionTwice(c) => write!(
                f,
                "--conditions lists {c} twice: each pair is run once per round (use --rounds for repeats)"
            ),
            PlanError::SinkTwice(s) => write!(f, "--sinks lists {s} twice"),
            PlanError::SlowDiskWithApp => f.write_str(
                "--sinks slow-disk delays the built-in API's writes; an --app writes on its own",
            ),
            PlanError::AppWithoutPort(app) => write!(
                f,
                "--app must contain {{port}} so the lab can reach it: {app:?}"
            ),
            PlanError::AppWithoutLogPath(app) => write!(
                f,
                "--app must contain {{log_path}} so the lab can read its log, or say --app-log stdout|stderr: {app:?}"
            ),
            PlanError::BaselineNotRun(b, conditions) => write!(
                f,
                "--baseline {b:?} is not one of the conditions run ({}): the findings compare every condition with it",
                conditions.join(", ")
            ),
            PlanError::Flags(why) => f.write_str(why),
            PlanError::InStep {
                preset,
                step,
                error,
            } => write!(f, "--preset {preset} (step {step}): {error}"),
            PlanError::ReadyLogOnStderr => f.write_str(
                "--ready log: watches the app's stderr, which --app-log stderr makes its log; use --ready connect or http:/PATH",
            ),
        }
    }
}

impl std::error::Error for PlanError {}
