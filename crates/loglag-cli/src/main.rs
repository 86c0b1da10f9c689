//! The `loglag` command: CLI parsing and glue only.

/// `eprintln!` that never panics: a progress or closing line to a stderr whose reader
/// went away (`loglag lab 2>&1 | head`) is dropped, and the run goes on to keep its
/// results.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod args;
mod commands;
// The lab's `Progress` is unused where the lab does not run (see commands/linux_only.rs).
#[cfg_attr(not(unix), allow(dead_code))]
mod progress;

use std::process::ExitCode;

use clap::FromArgMatches;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe on stdout (`loglag lab | head`) is not an error.
            if commands::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            say!("loglag: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    let help_all = std::env::args_os().any(|a| a == "--help-all");
    let matches = args::command(help_all).get_matches();
    let cli = args::Cli::from_arg_matches(&matches)
        .unwrap_or_else(|e| e.format(&mut args::command(help_all)).exit());
    match cli.command {
        args::Command::Lab(a) => commands::lab(*a),
        args::Command::Load(a) => commands::load(a),
        args::Command::Emit(a) => commands::emit(a),
        args::Command::Sink(a) => commands::sink(a),
        args::Command::Serve(a) => commands::serve(a),
        args::Command::Report(a) => commands::report(a),
        args::Command::Torture(a) => commands::torture(a),
        args::Command::Recover(a) => commands::recover(a),
        args::Command::Child(a) => commands::child(a),
    }
}
