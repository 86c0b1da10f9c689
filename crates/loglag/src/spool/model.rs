//! A model test of the spool's promise across kills: records are pushed into the real
//! ring, written in batches with the writer's journal steps (`worker.rs`: pop without
//! releasing, `begin_batch`, write, `end_batch`, release), the process is killed at a
//! chosen step, and each next start recovers what is left (killed in turn, perhaps),
//! all in memory: the spool is header and ring words, the destination a `MemFile`.
//!
//! Into the very file a batch went to, every accepted record must be there exactly
//! once, in order; into a pipe, at least once, in order, repeated only from the start
//! of a batch the kill interrupted.
//!
//! What it does not drive: the writer thread itself (`lanes.rs`' merge of thread rings,
//! the handshake, `sync`), live drop reports and their journal, a sink's write error
//! (not a kill), and a kill between two stores of one journal step other than those of
//! `end_batch`.

use std::io;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;

use super::header::{SpoolHeader, SpoolRegion, HEADER_BYTES, TAIL};
use super::mem_file::MemFile;
use super::recovery::{resume, Recovered};
use super::SpoolSync;
use crate::queue::{PopBound, Ring};
use crate::record::level::Level;
use crate::sink::{place, write_all_counted, Sink};

/// A small ring, so that it fills (refusing records) and wraps within a run.
const CAPACITY: u64 = 1024;

/// Where in a batch the process is killed.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// After the sink's `before_batch`, before the journal records the batch.
    BeforeJournal,
    /// Journaled, nothing written.
    AfterJournal,
    /// Journaled, part of the batch written (the byte count comes from the seed). A
    /// kill at a record push instead catches its producer mid-record.
    Partial(usize),
    /// All written, the journal not yet told.
    AfterWrite,
    /// Between `end_batch`'s two stores: the tail advanced, the batch still pending.
    InsideCommit,
    /// Committed, the ring's space not yet released.
    AfterCommit,
}

#[derive(Debug, Clone)]
enum Op {
    /// A record with this many payload bytes.
    Push(usize),
    /// One batch of at most this many bytes.
    Batch(usize),
}

/// One process: its ops, where it is killed, and how the recoveries after it die.
#[derive(Debug, Clone)]
struct Life {
    ops: Vec<Op>,
    /// Killed at this op (before a push, or at `step` in a batch); past the end, idle.
    killed_at: usize,
    step: Step,
    /// Each recovery after the kill dies after so many changing calls, or bytes; the
    /// last one runs to its end.
    recovery_kills: Vec<(Option<usize>, Option<usize>)>,
}

/// What the model knows of the records.
#[derive(Default)]
struct Model {
    /// Every record the ring accepted, in order.
    accepted: Vec<Vec<u8>>,
    /// How many of them the journal has marked delivered (the writer's view).
    committed: usize,
    /// Records of the batch a kill interrupted after its journal entry.
    interrupted: usize,
    /// Records tried so far: numbers them, so that every one is distinct.
    tried: usize,
    /// Where a pipe may go back to: the first record not committed at a kill, and
    /// the furthest it may have got before going back (`usize::MAX`: any, when a
    /// recovery was killed too).
    rewinds: Vec<(usize, usize)>,
}

/// A running process: the ring and the header over one anonymous mapping (the ring
/// takes an `MmapMut`; no file is mapped).
struct Process {
    base: NonNull<AtomicU64>,
    len: usize,
    header: SpoolHeader,
    ring: Ring,
}

impl Process {
    /// Starts over `memory`, what the last process left, as `open` does: recovery over
    /// the region, then a ring at the recovered position. `Err`: killed in recovery,
    /// and `memory` holds what that left.
    fn start(
        memory: &mut [u8],
        fresh: bool,
        sink: &mut MemFile,
    ) -> io::Result<(Process, Recovered)> {
        let len = memory.len();
        let mut map = memmap2::MmapMut::map_anon(len).expect("anonymous memory");
        map.copy_from_slice(memory);
        let base = NonNull::new(map.as_mut_ptr() as *mut AtomicU64).expect("mapped");
        // SAFETY: the mapping's words, page-aligned; only the region uses them here.
        let words = unsafe { std::slice::from_raw_parts_mut(base.as_ptr(), len / 8) };
        let mut region = SpoolRegion::new(words);
        if fresh {
            region.header().init(CAPACITY);
        }
        match resume(&mut region, sink, Path::new("model.spool")) {
            Err(e) => {
                memory.copy_from_slice(&map);
                Err(e)
            }
            Ok((position, recovered)) => {
                // SAFETY: the mapping lives in the ring, which the process holds.
                let header = unsafe { SpoolHeader::at(base, SpoolSync::Never) };
                // SAFETY: the ring's words follow the header's inside the mapping.
                let ring_base = unsafe { base.add(HEADER_BYTES as usize / 8) };
                let holder = std::fs::File::open("/dev/null").expect("/dev/null");
                // SAFETY: the ring area was zeroed by `resume` and is this ring's.
                let ring = unsafe { Ring::mapped(ring_base, CAPACITY, position, map, holder) };
                Ok((
                    Process {
                        base,
                        len,
                        header,
                        ring,
                    },
                    recovered,
                ))
            }
        }
    }

