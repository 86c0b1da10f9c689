//! Model checks of the lock-free core under loom, built only with
//! `RUSTFLAGS="--cfg loglag_loom"` (`scripts/loom`): every interleaving of a few
//! threads (within the stated preemption bound), and the values a relaxed or acquire
//! load may return under the C++ memory model, for the smallest piece that carries
//! each ordering: `Ring`'s push and pop driven directly, `Lanes` with tiny rings,
//! `Handshake` as it is. Each model prints how many interleavings it explored.
//!
//! What loom cannot see: `memcpy` (under loom every ring word is a loom atomic, and a
//! payload write is relaxed word stores, a record written in place included: its
//! `fill` writes a scratch buffer first; miri checks the real copies, `scripts/miri`),
//! `thread_local!` (a thread's hand-over is driven through `claim` and `hand_back`),
//! and time (`Condvar::wait_timeout` waits without a timeout under loom; a deadline
//! is modelled as already passed, or as never reached).

use std::time::{Duration, Instant};

use loom::thread;

use crate::core::handshake::{Handshake, WriterEnd};
use crate::queue::lanes::{Lanes, WriterView};
use crate::queue::{footprint, NotInPlace, PopBound, Popped, Ring, Stamps};
use crate::record::level::Level;
use crate::sys::sync::{Arc, Mutex};

/// Runs `model` under loom with `preemption_bound` (`None`: exhaustive) and prints
/// the interleavings it explored.
fn check(name: &str, preemption_bound: Option<usize>, model: impl Fn() + Sync + Send + 'static) {
    let iterations = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = preemption_bound;
    builder.max_branches = 100_000;
    let started = Instant::now();
    let counted = iterations.clone();
    builder.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    eprintln!(
        "loom model {name}: {} interleavings, preemption bound {}, {:.1?}",
        iterations.load(std::sync::atomic::Ordering::Relaxed),
        preemption_bound.map_or("none (exhaustive)".to_string(), |b| b.to_string()),
        started.elapsed()
    );
}

/// Pops every published record, each as (level, payload).
fn pop(ring: &Ring, out: &mut Vec<(Level, Vec<u8>)>) {
    let mut bytes = Vec::new();
    let mut popped: Vec<Popped> = Vec::new();
    ring.pop_into(
        &mut bytes,
        usize::MAX,
        true,
        &mut Vec::new(),
        // A captured record (one written in place) renders as its own bytes.
        &mut |_, captured, out| out.extend_from_slice(captured),
        PopBound::NONE,
        |p| popped.push(p),
    );
    let mut rest = &bytes[..];
    for p in popped {
        let (record, tail) = rest.split_at(p.len);
        out.push((p.level, record.to_vec()));
        rest = tail;
    }
}

/// Pushes into a shared ring, waiting (yielding) while it is full.
fn push_shared(ring: &Ring, level: Level, payload: &[u8], key: u64) {
    while ring
        .try_push(level, payload, u64::MAX, 1, false, key)
        .is_err()
    {
        thread::yield_now();
    }
}

/// Pushes into a ring this thread owns, waiting (yielding) while it is full.
fn push_owned(ring: &Ring, level: Level, payload: &[u8], key: u64) {
    while ring
        .try_push_owned(level, payload, u64::MAX, 1, false, key)
        .is_err()
    {
        thread::yield_now();
    }
}

/// The shared ring: two producers reserve with a compare-and-swap on `head` and
/// publish with a release store of the state word, while the consumer reads committed
/// records in order, zeroes them and releases `tail`. The ring holds two records and
/// already holds one, so a producer fits only by reusing the space the consumer
/// releases meanwhile: a stale header there must never read as committed, and no
/// record is lost, repeated or torn. A push that finds the ring full gives up (no
/// spinning, so the model stays small).
#[test]
fn loom_shared_ring_two_producers_and_the_consumer() {
    check("shared_ring", Some(3), || {
        two_producers_into_a_ring_holding_one(false)
    });
}

