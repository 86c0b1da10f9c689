//! Test sinks that let a test hold the writer inside a write, observe every write, and
//! inject short writes and failures. Synchronisation is by channels and condvars only.
#![allow(dead_code)]

use std::io;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};

use loglag::sink::Sink;

#[derive(Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    pub fn closed() -> Gate {
        Gate::default()
    }
    pub fn closed_then_open() -> Gate {
        let g = Gate::default();
        g.open();
        g
    }
    pub fn open(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }
    fn wait(&self) {
        let mut open = self.0 .0.lock().unwrap();
        while !*open {
            open = self.0 .1.wait(open).unwrap();
        }
    }
}

/// What the test sink does with each write call.
#[derive(Clone, Copy, Debug)]
pub enum Behaviour {
    Fast,
    /// Accept at most this many bytes per call.
    Short(usize),
    /// Fail every n-th call with ENOSPC, writing nothing.
    FailEvery(u32),
    /// Yield the thread before each write.
    Slow,
}

pub struct TestSink {
    pub out: Arc<Mutex<Vec<u8>>>,
    gate: Option<Gate>,
    entered: Option<Sender<()>>,
    wrote: Option<Sender<Vec<u8>>>,
    behaviour: Behaviour,
    calls: u32,
}

impl TestSink {
    pub fn new(behaviour: Behaviour) -> (TestSink, Arc<Mutex<Vec<u8>>>) {
        let out = Arc::new(Mutex::new(Vec::new()));
        (
            TestSink {
                out: out.clone(),
                gate: None,
                entered: None,
                wrote: None,
                behaviour,
                calls: 0,
            },
            out,
        )
    }

    /// Writes block on `gate`; `entered` fires each time a write call starts.
    pub fn gated(mut self, gate: Gate) -> (TestSink, Receiver<()>) {
        let (tx, rx) = mpsc::channel();
        self.gate = Some(gate);
        self.entered = Some(tx);
        (self, rx)
    }

    /// Each successful write is also sent on the returned channel.
    pub fn observed(mut self) -> (TestSink, Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel();
        self.wrote = Some(tx);
        (self, rx)
    }
}

impl Sink for TestSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.calls += 1;
        if let Some(tx) = &self.entered {
            let _ = tx.send(());
        }
        if let Some(g) = &self.gate {
            g.wait();
        }
        let n = match self.behaviour {
            Behaviour::Fast => buf.len(),
            Behaviour::Short(max) => buf.len().min(max.max(1)),
            Behaviour::FailEvery(k) if self.calls % k.max(1) == 0 => {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC))
            }
            Behaviour::FailEvery(_) => buf.len(),
            Behaviour::Slow => {
                std::thread::yield_now();
                buf.len()
            }
        };
        self.out.lock().unwrap().extend_from_slice(&buf[..n]);
        if let Some(tx) = &self.wrote {
            let _ = tx.send(buf[..n].to_vec());
        }
        Ok(n)
    }
}

/// Lines of the output that are records (not loglag's own drop reports).
pub fn record_lines(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !l.contains("loglag: dropped "))
        .map(str::to_owned)
        .collect()
}

/// Sum of the counts in in-band "loglag: dropped N records" reports.
pub fn reported_drops(out: &[u8]) -> u64 {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| l.split_once("loglag: dropped ").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

pub fn assert_accounted(m: &loglag::Metrics) {
    assert_eq!(
        m.written_records + m.dropped_records + m.in_flight_records,
        m.accepted,
        "{m:#?}"
    );
}