    /// SIGKILL: what stays is the memory, as it is at this instant.
    fn kill(self, memory: &mut [u8]) {
        // SAFETY: the mapping, which the ring still holds; nobody writes it meanwhile.
        let bytes =
            unsafe { std::slice::from_raw_parts(self.base.as_ptr() as *const u8, self.len) };
        memory.copy_from_slice(bytes);
    }

    fn push(&self, model: &mut Model, payload: usize, torn: bool) {
        let n = model.tried;
        model.tried += 1;
        let letters = (0..payload).map(|i| (b'a' + ((n + i) % 26) as u8) as char);
        let record = format!("#{n:04}:{}\n", letters.collect::<String>()).into_bytes();
        if torn {
            // The producer is killed between its reservation and its publication.
            self.ring.reserve_unpublished(record.len());
        } else if self
            .ring
            .try_push(Level::Info, &record, u64::MAX, 0, false, 0)
            .is_ok()
        {
            model.accepted.push(record);
        }
    }

    /// One batch, with the writer's steps. Returns false if the process is killed in
    /// it (at `kill`).
    fn batch(&self, sink: &mut MemFile, model: &mut Model, max: usize, kill: Option<Step>) -> bool {
        let (mut batch, mut scratch) = (Vec::new(), Vec::new());
        let mut render = |_: Level, _: &[u8], _: &mut Vec<u8>| unreachable!("nothing captured");
        let start = self.ring.tail_position();
        let (taken, end) = self.ring.pop_into(
            &mut batch,
            max,
            false,
            &mut scratch,
            &mut render,
            PopBound::NONE,
            |_| {},
        );
        if taken == 0 {
            return kill.is_none();
        }
        let expected = model.accepted[model.committed..model.committed + taken].concat();
        assert_eq!(batch, expected, "the model follows the ring");
        sink.before_batch(batch.len()).expect("alive");
        if let Some(Step::BeforeJournal) = kill {
            return false;
        }
        let (position, identity) = place(sink);
        self.header
            .begin_batch(end, position, identity, batch.len() as u64);
        model.interrupted = taken;
        match kill {
            Some(Step::AfterJournal) => return false,
            Some(Step::Partial(seed)) if batch.len() > 1 => {
                sink.die_after(None, Some(1 + seed % (batch.len() - 1)));
                let (_, written) = write_all_counted(sink, &batch);
                assert!(written.is_err(), "killed mid-write");
                return false;
            }
            _ => {}
        }
        write_all_counted(sink, &batch).1.expect("alive");
        match kill {
            Some(Step::AfterWrite) | Some(Step::Partial(_)) => return false,
            Some(Step::InsideCommit) => {
                self.header.word(TAIL).store(end, Ordering::Release);
                model.committed += taken;
                model.interrupted = 0;
                return false;
            }
            _ => {}
        }
        self.header.end_batch(end);
        model.committed += taken;
        model.interrupted = 0;
        if let Some(Step::AfterCommit) = kill {
            return false;
        }
        self.ring.release(start, end);
        true
    }
}

/// Runs `lives` against one spool and one destination; returns what it holds and the
/// model's records.
fn run(lives: &[Life], file: bool, max_write: usize) -> Result<(MemFile, Model), TestCaseError> {
    let mut memory = vec![0u8; (HEADER_BYTES + CAPACITY) as usize];
    let mut sink = if file {
        MemFile::file()
    } else {
        MemFile::pipe()
    };
    sink.max_write = max_write;
    let mut model = Model::default();
    let mut fresh = true;
    let mut kills: &[(Option<usize>, Option<usize>)] = &[];
    for life in lives.iter().map(Some).chain([None]) {
        // A start: recoveries killed one after another, then one that finishes.
        let (process, recovered) = loop {
            match kills.split_first() {
                Some((&(calls, bytes), rest)) => {
                    kills = rest;
                    sink.die_after(calls, bytes);
                }
                None => sink.restart(),
            }
            match Process::start(&mut memory, fresh, &mut sink) {
                Ok(started) => break started,
                Err(e) => prop_assert!(sink.dead, "recovery failed without a kill: {e}"),
            }
        };
        sink.restart();
        fresh = false;
        model.committed = model.accepted.len();
        if file {
            prop_assert!(!recovered.at_least_once, "{recovered:?}");
            let expected = model.accepted.concat();
            prop_assert_eq!(
                String::from_utf8_lossy(&sink.bytes),
                String::from_utf8_lossy(&expected),
                "after a start, the file holds every accepted record once"
            );
        }
        let Some(life) = life else {
            break;
        };
        let mut killed = false;
        for (i, op) in life.ops.iter().enumerate() {
            let kill = (i == life.killed_at).then_some(life.step);
            match *op {
                Op::Push(_) if kill.is_some() => {
                    if let Some(Step::Partial(_)) = kill {
                        process.push(&mut model, 0, true);
                    }
                    killed = true;
                }
                Op::Push(payload) => process.push(&mut model, payload, false),
                Op::Batch(max) => killed = !process.batch(&mut sink, &mut model, max, kill),
            }
            if killed {
                break;
            }
        }
        // A kill inside a batch may leave it (in part) in the sink: a pipe gets it
        // again from its first record, having got at most to its end. A killed
        // recovery repeats from there too, having got anywhere.
        let furthest = if life.recovery_kills.is_empty() {
            model.committed + model.interrupted
        } else {
            usize::MAX
        };
        model.rewinds.push((model.committed, furthest));
        model.interrupted = 0;
        process.kill(&mut memory);
        kills = &life.recovery_kills;
    }
    Ok((sink, model))
}

