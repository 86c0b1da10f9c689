use std::io;
use std::time::{Duration, Instant};

use super::backoff::Backoff;
use super::{write_all_counted, Sink, SinkReport};

/// A chain of sinks: when one fails, the batch goes to the next. A failed sink is
/// skipped (circuit open) and re-probed after a backoff that doubles from
/// `initial_backoff` up to `max_backoff`; once a probe succeeds it is used again.
///
/// ```
/// use loglag::sink::{Fallback, FdSink};
/// let chain = Fallback::new(FdSink::append("/dev/full")?).then(FdSink::stderr());
/// let (writer, _guard) = loglag::NonBlockingBuilder::default().build(chain).expect("a valid pipeline");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Fallback {
    links: Vec<Link>,
    initial_backoff: Duration,
    max_backoff: Duration,
    /// What the chain will say at the next [`Sink::take_report`]: its own absorbed
    /// errors, and the links' reports, with the refused offsets of the link that took
    /// each batch shifted to the chain's own count of bytes (`passed`).
    pending: SinkReport,
    passed: u64,
}

struct Link {
    sink: Box<dyn Sink>,
    /// Skipped (circuit open) while it waits after a failure.
    backoff: Backoff,
}

impl std::fmt::Debug for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fallback")
            .field("links", &self.links.len())
            .finish()
    }
}

impl Fallback {
    /// A chain that starts with `primary`.
    pub fn new(primary: impl Sink) -> Fallback {
        let (initial_backoff, max_backoff) = (Duration::from_millis(50), Duration::from_secs(5));
        Fallback {
            links: vec![Link {
                sink: Box::new(primary),
                backoff: Backoff::new(initial_backoff, max_backoff),
            }],
            initial_backoff,
            max_backoff,
            pending: SinkReport::default(),
            passed: 0,
        }
    }

    /// Adds the next sink in the chain.
    pub fn then(mut self, next: impl Sink) -> Fallback {
        self.links.push(Link {
            sink: Box::new(next),
            backoff: Backoff::new(self.initial_backoff, self.max_backoff),
        });
        self
    }

    /// Sets the backoff before re-probing a failed sink (default 50 ms, doubling to 5 s).
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Fallback {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        for link in &mut self.links {
            link.backoff = Backoff::new(initial, self.max_backoff);
        }
        self
    }
}