/// Two producers into a shared ring of two that holds one record, while the consumer
/// pops twice: `a1` copied or written in place, `b1` copied. Each record pushed
/// comes out once, whole, after the one already there.
fn two_producers_into_a_ring_holding_one(a_in_place: bool) {
    // 80 bytes: two records of 2 bytes (40 bytes each).
    let ring = Arc::new(Ring::new(80));
    ring.try_push(Level::Info, b"x0", u64::MAX, 1, false, 0)
        .unwrap();
    let producers: Vec<_> = [(b"a1", a_in_place), (b"b1", false)]
        .into_iter()
        .map(|(payload, in_place)| {
            let ring = ring.clone();
            thread::spawn(move || {
                let pushed = if in_place {
                    let stamps = Stamps {
                        merge_key: 1,
                        enqueued: 1,
                    };
                    let filled =
                        ring.try_push_in_place(Level::Info, 2, u64::MAX, &stamps, |into| {
                            into.copy_from_slice(payload)
                        });
                    assert_ne!(
                        filled,
                        Err(NotInPlace::CopyInstead),
                        "copy asked of a ring that never evicted"
                    );
                    filled.is_ok()
                } else {
                    ring.try_push(Level::Info, payload, u64::MAX, 1, false, 1)
                        .is_ok()
                };
                pushed.then_some(&payload[..])
            })
        })
        .collect();
    let mut out = Vec::new();
    for _ in 0..2 {
        pop(&ring, &mut out);
        thread::yield_now();
    }
    let pushed: Vec<&[u8]> = producers
        .into_iter()
        .filter_map(|p| p.join().unwrap())
        .collect();
    pop(&ring, &mut out);
    let mut payloads: Vec<&[u8]> = out.iter().map(|(_, p)| &p[..]).collect();
    assert_eq!(payloads[0], b"x0", "the oldest first: {payloads:?}");
    payloads.remove(0);
    payloads.sort();
    let mut expected = pushed;
    expected.sort();
    assert_eq!(
        payloads, expected,
        "each record pushed comes out once, whole"
    );
    assert!(!expected.is_empty(), "the first push always fits");
    assert_eq!(ring.used_bytes(), 0);
}

/// A thread's own ring: one producer, no compare-and-swap, `head` stored (release)
/// after the record is published, the writer's `tail` read (acquire) only when the
/// cached copy says the record does not fit. Three records through a ring of two
/// while the writer pops: the third fits only if the cached tail is refreshed after
/// the writer's release, and reused space is not zeroed on release.
#[test]
fn loom_single_producer_ring_and_its_cached_tail() {
    check("single_producer_ring", None, || {
        three_through_a_ring_of_two(false)
    });
}

/// Three records pushed by a ring's one producer, copied or written in place, while
/// the writer pops twice: in order, each once, whole; the first two always fit.
fn three_through_a_ring_of_two(in_place: bool) {
    let ring = Arc::new(Ring::single_producer(80));
    let producer = {
        let ring = ring.clone();
        thread::spawn(move || {
            let mut pushed: Vec<&[u8]> = Vec::new();
            for (key, payload) in [b"r1", b"r2", b"r3"].into_iter().enumerate() {
                let key = key as u64;
                let fits = if in_place {
                    let filled = ring.try_push_owned_in_place(Level::Info, 2, u64::MAX, |into| {
                        into.copy_from_slice(payload);
                        Stamps {
                            merge_key: key,
                            enqueued: 1,
                        }
                    });
                    assert_ne!(
                        filled,
                        Err(NotInPlace::CopyInstead),
                        "copy asked of a ring that never evicted"
                    );
                    filled.is_ok()
                } else {
                    ring.try_push_owned(Level::Info, payload, u64::MAX, 1, false, key)
                        .is_ok()
                };
                if fits {
                    pushed.push(payload);
                }
            }
            pushed
        })
    };
    let mut out = Vec::new();
    for _ in 0..2 {
        pop(&ring, &mut out);
        thread::yield_now();
    }
    let pushed = producer.join().unwrap();
    pop(&ring, &mut out);
    let payloads: Vec<&[u8]> = out.iter().map(|(_, p)| &p[..]).collect();
    assert_eq!(payloads, pushed, "in order, each once, whole");
    assert_eq!(&pushed[..2], [&b"r1"[..], b"r2"], "two always fit");
}

