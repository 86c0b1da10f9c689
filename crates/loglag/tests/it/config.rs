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

/// A refused sink URL with credentials never repeats the password (issue 47, 15):
/// not in the error's text, its Debug, or a variable's warning, whether the URL is a
/// value, a TOML key or `LOGLAG_SINK`. The user stays (`user:***@`) so the error still
/// says which URL; a token given as the user and a secret-looking query value go whole.
#[test]
fn a_refused_sink_url_never_shows_its_password() {
    const SECRET: &str = "s3cr3t";
    for url in [
        "otlp+http://user:s3cr3t-pw@collector:4318/v1/logs",
        "otlp+http+json://user:s3cr3t-pw@collector:4318",
        "otlp+json://user:s3/cr3t@collector:4318/v1/logs",
        // An unescaped `?` in the password (the second review: `pa` was masked, `?ss`
        // taken for a query and shown).
        "otlp+http://user:pw?s3cr3t@collector:4318/v1/logs",
        "otlp+http://user:s3cr3t@collector:x/v1/logs",
        "otlp+http://s3cr3t-token@collector:4318",
        "otlp+http://user:s3cr3t@collector:4318/v1/logs?token=s3cr3t",
        "otlp+http://collector:x/v1/logs?token=s3cr3t&api_key=s3cr3t",
        "otlp+http://collector:4318/v1/logs?api_key=s3cr3t",
        "otlp+http://collector:4318/v1/logs?password",
        "otlp+http://collector:4318/v1/logs?s3cr3t_password",
        "syslog+tcp://user:s3cr3t@logs.example:514",
        "relp://user:s3cr3t@logs.example:2514",
        "file://user:s3cr3t@host/var/log/app.log",
        "user:s3cr3t@collector:4318",
    ] {
        let mut shown = Vec::new();
        let e = loglag::Config::from_url(url).expect_err(url);
        shown.push(e.to_string());
        shown.push(format!("{e:?}"));
        let e = loglag::Config::from_toml(&format!("sink = {url:?}")).expect_err(url);
        shown.push(e.to_string());
        shown.push(format!("{e:?}"));
        let (_, warnings) = loglag::Config::default().with_vars([("LOGLAG_SINK", url)]);
        assert_eq!(warnings.len(), 1, "{url}: {warnings:?}");
        shown.extend(warnings);
        if let Err(e) = url.parse::<loglag::sink::SinkSpec>() {
            shown.push(e);
        }
        for text in &shown {
            assert!(!text.contains(SECRET), "{url}: the secret is shown: {text}");
        }
        if url.contains("user:") {
            assert!(
                shown.iter().all(|t| t.contains("user:***@")),
                "{url}: {shown:?}"
            );
        }
    }
    let e = loglag::Config::from_url("otlp+http://user:s3cr3t@collector:4318").unwrap_err();
    assert!(
        e.to_string()
            .contains("credentials (user:password@) are not supported"),
        "{e}"
    );
    for url in [
        "http://user:s3cr3t@collector:4318/v1/logs",
        "https://user:s3cr3t@collector:4318/v1/logs",
        "http://collector:x/v1/logs?token=s3cr3t",
    ] {
        let e = url.parse::<loglag::sink::Endpoint>().expect_err(url);
        assert!(!e.contains(SECRET), "{url}: the secret is shown: {e}");
    }
}

/// Every entry point meets the same rule for the environment: `Config::from_env`
/// reads every `LOGLAG_*` variable, the others read `LOGLAG_MODE` only, and each says
/// on stderr what it ignores, a misspelt variable in the same words everywhere.
/// Each entry point runs in a child process of its own, with the variables set.
#[test]
fn every_entry_point_reports_a_misspelt_or_ignored_variable() {
    if let Ok(door) = std::env::var("LOGLAG_TEST_CHILD_DOOR") {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("app.log")).unwrap();
        let (writer, guard) = match door.as_str() {
            "non_blocking" => loglag::non_blocking(std::io::sink()),
            "build" => loglag::NonBlockingBuilder::default().build(file).unwrap(),
            "from_env" => loglag::Config::from_env().builder().build(file).unwrap(),
            other => panic!("unknown door {other}"),
        };
        writer.submit(loglag::Level::Info, b"one\n");
        drop((writer, guard));
        return;
    }
    let run = |door: &str| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &crate::support::qualified(
                    module_path!(),
                    "every_entry_point_reports_a_misspelt_or_ignored_variable",
                ),
                "--nocapture",
            ])
            .env("LOGLAG_TEST_CHILD_DOOR", door)
            .env("LOGLAG_MDOE", "off")
            .env("LOGLAG_CAPACITY_BYTES", "64KiB")
            .output()
            .unwrap();
        assert!(out.status.success(), "{door}: {out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let typo =
        "loglag: LOGLAG_MDOE is not a loglag variable (did you mean LOGLAG_MODE?); it is ignored";
    let ignored = "loglag: LOGLAG_CAPACITY_BYTES is set, but this pipeline was built without reading the environment, so it is ignored";
    for door in ["non_blocking", "build"] {
        let stderr = run(door);
        assert!(stderr.contains(typo), "{door}: {stderr}");
        assert!(stderr.contains(ignored), "{door}: {stderr}");
    }
    let stderr = run("from_env");
    assert!(stderr.contains(typo), "from_env: {stderr}");
    assert!(
        !stderr.contains("LOGLAG_CAPACITY_BYTES"),
        "from_env reads it: {stderr}"
    );
}