impl Sink for Fallback {
    /// Writes the whole buffer to the first healthy sink; reports it all as written, or
    /// the last error when every sink failed.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let now = Instant::now();
        let mut last_err = None;
        let last = self.links.len() - 1;
        for (i, link) in self.links.iter_mut().enumerate() {
            // The last link is always tried: skipping everything would lose the batch.
            if i != last && link.backoff.waiting(now) {
                continue;
            }
            let before = link.sink.as_file().and_then(|f| f.position());
            // Offsets a link reports are its own: counted from this write. What else
            // it had to report is kept for the chain's own report.
            let mut stale = link.sink.take_report();
            stale.refused.clear();
            self.pending.merge(stale);
            match write_all_counted(link.sink.as_mut(), buf).1 {
                Ok(()) => {
                    let base = self.passed;
                    let mut report = link.sink.take_report();
                    report.refused.iter_mut().for_each(|at| *at += base);
                    self.pending.merge(report);
                    self.passed += buf.len() as u64;
                    link.backoff.reset();
                    if last_err.is_some() {
                        self.pending.absorbed_errors += 1;
                    }
                    return Ok(buf.len());
                }
                Err((e, partial)) => {
                    // Cut a half-written batch back out of a file, so the records the
                    // next sink takes are not also left torn in this one.
                    if let (Some(len), true) = (before, partial > 0) {
                        let _ = super::truncate_to(link.sink.as_mut(), len);
                    }
                    // A backoff too long for the clock means: not before the end.
                    link.backoff.failed(now);
                    last_err = Some(e);
                }
            }
        }
        Err(last_err.unwrap_or_else(|| io::Error::other("no sink in fallback chain")))
    }

    fn flush(&mut self) -> io::Result<()> {
        for link in &mut self.links {
            let _ = link.sink.flush();
        }
        Ok(())
    }

    /// Every link gets its chance to rotate (a rolling file in the chain): the batch
    /// may go to any of them. A link that cannot will fail its write instead.
    fn before_batch(&mut self, batch_len: usize) -> io::Result<()> {
        for link in &mut self.links {
            let _ = link.sink.before_batch(batch_len);
        }
        Ok(())
    }

    /// The chain's own absorbed errors (batches a later link took) and each link's
    /// report (a refusal, a reopened file), notices in chain order; refused offsets
    /// count from the chain's first byte since the last report.
    fn take_report(&mut self) -> SinkReport {
        let mut report = std::mem::take(&mut self.pending);
        for link in &mut self.links {
            // A link's refusals were taken, and shifted, right after its write.
            let mut more = link.sink.take_report();
            more.refused.clear();
            report.merge(more);
        }
        self.passed = 0;
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::WriterSink;
    use std::sync::{Arc, Mutex};

    struct Flaky {
        fail: Arc<Mutex<bool>>,
        got: Arc<Mutex<Vec<u8>>>,
    }
    impl Sink for Flaky {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if *self.fail.lock().unwrap() {
                #[cfg(unix)]
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
                #[cfg(not(unix))]
                return Err(io::Error::other("no space left on device"));
            }
            self.got.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
    }

    #[test]
    fn fails_over_then_reprobes_primary() {
        let fail = Arc::new(Mutex::new(true));
        let primary = Arc::new(Mutex::new(Vec::new()));
        let backup = Arc::new(Mutex::new(Vec::new()));
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl io::Write for Shared {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut chain = Fallback::new(Flaky {
            fail: fail.clone(),
            got: primary.clone(),
        })
        .then(WriterSink::new(Shared(backup.clone())))
        .backoff(Duration::ZERO, Duration::ZERO);
        assert_eq!(chain.write(b"a\n").unwrap(), 2);
        assert_eq!(chain.take_report().absorbed_errors, 1);
        *fail.lock().unwrap() = false;
        chain.write(b"b\n").unwrap();
        assert_eq!(*backup.lock().unwrap(), b"a\n");
        assert_eq!(
            *primary.lock().unwrap(),
            b"b\n",
            "primary is re-probed and used again"
        );
    }

    #[test]
    fn the_backoff_doubles_from_50_ms_to_5_s_and_skips_the_failed_sink_meanwhile() {
        let fail = Arc::new(Mutex::new(true));
        let primary = Arc::new(Mutex::new(Vec::new()));
        let backup = Arc::new(Mutex::new(Vec::new()));
        let mut chain = Fallback::new(Flaky {
            fail: fail.clone(),
            got: primary.clone(),
        })
        .then(Flaky {
            fail: Arc::new(Mutex::new(false)),
            got: backup.clone(),
        });
        let mut seen = Vec::new();
        for _ in 0..10 {
            chain.write(b"x\n").unwrap();
            seen.push(chain.links[0].backoff.delay());
            // Inside the backoff the primary is not tried: the batch goes straight on.
            chain.write(b"y\n").unwrap();
            assert_eq!(chain.links[0].backoff.delay(), *seen.last().unwrap());
            // Let the backoff expire, as time would.
            chain.links[0].backoff.expire();
        }
        let ms: Vec<u128> = seen.iter().map(|d| d.as_millis()).collect();
        assert_eq!(
            ms,
            [50, 100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000],
            "doubling from 50 ms, capped at 5 s"
        );
        assert_eq!(
            backup.lock().unwrap().len(),
            40,
            "every batch reached the backup"
        );
        *fail.lock().unwrap() = false;
        chain.write(b"z\n").unwrap();
        assert_eq!(*primary.lock().unwrap(), b"z\n");
        assert_eq!(
            chain.links[0].backoff.delay(),
            Duration::ZERO,
            "a success resets it"
        );
    }

    /// A link that took the batch but refuses the record at offset 4 of each write,
    /// counting it as an absorbed error with a notice, and counts the rotations it was
    /// offered.
    struct Refusing {
        offered: Arc<Mutex<usize>>,
        pending: SinkReport,
    }

    impl Sink for Refusing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            // The chain asks before each write, so an offset counts from this one.
            self.pending.refused.push(4);
            self.pending.absorbed_errors += 1;
            self.pending.notice = Some("the collector refused a record".into());
            Ok(buf.len())
        }
        fn before_batch(&mut self, _batch_len: usize) -> io::Result<()> {
            *self.offered.lock().unwrap() += 1;
            Ok(())
        }
        fn take_report(&mut self) -> SinkReport {
            std::mem::take(&mut self.pending)
        }
    }

    #[test]
    fn a_links_refusals_notices_and_rotation_pass_through_the_chain() {
        let offered = Arc::new(Mutex::new(0));
        let mut chain = Fallback::new(Refusing {
            offered: offered.clone(),
            pending: SinkReport::default(),
        })
        .then(WriterSink::new(io::sink()));
        chain.before_batch(10).unwrap();
        assert_eq!(chain.write(b"0123456789").unwrap(), 10);
        assert_eq!(*offered.lock().unwrap(), 1, "a rolling link gets to rotate");
        let report = chain.take_report();
        assert_eq!(report.absorbed_errors, 1);
        assert_eq!(
            report.notice.as_deref(),
            Some("the collector refused a record")
        );
        assert_eq!(report.refused, [4]);
        // Offsets count from the chain's first byte since it was last asked.
        chain.write(b"0123456789").unwrap();
        chain.write(b"abcdefg").unwrap();
        let report = chain.take_report();
        assert_eq!(report.refused, [4, 14]);
        assert_eq!(report.absorbed_errors, 2);
        assert_eq!(
            chain.take_report(),
            SinkReport::default(),
            "each is said once"
        );
    }
}
