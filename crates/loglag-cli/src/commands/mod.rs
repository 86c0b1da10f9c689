//! Stage two: validate arguments into plans, run them, write outputs; one file per
//! command, shared helpers here.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use loglag_lab::api::condition::Condition;
use loglag_lab::api::server::{self, ServeConfig};
use loglag_lab::export;
use loglag_lab::load::{LoadConfig, Target};
use loglag_lab::outputs::ExportManager;
use loglag_lab::report::SCHEMA;

use crate::args::{
    ChildArgs, EmitArgs, LabArgs, LabCommand, LoadArgs, OutputFormat, RecoverArgs, ReportArgs,
    ServeArgs, SinkArgs, TortureArgs,
};
// What only the commands that run the lab's processes use (unix).
#[cfg(unix)]
use {
    crate::args::HopsArgs, crate::progress::Progress, loglag_lab::child::ChildSpec,
    loglag_lab::lab::preset::Step, loglag_lab::lab::LabError, loglag_lab::report::Summary,
};

#[cfg(unix)]
mod against;
mod emit;
#[cfg(unix)]
mod hops;
#[cfg(unix)]
mod lab;
// Where unix is not, one stand-in for the commands that run the lab's processes.
#[cfg(any(not(unix), test))]
mod linux_only;
mod load;
mod report;
#[cfg(unix)]
mod torture;

#[cfg(unix)]
pub(crate) use self::lab::lab;
#[cfg(not(unix))]
pub(crate) use self::linux_only::{child, lab, torture};
pub(crate) use self::load::{load, sink};
pub(crate) use emit::emit;
pub(crate) use report::report;
#[cfg(unix)]
pub(crate) use torture::torture;

/// Exit code after Ctrl-C, as shells expect.
pub(crate) const INTERRUPTED: u8 = 130;

/// SIGINT/SIGTERM set the flag so the lab can clean up on its way out. A second one
/// (GNU `timeout -s INT` sends two; an impatient Ctrl-C) does not wait for that: it
/// kills what the lab started (an `--app`'s cgroup and process groups) and removes its
/// scratch directories (`loglag_lab::sys::teardown`), then exits. A third exits at
/// once.
#[cfg(unix)]
pub(crate) fn cancel_flag() -> anyhow::Result<Arc<AtomicBool>> {
    use std::io::Read;
    use std::os::fd::IntoRawFd;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SIGNALS: AtomicUsize = AtomicUsize::new(0);
    let flag = Arc::new(AtomicBool::new(false));
    // The handler wakes the teardown thread through a socket: a write is all it may do.
    let (mut woken, wake) = std::os::unix::net::UnixStream::pair()?;
    // Open for the process's life: the handler may run at any time.
    let wake = wake.into_raw_fd();
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, flag.clone())?;
        // SAFETY: the handler makes only async-signal-safe calls: an atomic add,
        // write(2) and _exit(2).
        unsafe {
            signal_hook::low_level::register(signal, move || {
                match SIGNALS.fetch_add(1, Ordering::SeqCst) + 1 {
                    1 => {}
                    2 => {
                        libc::write(wake, b"2".as_ptr().cast(), 1);
                    }
                    _ => signal_hook::low_level::exit(INTERRUPTED as i32),
                }
            })?;
        }
    }
    std::thread::Builder::new()
        .name("second-interrupt".into())
        .spawn(move || {
            let mut byte = [0u8];
            if woken.read_exact(&mut byte).is_ok() {
                say!(
                    "loglag: interrupted again: killing what the lab started and removing its scratch files, then exiting (once more exits at once)"
                );
                let done = loglag_lab::sys::teardown::now();
                say!("loglag: {done}; exiting");
                // Not `process::exit`: the main thread may hold stdout's lock, and
                // nothing is left to flush.
                signal_hook::low_level::exit(INTERRUPTED as i32);
            }
        })?;
    Ok(flag)
}

/// SIGINT (Ctrl-C) sets the flag so the command can clean up; a second one exits at
/// once (no process of the lab's runs here).
#[cfg(not(unix))]
pub(crate) fn cancel_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, INTERRUPTED as i32, flag.clone())?;
        signal_hook::flag::register(signal, flag.clone())?;
    }
    Ok(flag)
}

