// Unix only: rsyslogd is a unix daemon (RELP itself is tested against fake peers on
// every platform in `relp_peers.rs`).
#![cfg(unix)]
//! RELP against a real `rsyslogd` with `imrelp` (config in `tests/rsyslog/relp.conf`):
//! a sender with a spool is killed with SIGKILL and rsyslog is restarted, both
//! mid-stream, in several trials; every record the sender had accepted arrives at
//! least once, and the duplicates are counted and reported.

use crate::support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loglag::sink::Relp;
use loglag::{Format, Level, Mode, NonBlockingBuilder, Overflow};
use support::{child_role, rerun_as_child};

const TRIALS: u64 = 3;

fn rsyslogd() -> Option<&'static str> {
    ["/usr/sbin/rsyslogd", "/sbin/rsyslogd"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

fn imrelp_installed() -> bool {
    [
        "/usr/lib/x86_64-linux-gnu/rsyslog",
        "/usr/lib/rsyslog",
        "/usr/lib64/rsyslog",
    ]
    .iter()
    .any(|d| Path::new(d).join("imrelp.so").exists())
}

/// An rsyslogd on loopback, stopped with SIGTERM (it writes what it queued) on drop.
struct Rsyslog {
    child: Child,
}

struct Collector {
    dir: tempfile::TempDir,
    port: u16,
    conf: PathBuf,
    out: PathBuf,
}

impl Collector {
    fn new() -> Collector {
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let out = dir.path().join("received.log");
        let conf = dir.path().join("rsyslog.conf");
        let template = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rsyslog/relp.conf"),
        )
        .unwrap();
        std::fs::write(
            &conf,
            template
                .replace("@DIR@", &dir.path().display().to_string())
                .replace("@PORT@", &port.to_string())
                .replace("@OUT@", &out.display().to_string()),
        )
        .unwrap();
        Collector {
            dir,
            port,
            conf,
            out,
        }
    }

    fn start(&self) -> Rsyslog {
        let child = Command::new(rsyslogd().unwrap())
            .args(["-n", "-f"])
            .arg(&self.conf)
            .arg("-i")
            .arg(self.dir.path().join("rsyslogd.pid"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let port = self.port;
        support::within(Duration::from_secs(60), "rsyslogd listening", move || {
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                std::thread::yield_now();
            }
        });
        Rsyslog { child }
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The sender process, killed (SIGKILL) if the test ends early, so a failing
/// assertion never leaves it behind.
struct Sender(Child);

impl Drop for Sender {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Rsyslog {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// The pipeline a sender (and its recovery) uses: records rendered as RFC 5424
/// messages, queued in a spool, sent over RELP.
fn pipeline(spool: &Path, port: u16) -> (loglag::NonBlocking, loglag::WorkerGuard) {
    let sink = Relp::tcp(("127.0.0.1", port))
        .unwrap()
        .retry_for(Duration::from_secs(3600));
    NonBlockingBuilder::default()
        .mode(Mode::Async)
        .capacity_bytes(1 << 20)
        .overflow(Overflow::Block)
        .spool(spool)
        .build(sink)
        .unwrap()
}

/// In the sender process (started by the test with `rerun_as_child`, its role the
/// trial number, its path the spool): logs `trial=T seq=N` records until killed,
/// printing how many it has accepted every 500 records. In the test itself returns
/// at once.
fn be_the_sender_if_asked() {
    let Some((trial, spool)) = child_role() else {
        return;
    };
    let port: u16 = std::env::var("LOGLAG_RELP_PORT").unwrap().parse().unwrap();
    let (writer, _guard) = pipeline(&spool, port);
    loglag::set_global(&writer, Format::Syslog, Level::Info);
    let stdout = std::io::stdout();
    for seq in 0u64.. {
        loglag::info!("trial={trial} seq={seq}");
        if seq % 500 == 499 {
            use std::io::Write as _;
            let mut out = stdout.lock();
            let _ = writeln!(out, "accepted {}", seq + 1);
            let _ = out.flush();
        }
    }
}

/// Follows the sender's progress lines: the latest count of records it has accepted.
fn follow_progress(progress: impl BufRead + Send + 'static) -> Arc<AtomicU64> {
    let accepted = Arc::new(AtomicU64::new(0));
    let latest = accepted.clone();
    std::thread::spawn(move || {
        for line in progress.lines() {
            let Ok(line) = line else { break };
            // The test harness prints its own lines too.
            if let Some(n) = line.trim().strip_prefix("accepted ") {
                latest.store(n.parse().unwrap(), Ordering::Release);
            }
        }
    });
    accepted
}

/// Waits until rsyslog's file holds at least `n` records of `trial`.
fn wait_received(collector: &Collector, trial: u64, n: usize) -> usize {
    let (out, prefix) = (collector.out.clone(), format!("trial={trial} "));
    support::within(Duration::from_secs(120), "rsyslog received", move || loop {
        let got = std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.trim_start().starts_with(&prefix))
            .count();
        if got >= n {
            return got;
        }
        std::thread::yield_now();
    })
}

#[test]
fn a_killed_sender_and_a_restarted_rsyslog_lose_nothing_over_relp() {
    be_the_sender_if_asked();
    if rsyslogd().is_none() || !imrelp_installed() {
        assert!(
            std::env::var_os("LOGLAG_REQUIRE_RSYSLOG").is_none(),
            "LOGLAG_REQUIRE_RSYSLOG is set and rsyslogd with imrelp is not installed (apt-get install rsyslog rsyslog-relp)"
        );
        skip_note!(
            "skipped: rsyslogd with imrelp is not installed (apt-get install rsyslog rsyslog-relp)"
        );
        return;
    }
    let collector = Collector::new();
    let mut rsyslog = collector.start();
    let mut accepted_by_trial = Vec::new();
    let mut resent = 0u64;
    for trial in 0..TRIALS {
        let spool = collector.dir.path().join(format!("trial-{trial}.spool"));
        let mut sender = Sender(
            rerun_as_child(
                module_path!(),
                "a_killed_sender_and_a_restarted_rsyslog_lose_nothing_over_relp",
                &trial.to_string(),
                &spool,
            )
            .env("LOGLAG_RELP_PORT", collector.port.to_string())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
        );
        let progress = follow_progress(BufReader::new(sender.0.stdout.take().unwrap()));
        // rsyslog goes away and comes back while the sender is delivering,
        let before = wait_received(&collector, trial, 1_000);
        drop(rsyslog);
        rsyslog = collector.start();
        // and the sender is killed mid-stream, once delivery has resumed.
        wait_received(&collector, trial, before + 1_000);
        let accepted = progress.load(Ordering::Acquire);
        sender.0.kill().unwrap(); // SIGKILL
        sender.0.wait().unwrap();
        accepted_by_trial.push(accepted);
        // The next start of the service: recovery sends what the spool holds.
        let (writer, guard) = pipeline(&spool, collector.port);
        let recovered = writer.metrics().recovered_records;
        let m = guard.shutdown();
        assert_eq!(m.dropped_records(), 0, "{m:#?}");
        eprintln!("trial {trial}: {accepted}+ accepted before SIGKILL, {recovered} recovered from the spool");
        resent += recovered;
    }
    drop(rsyslog); // SIGTERM: rsyslog writes everything it acknowledged
    let mut copies: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for line in collector.lines() {
        let mut words = line.split_whitespace().filter_map(|w| w.split_once('='));
        let (Some(("trial", t)), Some(("seq", s))) = (words.next(), words.next()) else {
            continue; // the pipeline's own reports
        };
        *copies
            .entry((t.parse().unwrap(), s.parse().unwrap()))
            .or_default() += 1;
    }
    let mut duplicates = 0;
    for (trial, &accepted) in accepted_by_trial.iter().enumerate() {
        let trial = trial as u64;
        let missing: Vec<u64> = (0..accepted)
            .filter(|seq| !copies.contains_key(&(trial, *seq)))
            .collect();
        assert!(
            missing.is_empty(),
            "trial {trial}: {} of {accepted} accepted records never arrived, first {:?}",
            missing.len(),
            &missing[..missing.len().min(10)]
        );
        // No gap either among those accepted after the last progress line.
        let max = copies
            .range((trial, 0)..(trial + 1, 0))
            .map(|(k, _)| k.1)
            .max()
            .unwrap();
        let gaps = (0..=max)
            .filter(|s| !copies.contains_key(&(trial, *s)))
            .count();
        assert_eq!(gaps, 0, "trial {trial}: {gaps} records missing below {max}");
        duplicates += copies
            .range((trial, 0)..(trial + 1, 0))
            .map(|(_, &n)| n - 1)
            .sum::<u64>();
    }
    eprintln!(
        "RELP: {TRIALS} trials, {} records received, every accepted one at least once; {duplicates} duplicates ({resent} records recovered from spools)",
        copies.len()
    );
}