/// Checks that `out` holds every record at least once, in order, and goes back only
/// to where `rewinds` allow: to the first record of an interrupted batch, from no
/// further than it may have got. Records start with `#`, which appears nowhere else.
fn at_least_once(
    out: &[u8],
    records: &[Vec<u8>],
    rewinds: &[(usize, usize)],
) -> Result<(), String> {
    if out.first().is_some_and(|&b| b != b'#') {
        return Err("the output does not start with a record".into());
    }
    let starts: Vec<usize> = (0..out.len()).filter(|&i| out[i] == b'#').collect();
    // Where the output is in the records: the next one it should hold.
    let mut cur = 0;
    // The last segment was a record cut by a kill: what follows goes back.
    let mut cut = false;
    // The floors the output may go back to from `cur`, the latest last.
    let allowed = |cur: usize| {
        rewinds
            .iter()
            .filter(move |&&(floor, furthest)| floor <= cur && cur <= furthest)
            .map(|&(floor, _)| floor)
    };
    for (k, &s) in starts.iter().enumerate() {
        let segment = &out[s..starts.get(k + 1).copied().unwrap_or(out.len())];
        let whole = records.iter().position(|r| r == segment);
        match whole {
            Some(m) if m == cur && !cut => cur += 1,
            Some(m) if m <= cur && allowed(cur).any(|floor| floor == m) => {
                cur = m + 1;
                cut = false;
            }
            _ if !cut && records.get(cur).is_some_and(|r| r.starts_with(segment)) => cut = true,
            // A cut rewrite: the output went back and was cut again.
            _ => match allowed(cur)
                // A floor at the end (a life that accepted nothing) starts no record.
                .filter(|&floor| records.get(floor).is_some_and(|r| r.starts_with(segment)))
                .max()
            {
                Some(floor) => {
                    cur = floor;
                    cut = true;
                }
                None => {
                    return Err(format!(
                        "{:?} where record {cur} belongs, and no interrupted batch starts there",
                        String::from_utf8_lossy(segment)
                    ))
                }
            },
        }
    }
    if cut || cur != records.len() {
        return Err(format!(
            "{cur} of {} records delivered whole",
            records.len()
        ));
    }
    Ok(())
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::BeforeJournal),
        Just(Step::AfterJournal),
        any::<usize>().prop_map(Step::Partial),
        Just(Step::AfterWrite),
        Just(Step::InsideCommit),
        Just(Step::AfterCommit),
    ]
}

fn life() -> impl Strategy<Value = Life> {
    let op = prop_oneof![
        3 => (0usize..60).prop_map(Op::Push),
        1 => (1usize..400).prop_map(Op::Batch),
    ];
    let kill = (
        proptest::option::of(0usize..6),
        proptest::option::of(0usize..300),
    );
    (
        proptest::collection::vec(op, 0..40),
        0usize..48,
        step(),
        proptest::collection::vec(kill, 0..3),
    )
        .prop_map(|(ops, killed_at, step, recovery_kills)| Life {
            ops,
            killed_at,
            step,
            recovery_kills,
        })
}

proptest! {
    // Under miri (which checks the ring's and the header's `unsafe`), a few cases:
    // one takes it seconds, and the file of past failures is not read.
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 512 },
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    #[test]
    fn into_the_same_file_every_accepted_record_lands_exactly_once(
        lives in proptest::collection::vec(life(), 1..4),
        max_write in 0usize..40,
    ) {
        let (sink, model) = run(&lives, true, max_write)?;
        let expected = model.accepted.concat();
        prop_assert_eq!(String::from_utf8_lossy(&sink.bytes), String::from_utf8_lossy(&expected));
    }

    #[test]
    fn into_a_pipe_every_accepted_record_lands_at_least_once_in_order(
        lives in proptest::collection::vec(life(), 1..4),
        max_write in 0usize..40,
    ) {
        let (sink, model) = run(&lives, false, max_write)?;
        if let Err(why) = at_least_once(&sink.bytes, &model.accepted, &model.rewinds) {
            prop_assert!(false, "{}\n{}", why, String::from_utf8_lossy(&sink.bytes));
        }
    }
}
