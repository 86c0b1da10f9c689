//! The `loglag` command.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!("loglag: the lab is not built yet");
    ExitCode::from(2)
}