/// Creates `--out` and proves it writable before any run, so a typo costs seconds,
/// not a whole lab run.
pub(crate) fn check_out_dir(out: &Path) -> anyhow::Result<()> {
    if out.is_file() {
        bail!("--out {} is a file; give a directory", out.display());
    }
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create --out directory {}", out.display()))?;
    let probe = out.join(format!(".loglag-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("--out directory {} is not writable", out.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Shows `result` on stdout, then writes its files into `--out`: a stdout that fails
/// stops the table, never the files (see [`stdout_outcome`]).
pub(crate) fn show_and_write_out<R>(
    outputs: &ExportManager<R>,
    result: &R,
    out: Option<&Path>,
    command: &str,
) -> anyhow::Result<()> {
    let shown = outputs.show(result, &mut std::io::stdout().lock());
    write_out(outputs, result, out, command)?;
    stdout_outcome(shown)
}

/// What a table shown on stdout came to, judged once the files are kept: a reader
/// that went away (`loglag lab | head`) is no error, as for any filter; another
/// failure (`> /dev/full`) is, after the results are safe.
pub(crate) fn stdout_outcome<E: Into<anyhow::Error>>(shown: Result<(), E>) -> anyhow::Result<()> {
    match shown.map_err(Into::into) {
        Err(e) if !is_broken_pipe(&e) => Err(e.context("cannot write the results to stdout")),
        _ => Ok(()),
    }
}

/// Whether `err` is, somewhere in its chain, a write to a pipe nobody reads.
pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Writes a result's files and its manifest into `--out`, when given.
pub(crate) fn write_out<R>(
    outputs: &ExportManager<R>,
    result: &R,
    out: Option<&Path>,
    command: &str,
) -> anyhow::Result<()> {
    if let Some(dir) = out {
        outputs.write(result, dir)?;
        say!("loglag {command}: results in {}", dir.display());
    }
    Ok(())
}

impl From<OutputFormat> for export::StdoutFormat {
    fn from(format: OutputFormat) -> export::StdoutFormat {
        match format {
            OutputFormat::Md => export::StdoutFormat::Markdown,
            OutputFormat::Json => export::StdoutFormat::Json,
            OutputFormat::Csv => export::StdoutFormat::Csv,
        }
    }
}

pub(crate) fn write_to(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        std::io::stdout().lock().write_all(bytes)?;
    } else {
        std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

pub(crate) fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let condition: Condition = a.condition.parse().map_err(anyhow::Error::msg)?;
    let config = ServeConfig {
        port: a.port,
        threads: a.threads,
        log_path: a.log,
        hash_rounds: a.hash_rounds,
        record: a.record,
        ..ServeConfig::new(condition)
    };
    server::serve(config, |listening| {
        println!("{}", server::ready_line(&listening, condition));
        let _ = std::io::stdout().flush();
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A child the lab started: becomes what its spec says.
#[cfg(unix)]
pub(crate) fn child(a: ChildArgs) -> anyhow::Result<ExitCode> {
    ChildSpec::parse(&a.spec)
        .map_err(anyhow::Error::msg)?
        .run()?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn recover(a: RecoverArgs) -> anyhow::Result<ExitCode> {
    let report = match a.output.as_deref() {
        // The output is opened only once the spool is known to be one.
        Some(path) if path.as_os_str() != "-" => {
            loglag::spool::recover_opening(&a.spool, || loglag::sink::FdSink::append(path))?
        }
        // Records into a pipe whose reader went away are not delivered: an error,
        // not the quiet end a table's reader going away is (`main`).
        _ => loglag::spool::recover(&a.spool, loglag::sink::FdSink::stdout()).map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                anyhow::anyhow!(
                    "the reader of standard output went away before the spool was delivered ({e}); the spool keeps what was not: run loglag recover again"
                )
            } else {
                anyhow::Error::new(e)
            }
        })?,
    };
    say!(
        "loglag recover: {} records ({} bytes) delivered, {} torn regions skipped, {} already delivered, {} drops announced that the process had not reported",
        report.records, report.bytes, report.torn, report.already_delivered, report.unannounced_drops
    );
    Ok(ExitCode::SUCCESS)
}
