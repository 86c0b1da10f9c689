//! tracing-appender's documented examples (its crate docs, `non_blocking` and
//! `rolling` modules), with `tracing_appender::` replaced by `loglag::` and nothing
//! else changed but the directories (a temporary one instead of `/some/directory`) and
//! `init()` (a scoped `with_default`, so tests do not share a global subscriber).
#![cfg(all(feature = "rolling", feature = "tracing"))]

use std::path::Path;

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn contents(dir: &Path) -> String {
    files(dir)
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap_or_default())
        .collect()
}

#[test]
fn non_blocking_stdout() {
    // let (non_blocking, _guard) = tracing_appender::non_blocking(std::io::stdout());
    let (non_blocking, _guard) = loglag::non_blocking(std::io::stdout());
    let subscriber = tracing_subscriber::fmt().with_writer(non_blocking).finish();
    tracing::subscriber::with_default(subscriber, || tracing::info!("hello"));
}

#[test]
fn rolling_hourly_through_non_blocking() {
    let dir = tempfile::tempdir().unwrap();
    // let file_appender = tracing_appender::rolling::hourly("/some/directory", "prefix.log");
    let file_appender = loglag::rolling::hourly(dir.path(), "prefix.log");
    let (non_blocking, guard) = loglag::non_blocking(file_appender);
    let subscriber = tracing_subscriber::fmt().with_writer(non_blocking).finish();
    tracing::subscriber::with_default(subscriber, || tracing::info!("to the hourly file"));
    drop(guard);
    let names = files(dir.path());
    assert_eq!(names.len(), 1);
    assert!(names[0].starts_with("prefix.log.20"), "{names:?}");
    assert!(contents(dir.path()).contains("to the hourly file"));
}

#[test]
fn rolling_appender_as_a_make_writer() {
    let dir = tempfile::tempdir().unwrap();
    // let file_appender = tracing_appender::rolling::daily("/some/directory", "prefix.log");
    let file_appender = loglag::rolling::daily(dir.path(), "prefix.log");
    let subscriber = tracing_subscriber::fmt()
        .with_writer(file_appender)
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || tracing::info!("written at once"));
    assert!(contents(dir.path()).contains("written at once"));
}

#[test]
fn the_rolling_builder() {
    let dir = tempfile::tempdir().unwrap();
    // use tracing_appender::rolling::{RollingFileAppender, Rotation};
    use loglag::rolling::{RollingFileAppender, Rotation};
    let file_appender = RollingFileAppender::builder()
        .rotation(Rotation::HOURLY) // rotate log files once every hour
        .filename_prefix("myapp") // log file names will be prefixed with `myapp.`
        .filename_suffix("log") // log file names will be suffixed with `.log`
        .max_log_files(5)
        .build(dir.path()) // try to build an appender that stores log files in `/var/log`
        .expect("initializing rolling file appender failed");
    let (non_blocking, guard) = loglag::non_blocking(file_appender);
    let subscriber = tracing_subscriber::fmt().with_writer(non_blocking).finish();
    tracing::subscriber::with_default(subscriber, || tracing::warn!("built"));
    drop(guard);
    let names = files(dir.path());
    assert!(
        names.len() == 1 && names[0].starts_with("myapp.") && names[0].ends_with(".log"),
        "{names:?}"
    );
    // RollingFileAppender::new, as its docs show it.
    let dir = tempfile::tempdir().unwrap();
    let appender = RollingFileAppender::new(Rotation::NEVER, dir.path(), "prefix.log");
    drop(appender);
    assert_eq!(files(dir.path()), ["prefix.log"]);
    // rolling::never names the file exactly.
    let dir = tempfile::tempdir().unwrap();
    let _ = loglag::rolling::never(dir.path(), "app.log");
    assert_eq!(files(dir.path()), ["app.log"]);
}

#[test]
fn the_non_blocking_builder_and_its_types() {
    // use tracing_appender::non_blocking::{NonBlocking, WorkerGuard};
    use loglag::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};
    fn writer() -> (NonBlocking, WorkerGuard) {
        loglag::non_blocking(std::io::sink())
    }
    let (nb, _guard) = writer();
    let (lossless, _g2) = NonBlockingBuilder::default()
        .lossy(false)
        .buffered_lines_limit(loglag::non_blocking::DEFAULT_BUFFERED_LINES_LIMIT)
        .thread_name("my-log-writer")
        .finish(std::io::sink());
    assert_eq!(nb.error_counter().dropped_lines(), 0);
    assert_eq!(lossless.error_counter().dropped_lines(), 0);
    // MakeWriterExt works on it, as on tracing-appender's.
    use tracing_subscriber::fmt::writer::MakeWriterExt;
    let subscriber = tracing_subscriber::fmt()
        .with_writer(nb.with_max_level(tracing::Level::INFO))
        .finish();
    tracing::subscriber::with_default(subscriber, || tracing::debug!("filtered out"));
}