/// A thread ring handed over at thread exit: the thread that had it stores `owned =
/// false` (release) after its last `head`; the next thread claims it with a
/// compare-and-swap (acquire) and must push after that `head`, with the cached tail
/// it inherits, while the writer merges. Either thread may claim first (the first
/// claim creates the ring); the other gets it if it was handed back by then.
#[test]
fn loom_thread_ring_handed_over_at_thread_exit() {
    check("thread_ring_handover", None, || {
        let lanes = Arc::new(Lanes::with_rings(u64::MAX - 100, 160, 80, 1));
        let threads: Vec<_> = [b"A", b"B"]
            .into_iter()
            .map(|payload| {
                let lanes = lanes.clone();
                thread::spawn(move || {
                    // A thread that finds the ring taken logs to the shared ring (not
                    // modelled: it pushes nothing).
                    let ring = lanes.claim()?;
                    push_owned(&ring.ring, Level::Info, payload, 0);
                    // The thread exits.
                    ring.hand_back();
                    Some(payload[0])
                })
            })
            .collect();
        let mut view = WriterView::default();
        let mut out = Vec::new();
        // The writer refreshes its view of the rings at each sweep.
        let mut drain = |view: &mut WriterView| {
            lanes.refresh(view);
            lanes.merge_all(view, &mut out);
        };
        drain(&mut view);
        let pushed: Vec<u8> = threads
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect();
        drain(&mut view);
        assert!(!pushed.is_empty(), "the first claim creates the ring");
        let (mut out, mut pushed) = (out, pushed);
        out.sort();
        pushed.sort();
        assert_eq!(out, pushed, "each record once");
        assert_eq!(lanes.used_bytes(), 0);
    });
}

/// The writer's merge across rings and the flush progress sum. A thread logs into
/// its own ring, then flushes: its target is the sum of every ring's `head`. Another
/// thread logs into the shared ring. The writer sweeps: heads summed at the start
/// (under the snapshot lock), records merged by key, and the sum published as
/// progress only once every ring's tail has passed its head. Whenever the published
/// progress reaches the flush's target, the flushing thread's record is written.
#[test]
fn loom_merge_across_rings_and_the_flush_progress_sum() {
    check("merge_and_flush_progress", Some(3), || {
        let lanes = Arc::new(Lanes::with_rings(u64::MAX - 101, 240, 80, 1));
        let flusher = {
            let lanes = lanes.clone();
            thread::spawn(move || {
                let ring = lanes.claim().expect("the only claim");
                push_owned(&ring.ring, Level::Info, b"1", 1);
                lanes.head_sum()
            })
        };
        let other = {
            let lanes = lanes.clone();
            thread::spawn(move || push_shared(&lanes.shared, Level::Info, b"2", 2))
        };
        let mut view = WriterView::default();
        let mut out = Vec::new();
        let mut progress = 0;
        // The writer's loop: a sweep, a merge, its progress (twice, racing the
        // producers).
        let sweep_once = |view: &mut WriterView, out: &mut Vec<u8>, progress: &mut u64| {
            let sweep = lanes.begin_sweep(view);
            lanes.merge_all(view, out);
            if let Some(p) = lanes.progress(view, Some(&sweep)) {
                *progress = (*progress).max(p);
            }
        };
        sweep_once(&mut view, &mut out, &mut progress);
        let seen_by_then = out.clone();
        let progress_then = progress;
        sweep_once(&mut view, &mut out, &mut progress);
        let target = flusher.join().unwrap();
        other.join().unwrap();
        if progress_then >= target {
            assert!(
                seen_by_then.contains(&b'1'),
                "progress {progress_then} passed target {target} before record 1 was written"
            );
        }
        if progress >= target {
            assert!(
                out.contains(&b'1'),
                "progress {progress} passed target {target} before record 1 was written"
            );
        }
        sweep_once(&mut view, &mut out, &mut progress);
        assert!(out == b"12" || out == b"21", "each record once: {out:?}");
        assert!(progress >= target, "a finished sweep passes every target");
    });
}

