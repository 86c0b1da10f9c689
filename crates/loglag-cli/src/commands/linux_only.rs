//! Where unix is not (Windows): the commands that run the lab's processes say what
//! they need and exit non-zero. `emit`, `load`, `serve`, `report` and `recover` run
//! everywhere; `sink` reads a TCP stream everywhere and a FIFO only on unix.

#[cfg(not(unix))]
use super::*;

/// What each command needs that this platform lacks, in the words its refusal uses.
const LAB: &str = "a FIFO the reader drains at a capped rate, child processes that die \
with the lab (process groups, PR_SET_PDEATHSIG), /proc for CPU time, context switches \
and run-queue wait, cgroups v2 for --cpu-limit and --app's kill group";
const HOPS: &str = "child processes that die with the lab (process groups, PR_SET_PDEATHSIG), \
/proc for CPU time and run-queue wait, network namespaces for --netns";
const TORTURE: &str = "kill -9 of a flooding child process and recovery of its spool, \
/proc for memory use";
const CHILD: &str = "it is one of the lab's processes";

/// The refusal: `loglag COMMAND: needs Linux (WHAT); this build is for OS`.
pub(crate) fn needs_linux(command: &str, what: &str) -> String {
    format!(
        "loglag {command}: needs Linux ({what}); this build is for {}",
        std::env::consts::OS
    )
}

#[cfg(not(unix))]
fn refuse(command: &str, what: &str) -> anyhow::Result<ExitCode> {
    say!("{}", needs_linux(command, what));
    Ok(ExitCode::FAILURE)
}

#[cfg(not(unix))]
pub(crate) fn lab(a: LabArgs) -> anyhow::Result<ExitCode> {
    match a.sub {
        Some(LabCommand::Hops(_)) => refuse("lab hops", HOPS),
        None => refuse("lab", LAB),
    }
}

#[cfg(not(unix))]
pub(crate) fn torture(_: TortureArgs) -> anyhow::Result<ExitCode> {
    refuse("torture", TORTURE)
}

#[cfg(not(unix))]
pub(crate) fn child(_: ChildArgs) -> anyhow::Result<ExitCode> {
    refuse("child", CHILD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_command_what_it_needs_and_the_platform() {
        let text = needs_linux("lab", LAB);
        assert!(
            text.starts_with("loglag lab: needs Linux (a FIFO"),
            "{text}"
        );
        assert!(text.contains("cgroups v2 for --cpu-limit"), "{text}");
        assert!(text.ends_with(&format!("this build is for {}", std::env::consts::OS)));
        for what in [HOPS, TORTURE, CHILD] {
            assert!(!what.contains("  "), "{what}");
        }
    }
}
