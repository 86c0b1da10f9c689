//! A pipeline built from a TOML table: its sink, its writer thread's name, its policy,
//! as a service would configure it from a file.

use std::time::Duration;

#[test]
fn a_pipeline_from_toml_writes_where_the_file_says() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let config = loglag::Config::from_toml(&format!(
        r#"
        sink = {:?}
        thread_name = "cfg-writer"
        overflow = "block"
        mode = "async"
        flush_interval = "10ms"
        "#,
        format!("file://{}", log.display())
    ))
    .unwrap();
    let (writer, guard) = config.build().unwrap();
    writer.submit(loglag::Level::Info, b"configured\n");
    guard.flush(Duration::from_secs(30)).unwrap();
    // Thread names from /proc: Linux's.
    #[cfg(target_os = "linux")]
    {
        let threads: Vec<String> = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .map(|t| std::fs::read_to_string(t.path().join("comm")).unwrap_or_default())
            .collect();
        assert!(
            threads.iter().any(|t| t.trim() == "cfg-writer"),
            "{threads:?}"
        );
    }
    let m = guard.shutdown();
    assert_eq!(m.written_records, 1);
    assert_eq!(std::fs::read(&log).unwrap(), b"configured\n");
}

/// A sink that cannot be opened is an error that says which, not a panic.
#[test]
fn a_sink_that_cannot_be_opened_is_a_clear_error() {
    let config = loglag::Config::from_toml(r#"sink = "file:///nonexistent-dir/app.log""#).unwrap();
    let err = config.build().unwrap_err().to_string();
    assert!(err.contains("nonexistent-dir"), "{err}");
}