/// The handshake at the shutdown deadline: the writer accounts for its batch
/// (`end_batch`) and exits, while the guard, its deadline passed, abandons the writer
/// and counts the batch as lost unless the writer has exited. Both decisions are
/// taken under the progress lock: exactly one party counts the batch.
#[test]
fn loom_handshake_at_the_shutdown_deadline_counts_a_batch_once() {
    check("handshake_deadline", None, || {
        let handshake = Arc::new(Handshake::default());
        let counted = Arc::new(Mutex::new([0u64; 2]));
        let writer = {
            let (handshake, counted) = (handshake.clone(), counted.clone());
            // The batch is registered before the writer makes any sink call.
            handshake.begin_batch(100, [0, 0, 1, 0, 0]);
            thread::spawn(move || {
                // The sink writes the batch.
                let accounted = handshake.end_batch(|| counted.lock().unwrap()[0] += 1);
                if accounted {
                    handshake.advance(100);
                }
                handshake.exit(100, |batch| {
                    assert!(accounted, "an abandoned writer is never asked to count");
                    counted.lock().unwrap()[0] += batch.take().iter().sum::<u64>();
                });
            })
        };
        // The deadline has passed when the guard looks.
        let end = handshake.wait_exit_or_abandon(Instant::now(), |batch| {
            counted.lock().unwrap()[1] += batch.take().iter().sum::<u64>();
        });
        writer.join().unwrap();
        let [by_writer, by_guard] = *counted.lock().unwrap();
        assert_eq!(
            by_writer + by_guard,
            1,
            "counted once: {by_writer} + {by_guard}"
        );
        // The guard may abandon a writer that has accounted but not yet exited: then
        // it finds nothing in flight.
        assert!(by_guard == 0 || end == WriterEnd::Abandoned);
        assert_eq!(handshake.in_flight_bytes(), 0);
    });
}

/// The writer takes records out of the rings and registers them as its batch in
/// flight (`Core::take_batch` through `Handshake::take_into_flight`), while the guard,
/// its deadline passed, abandons the writer and counts as lost what is in flight and
/// what is still in the rings. When the pop and the registration were two steps, a
/// guard that abandoned the writer between them counted neither the records (out of
/// the rings, not yet in flight) nor let the writer count them: this model found that,
/// and now the two are one step under the lock the guard decides under. The ring is a
/// count of records under a lock, as the ring's consumer lock serialises the writer's
/// pop with the guard's `discard_committed`.
#[test]
fn loom_handshake_abandon_between_pop_and_begin_batch() {
    check("handshake_abandon_before_begin_batch", None, || {
        let handshake = Arc::new(Handshake::default());
        let ring = Arc::new(Mutex::new(1u64));
        let counted = Arc::new(Mutex::new([0u64; 2]));
        let writer = {
            let (handshake, ring, counted) = (handshake.clone(), ring.clone(), counted.clone());
            thread::spawn(move || {
                let taken = handshake.take_into_flight(|| {
                    let taken = std::mem::take(&mut *ring.lock().unwrap());
                    (taken, (taken > 0).then_some((100, [0, 0, taken, 0, 0])))
                });
                let Ok(taken) = taken else {
                    return; // abandoned: counts nothing
                };
                if handshake.end_batch(|| counted.lock().unwrap()[0] += taken) {
                    handshake.advance(100);
                }
                handshake.exit(100, |batch| {
                    counted.lock().unwrap()[0] += batch.take().iter().sum::<u64>();
                });
            })
        };
        handshake.wait_exit_or_abandon(Instant::now(), |batch| {
            let mut counted = counted.lock().unwrap();
            counted[1] += batch.take().iter().sum::<u64>();
            counted[1] += std::mem::take(&mut *ring.lock().unwrap());
        });
        writer.join().unwrap();
        let [by_writer, by_guard] = *counted.lock().unwrap();
        assert_eq!(
            by_writer + by_guard,
            1,
            "counted once: {by_writer} + {by_guard}"
        );
        assert_eq!(handshake.in_flight_bytes(), 0, "nothing left in flight");
        assert_eq!(*ring.lock().unwrap(), 0, "nothing left in the ring");
    });
}

