//! What a sink URL names: paths, hosts, credentials kept out of what is shown.

mod urls {
    use crate::sink::spec::SinkSpec;
    use std::path::PathBuf;

    fn parse(url: &str) -> Result<SinkSpec, String> {
        url.parse::<SinkSpec>()
    }

    /// RFC 8089: `file://localhost/PATH` is `/PATH` on this host, as `file:///PATH`
    /// is (it used to write `./localhost/PATH`); so for `fifo://` and `syslog+unix://`.
    #[test]
    fn a_file_url_with_localhost_names_the_absolute_path() {
        for url in [
            "file://localhost/var/log/app.log",
            "file://LocalHost/var/log/app.log",
            "file:///var/log/app.log",
        ] {
            assert_eq!(
                parse(url).unwrap(),
                SinkSpec::File("/var/log/app.log".into()),
                "{url}"
            );
        }
        assert_eq!(
            parse("fifo://localhost/run/app.fifo").unwrap(),
            SinkSpec::Fifo("/run/app.fifo".into())
        );
        assert_eq!(
            parse("syslog+unix://localhost/dev/log").unwrap(),
            SinkSpec::SyslogUnix("/dev/log".into())
        );
        let e = parse("file://localhost").unwrap_err();
        assert!(e.contains("has no path"), "{e}");
    }

    /// Any other host is refused, naming it and the form to write: a file URL names a
    /// local file (`file://logs/app.log` used to be the relative `logs/app.log`).
    #[test]
    fn a_file_url_with_another_host_is_refused_naming_it() {
        for (url, host) in [
            ("file://example.com/var/log/app.log", "example.com"),
            ("file://logs/app.log", "logs"),
            ("file://app.log", "app.log"),
            ("fifo://x.fifo", "x.fifo"),
            ("syslog+unix://h/dev/log", "h"),
        ] {
            let e = parse(url).unwrap_err();
            let scheme = url.split_once("://").unwrap().0;
            assert!(
                e.contains(&format!(
                    "{scheme}:// URLs name a local file: host {host:?} is not supported; write {scheme}:///PATH"
                )),
                "{url}: {e}"
            );
        }
    }

    /// The path is percent-decoded (`%20` is a space, `%25` a `%`); a malformed escape
    /// and a NUL byte are refused, naming the URL.
    #[test]
    fn percent_escapes_in_a_file_url_are_decoded() {
        assert_eq!(
            parse("file:///var/log/my%20app%25.log").unwrap(),
            SinkSpec::File("/var/log/my app%.log".into())
        );
        assert_eq!(
            parse("file:///var/log/caf%C3%A9%3F%23.log?rotate=daily").unwrap(),
            SinkSpec::File("/var/log/café?#.log".into())
                .with_file_options(&{
                    let mut o = crate::sink::spec::FileOptions::default();
                    o.set("rotate", "daily").unwrap();
                    o
                })
                .unwrap()
        );
        for (url, escape) in [
            ("file:///tmp/100%.log", "%.l"),
            ("file:///tmp/a%2", "%2"),
            ("file:///tmp/a%zz", "%zz"),
            ("file:///tmp/a%", "% "),
        ] {
            let e = parse(url).unwrap_err();
            let escape = escape.trim_end();
            assert!(
                e.contains(&format!("{escape} is not a percent escape")),
                "{url}: {e}"
            );
            assert!(e.contains(&format!("{url:?}")), "names the URL: {e}");
        }
        let e = parse("file:///tmp/a%00b").unwrap_err();
        assert!(e.contains("cannot hold a NUL byte"), "{e}");
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let SinkSpec::File(p) = parse("file:///tmp/%FF%FE.log").unwrap() else {
                panic!("a file");
            };
            assert_eq!(p.as_os_str().as_bytes(), b"/tmp/\xff\xfe.log");
        }
    }

    /// Written back, a path with what a URL path cannot hold as it is (space, `%`,
    /// `?`, `#`, control characters, bytes that are not UTF-8) is percent-encoded, and
    /// the text parses back to the same sink.
    #[test]
    fn a_local_sink_reads_back_from_its_display() {
        let paths: Vec<PathBuf> = [
            "/var/log/app.log",
            "/var/log/my app.log",
            "/tmp/100%.log",
            "/tmp/a?rotate=daily",
            "/tmp/a#b",
            "/tmp/line\nbreak\r\t\u{7f}\u{85}",
            "/tmp/café ünïcode.log",
            "/tmp/trailing ",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        // Bytes that are not UTF-8: a unix file name's right.
        #[cfg(unix)]
        let other: Vec<PathBuf> = {
            use std::os::unix::ffi::OsStrExt;
            vec![std::ffi::OsStr::from_bytes(b"/tmp/\xff\x80.log").into()]
        };
        #[cfg(not(unix))]
        let other: Vec<PathBuf> = Vec::new();
        let mut daily = crate::sink::spec::FileOptions::default();
        daily.set("rotate", "daily").unwrap();
        for p in paths.into_iter().chain(other) {
            for spec in [
                SinkSpec::File(p.clone()),
                SinkSpec::Fifo(p.clone()),
                SinkSpec::SyslogUnix(p.clone()),
                SinkSpec::RollingFile {
                    path: p.clone(),
                    options: daily.clone(),
                },
            ] {
                let text = spec.to_string();
                assert!(
                    !text.chars().any(|c| c.is_control() || c == ' '),
                    "{text:?}"
                );
                assert_eq!(parse(&text), Ok(spec.clone()), "{text:?}");
            }
        }
        assert_eq!(
            SinkSpec::File("/var/log/my app.log".into()).to_string(),
            "file:///var/log/my%20app.log"
        );
    }
}

#[cfg(windows)]
mod windows {
    use crate::sink::spec::SinkSpec;

    /// `file:///C:/logs/app.log` is `C:/logs/app.log`, as `file://C:\logs\app.log` is
    /// `C:\logs\app.log`; a path without a drive stays as written.
    #[test]
    fn a_file_url_with_a_drive_letter_names_that_drive() {
        let parse = |url: &str| url.parse::<SinkSpec>().unwrap();
        assert_eq!(
            parse("file:///C:/logs/app.log"),
            SinkSpec::File("C:/logs/app.log".into())
        );
        assert_eq!(
            parse(r"file://C:\logs\app.log"),
            SinkSpec::File(r"C:\logs\app.log".into())
        );
        assert_eq!(
            parse("file:///var/log/app.log"),
            SinkSpec::File("/var/log/app.log".into())
        );
    }
}