/// The handshake's waits: a flush waits for progress and the guard for the writer's
/// exit, before any deadline. The waiter count is changed and read under the progress
/// lock, so no wake-up is lost (under loom a wait has no timeout, and a lost wake-up
/// is a deadlock).
#[test]
fn loom_handshake_waits_are_woken() {
    check("handshake_wakeups", None, || {
        let handshake = Arc::new(Handshake::default());
        let writer = {
            let handshake = handshake.clone();
            thread::spawn(move || {
                handshake.advance(5);
                handshake.exit(5, |batch| assert_eq!(batch.take(), [0; 5]));
            })
        };
        let flusher = {
            let handshake = handshake.clone();
            thread::spawn(move || handshake.wait_done(5, Duration::from_secs(3600)))
        };
        let far = Instant::now() + Duration::from_secs(3600);
        let end = handshake.wait_exit_or_abandon(far, |_| panic!("nothing to abandon"));
        assert_eq!(end, WriterEnd::Exited);
        assert!(flusher.join().unwrap(), "the flush saw progress 5");
        writer.join().unwrap();
    });
}

/// `DropOldest`: a producer finds the ring full and evicts the oldest record (under
/// the consumer's lock) while the writer peeks without the lock and pops. Every record
/// is written or evicted, exactly once, written ones in order and whole; a peek never
/// returns another record's bytes as a header (`header_at_tail`'s seqlock, which needs
/// the release fence before writing into evicted space).
fn drop_oldest_against_a_concurrent_pop(single_producer: bool) {
    // 96 bytes: r0 and r1 (40 bytes each), then r2 (56 bytes) fits only once r0 is
    // evicted, and wraps: its merge key lands where r0's state word was, and its
    // payload where r0's merge key was. A header read there without the seqlock is
    // another record's bytes (r2's key, 5, reads as a committed state word).
    let ring = Arc::new(if single_producer {
        Ring::single_producer(96)
    } else {
        Ring::new(96)
    });
    let evicted = Arc::new(Mutex::new(Vec::new()));
    // Each record's level names it: Trace, Debug, Info.
    let records: [(Level, &[u8], u64); 3] = [
        (Level::Trace, b"r0", 1),
        (Level::Debug, b"r1", 3),
        (Level::Info, b"r2 of 18 bytes...", 5),
    ];
    let producer = {
        let (ring, evicted) = (ring.clone(), evicted.clone());
        thread::spawn(move || {
            for (level, payload, key) in records {
                loop {
                    let pushed = if single_producer {
                        ring.try_push_owned(level, payload, 96, 1, false, key)
                    } else {
                        ring.try_push(level, payload, 96, 1, false, key)
                    };
                    if pushed.is_ok() {
                        break;
                    }
                    ring.evict_oldest(footprint(payload.len()), 96, |p| {
                        evicted.lock().unwrap().push(p.level)
                    });
                }
            }
        })
    };
    let mut out = Vec::new();
    for _ in 0..2 {
        if let Some(seen) = ring.peek() {
            assert!(
                records
                    .iter()
                    .any(|&(_, p, key)| (p.len(), key) == (seen.len, seen.key)),
                "a header read as {seen:?}"
            );
        }
        let _ = ring.look_oldest();
        pop(&ring, &mut out);
        thread::yield_now();
    }
    producer.join().unwrap();
    pop(&ring, &mut out);
    let evicted = evicted.lock().unwrap().clone();
    let mut seen: Vec<Level> = out.iter().map(|(level, _)| *level).collect();
    for (level, payload) in &out {
        let (_, expected, _) = records.iter().find(|(l, _, _)| l == level).unwrap();
        assert_eq!(&payload[..], *expected, "whole");
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order: {seen:?}");
    seen.extend(&evicted);
    seen.sort();
    assert_eq!(
        seen,
        [Level::Trace, Level::Debug, Level::Info],
        "each record written or evicted, once"
    );
}

#[test]
fn loom_drop_oldest_eviction_against_a_concurrent_pop_shared_ring() {
    check("drop_oldest_shared_ring", Some(3), || {
        drop_oldest_against_a_concurrent_pop(false)
    });
}

#[test]
fn loom_drop_oldest_eviction_against_a_concurrent_pop_thread_ring() {
    check("drop_oldest_thread_ring", None, || {
        drop_oldest_against_a_concurrent_pop(true)
    });
}

/// `DropOldest` in a thread's own ring while the writer merges: the thread logs P and
/// B into its ring and A into the shared ring (its ring full), then evicts P to make
/// room. B, still in its ring, is older than A. The evictor zeroes P's state word
/// before it moves `tail`; a merge that looks in between must wait, not take the ring
/// for empty and write A before B (seen under qemu: `thread 4: seq 19749 written
/// after seq 19978`).
#[test]
fn loom_drop_oldest_eviction_in_a_thread_ring_against_the_merge() {
    check("drop_oldest_thread_ring_merge", None, || {
        let lanes = Arc::new(Lanes::with_rings(u64::MAX - 102, 240, 80, 1));
        let thread = {
            let lanes = lanes.clone();
            thread::spawn(move || {
                let ring = lanes.claim().expect("the only claim");
                push_owned(&ring.ring, Level::Info, b"P", 1);
                push_owned(&ring.ring, Level::Info, b"B", 3);
                push_shared(&lanes.shared, Level::Info, b"A", 4);
                // Room for one more record, as a full ring's producer asks.
                let mut evicted = Vec::new();
                assert!(ring
                    .ring
                    .evict_oldest(footprint(1), 2 * footprint(1), |p| evicted.push(p.len)));
                evicted.len()
            })
        };
        let mut view = WriterView::default();
        let mut out = Vec::new();
        for _ in 0..2 {
            lanes.merge_all(&mut view, &mut out);
            thread::yield_now();
        }
        let evicted = thread.join().unwrap();
        lanes.merge_all(&mut view, &mut out);
        let written: Vec<u8> = out.iter().copied().filter(|&b| b != b'P').collect();
        assert_eq!(written, b"BA", "B and A in key order: {out:?}");
        match evicted {
            0 => assert_eq!(out, b"PBA", "written in key order"),
            1 => assert_eq!(out, b"BA", "P evicted, the rest in key order"),
            n => panic!("{n} records evicted for one record's room"),
        }
    });
}

/// The merge's second look, against the same eviction: the writer already knows the
/// thread's ring and finds it empty, the thread then logs P and B into it and A into
/// the shared ring, and starts evicting P. The writer's first look chose A; its second
/// look, at the thread's ring, must wait for the eviction rather than take the ring
/// for empty and write A before B.
#[test]
fn loom_drop_oldest_eviction_against_the_merges_second_look() {
    check("drop_oldest_second_look", None, || {
        let lanes = Arc::new(Lanes::with_rings(u64::MAX - 103, 240, 80, 1));
        let ring = lanes.claim().expect("the only claim");
        let mut view = WriterView::default();
        // The writer knows the ring before the thread logs.
        lanes.refresh(&mut view);
        let thread = {
            let lanes = lanes.clone();
            thread::spawn(move || {
                push_owned(&ring.ring, Level::Info, b"P", 1);
                push_owned(&ring.ring, Level::Info, b"B", 2);
                push_shared(&lanes.shared, Level::Info, b"A", 3);
                let mut evicted = 0;
                assert!(ring
                    .ring
                    .evict_oldest(footprint(1), 2 * footprint(1), |_| evicted += 1));
                evicted
            })
        };
        let mut out = Vec::new();
        for _ in 0..2 {
            lanes.merge_all(&mut view, &mut out);
            thread::yield_now();
        }
        let evicted = thread.join().unwrap();
        lanes.merge_all(&mut view, &mut out);
        match evicted {
            0 => assert_eq!(out, b"PBA", "written in key order"),
            1 => assert_eq!(out, b"BA", "P evicted, the rest in key order"),
            n => panic!("{n} records evicted for one record's room"),
        }
    });
}

/// A thread ring's in-place push (the macros' default path): `fill` writes the payload
/// once the producer's claim has room, and the release store of `head` follows the
/// record's. Three records through a ring of two while the writer pops: as the
/// copying path's model, the third fits only if the cached tail is refreshed after the
/// writer's release, and no record is lost, repeated or torn. A ring that never
/// evicted, with no payload at its end, is never told to copy instead.
#[test]
fn loom_thread_ring_in_place_push_and_its_cached_tail() {
    check("thread_ring_in_place", None, || {
        three_through_a_ring_of_two(true)
    });
}

/// The shared ring's in-place push: reserved by the same compare-and-swap as a copied
/// record, its payload written between the reservation and the release of its state
/// word. Against a copying producer and the consumer, on a ring of two that holds one
/// already: each record pushed comes out once, whole, and a stale header in reused
/// space never reads as committed.
#[test]
fn loom_shared_ring_in_place_push_against_a_copying_producer_and_the_consumer() {
    check("shared_ring_in_place", Some(3), || {
        two_producers_into_a_ring_holding_one(true)
    });
}

/// An in-place push never writes plain bytes into space an eviction freed: after an
/// eviction, a thread reading headers without the consumer's lock at a stale `tail`
/// may still be reading there, so payloads go as atomic words (the copying path) and
/// an in-place push must copy instead. The ring is full (two records) and nothing pops:
/// the only room the push can find is what the shutdown cut-off (`discard_committed`,
/// on another thread) frees, so it is `Full` or `CopyInstead`, never written in place.
/// The flag must be read after the acquire of the `tail` that showed the room.
fn in_place_push_against_an_eviction(single_producer: bool) {
    let ring = Arc::new(if single_producer {
        Ring::single_producer(80)
    } else {
        Ring::new(80)
    });
    ring.try_push(Level::Info, b"r0", u64::MAX, 1, false, 0)
        .unwrap();
    ring.try_push(Level::Info, b"r1", u64::MAX, 1, false, 1)
        .unwrap();
    let evictor = {
        let ring = ring.clone();
        thread::spawn(move || {
            let mut evicted = 0;
            ring.discard_committed(|_| evicted += 1);
            evicted
        })
    };
    let pusher = {
        let ring = ring.clone();
        thread::spawn(move || {
            let stamps = Stamps {
                merge_key: 2,
                enqueued: 1,
            };
            let fill = |into: &mut [u8]| into.copy_from_slice(b"p2");
            if single_producer {
                ring.try_push_owned_in_place(Level::Info, 2, 80, |into| {
                    fill(into);
                    stamps
                })
            } else {
                ring.try_push_in_place(Level::Info, 2, 80, &stamps, fill)
            }
        })
    };
    let pushed = pusher.join().unwrap();
    let evicted = evictor.join().unwrap();
    assert_eq!(evicted, 2, "the cut-off discards both records");
    assert!(
        pushed.is_err(),
        "written in place into evicted space: {pushed:?}"
    );
}

#[test]
fn loom_shared_ring_in_place_push_against_an_eviction() {
    check("shared_ring_in_place_eviction", None, || {
        in_place_push_against_an_eviction(false)
    });
}

#[test]
fn loom_thread_ring_in_place_push_against_an_eviction() {
    check("thread_ring_in_place_eviction", None, || {
        in_place_push_against_an_eviction(true)
    });
}
