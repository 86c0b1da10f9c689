use super::*;

#[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
mod residency;

thread_local! {
    /// What a test does while this thread holds a ring's consumer lock in
    /// `oldest_enqueued_ns` (a signal handler landing there).
    static WHILE_CONSUMING: std::cell::RefCell<Option<Box<dyn FnOnce()>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` (once) the next time this thread holds a ring's consumer lock for a peek.
pub(crate) fn on_next_consume(f: impl FnOnce() + 'static) {
    WHILE_CONSUMING.with(|w| *w.borrow_mut() = Some(Box::new(f)));
}

pub(super) fn while_consuming() {
    if let Some(f) = WHILE_CONSUMING.with(|w| w.borrow_mut().take()) {
        f();
    }
}

/// `pop_into` for rings that hold no captured records.
fn pop(ring: &Ring, out: &mut Vec<u8>, max: usize, each: impl FnMut(Popped)) -> (usize, u64) {
    ring.pop_into(
        out,
        max,
        true,
        &mut Vec::new(),
        &mut |_, _, _| {},
        PopBound::NONE,
        each,
    )
}

/// A header that no producer of this process wrote (a forked child writing into a
/// shared spool mapping with its own copy of the positions) is skipped and counted,
/// never trusted: its length once made the writer allocate 27 PB and abort.
#[test]
fn a_header_no_producer_wrote_is_skipped_not_trusted() {
    let ring = Ring::new(1024);
    ring.try_push(Level::Info, b"good\n", u64::MAX, 0, false, 0)
        .unwrap();
    ring.try_push(Level::Info, b"overwritten\n", u64::MAX, 0, false, 0)
        .unwrap();
    let second = footprint(5);
    ring.word(second)
        .store((0x6363_6363_6363u64 << 8) | COMMITTED, Ordering::Release);
    let mut out = Vec::new();
    let mut seen = Vec::new();
    let (count, end) = pop(&ring, &mut out, 1 << 20, |p| seen.push(p.len));
    assert_eq!((count, out.as_slice()), (1, &b"good\n"[..]));
    assert_eq!(end, ring.head_position(), "the rest is skipped");
    assert_eq!(ring.torn.load(Ordering::Relaxed), 1);
    ring.try_push(Level::Info, b"after\n", u64::MAX, 0, false, 0)
        .unwrap();
    out.clear();
    pop(&ring, &mut out, 1 << 20, |_| {});
    assert_eq!(out, b"after\n", "the ring goes on");
}

#[test]
fn records_come_out_in_order_and_wrap() {
    let ring = Ring::new(256);
    let mut out = Vec::new();
    for round in 0..50u32 {
        let a = format!("record-{round}-a");
        let b = format!(
            "record-{round}-b-longer-payload-{}",
            "x".repeat(round as usize % 40)
        );
        ring.try_push(Level::Info, a.as_bytes(), u64::MAX, 0, false, 0)
            .unwrap();
        ring.try_push(Level::Warn, b.as_bytes(), u64::MAX, 0, false, 0)
            .unwrap();
        out.clear();
        let mut levels = Vec::new();
        assert_eq!(
            pop(&ring, &mut out, usize::MAX, |p| levels.push(p.level)).0,
            2
        );
        assert_eq!(out, [a.as_bytes(), b.as_bytes()].concat());
        assert_eq!(levels, [Level::Info, Level::Warn]);
        assert_eq!(ring.used_bytes(), 0);
    }
}

/// The age read from another thread is always the enqueue time of a record that was
/// pushed, never bytes of a payload that reused the slot. Payloads of 0x01 bytes
/// read as a committed header with an impossible timestamp.
#[test]
fn oldest_age_read_while_the_slot_is_reused_is_a_real_timestamp() {
    use std::sync::atomic::AtomicBool;
    let ring = std::sync::Arc::new(Ring::new(512));
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let sampler = {
        let (ring, done) = (ring.clone(), done.clone());
        std::thread::spawn(move || {
            let mut seen = 0u64;
            while !done.load(Ordering::Relaxed) {
                if let Some(t) = ring.oldest_enqueued_ns() {
                    assert!((1..=1_000_000).contains(&t), "read a timestamp of {t:#x}");
                    seen += 1;
                }
            }
            seen
        })
    };
    let payload = [0x01u8; 100];
    let mut out = Vec::new();
    let rounds = if cfg!(miri) { 300 } else { 200_000u64 };
    for i in 0..rounds {
        ring.try_push(Level::Info, &payload, u64::MAX, 1 + i % 1_000_000, false, 0)
            .unwrap();
        out.clear();
        pop(&ring, &mut out, usize::MAX, |_| {});
    }
    done.store(true, Ordering::Relaxed);
    sampler.join().expect("no impossible timestamp");
}

#[test]
fn the_oldest_enqueue_time_is_the_oldest_queued_records() {
    let ring = Ring::new(4096);
    assert_eq!(ring.oldest_enqueued_ns(), None, "empty");
    ring.try_push(Level::Info, b"first\n", u64::MAX, 1_000, false, 0)
        .unwrap();
    ring.try_push(Level::Info, b"second\n", u64::MAX, 2_000, false, 0)
        .unwrap();
    assert_eq!(ring.oldest_enqueued_ns(), Some(1_000));
    let mut out = Vec::new();
    // One record out: the next one is now the oldest.
    pop(&ring, &mut out, 1, |_| {});
    assert_eq!(out, b"first\n");
    assert_eq!(ring.oldest_enqueued_ns(), Some(2_000));
    pop(&ring, &mut out, usize::MAX, |_| {});
    assert_eq!(ring.oldest_enqueued_ns(), None, "drained");
}

/// Recovery tells a complete record from a torn one only if any change to what was
/// checksummed changes the checksum: every single-bit flip in the position, the
/// state word and each payload byte, and the payload's length. (An `|` or `&` in
/// place of an `^` keeps the checksum deterministic but blind to some bits: cargo
/// mutants found no test that noticed.)
#[test]
fn every_bit_of_a_record_reaches_its_checksum() {
    let payload: Vec<u8> = (0..21u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
    let (pos, state) = (0x0123_4567_89ab_cdef_u64, 0x0000_0015_0000_0a05_u64);
    let base = checksum(pos, state, &payload);
    for bit in 0..64 {
        assert_ne!(
            checksum(pos ^ (1 << bit), state, &payload),
            base,
            "pos bit {bit}"
        );
        assert_ne!(
            checksum(pos, state ^ (1 << bit), &payload),
            base,
            "state bit {bit}"
        );
    }
    for byte in 0..payload.len() {
        for bit in 0..8 {
            let mut p = payload.clone();
            p[byte] ^= 1 << bit;
            assert_ne!(
                checksum(pos, state, &p),
                base,
                "payload byte {byte} bit {bit}"
            );
        }
    }
    // A trailing zero byte is still a different record.
    let mut longer = payload.clone();
    longer.push(0);
    assert_ne!(checksum(pos, state, &longer), base);
    assert_ne!(checksum(pos, state, &payload[..20]), base);
}

#[test]
fn full_ring_refuses_and_limit_is_respected() {
    let ring = Ring::new(256);
    let rec = [b'x'; 40]; // 72 bytes of ring each
    assert!(ring.try_push(Level::Info, &rec, 256, 0, false, 0).is_ok());
    assert!(
        ring.try_push(Level::Info, &rec, 100, 0, false, 0).is_err(),
        "limit below capacity"
    );
    assert!(ring.try_push(Level::Info, &rec, 256, 0, false, 0).is_ok());
    assert!(ring.try_push(Level::Info, &rec, 256, 0, false, 0).is_ok());
    assert_eq!(
        ring.try_push(Level::Info, &rec, 256, 0, false, 0),
        Err(Full)
    );
}

#[test]
fn evict_oldest_makes_room_and_reports_victims() {
    let ring = Ring::new(160);
    ring.try_push(Level::Debug, &[1; 40], 160, 0, false, 0)
        .unwrap();
    ring.try_push(Level::Info, &[2; 40], 160, 0, false, 0)
        .unwrap();
    let mut victims = Vec::new();
    assert!(ring.evict_oldest(footprint(40), 160, |p| victims.push(p.level)));
    assert_eq!(victims, [Level::Debug]);
    ring.try_push(Level::Error, &[3; 40], 160, 0, false, 0)
        .unwrap();
    let mut out = Vec::new();
    pop(&ring, &mut out, usize::MAX, |_| {});
    assert_eq!(out, [[2u8; 40], [3u8; 40]].concat());
}

/// A producer that evicts (`DropOldest`) moves `tail` under the writer, which
/// peeks at headers without the lock; the space it frees is then reused. Records
/// come out whole and in order, and (under miri) no payload write races with the
/// writer's reads.
fn evict_against_a_concurrent_pop(single_producer: bool) {
    let ring = std::sync::Arc::new(if single_producer {
        Ring::single_producer(256)
    } else {
        Ring::new(256)
    });
    let records: u32 = if cfg!(miri) { 60 } else { 5_000 };
    let producer = {
        let ring = ring.clone();
        std::thread::spawn(move || {
            for seq in 0..records {
                let payload = seq.to_le_bytes().repeat(5);
                let need = footprint(payload.len());
                loop {
                    let pushed = if single_producer {
                        ring.try_push_owned(Level::Info, &payload, 256, 0, false, seq as u64)
                    } else {
                        ring.try_push(Level::Info, &payload, 256, 0, false, seq as u64)
                    };
                    if pushed.is_ok() {
                        break;
                    }
                    ring.evict_oldest(need, 256, |_| {});
                }
            }
        })
    };
    let mut last: Option<u32> = None;
    let mut out = Vec::new();
    loop {
        let finished = producer.is_finished();
        if let Oldest::Published(seen) = ring.look_oldest() {
            assert_eq!(seen.len, 20, "a header read as {seen:?}");
        }
        out.clear();
        ring.pop_into(
            &mut out,
            usize::MAX,
            true,
            &mut Vec::new(),
            &mut |_, _, _| {},
            PopBound::NONE,
            |_| {},
        );
        for record in out.chunks(20) {
            let seq = u32::from_le_bytes(record[..4].try_into().unwrap());
            assert_eq!(record, seq.to_le_bytes().repeat(5), "a torn record");
            assert!(last.is_none_or(|last| seq > last), "{seq} after {last:?}");
            last = Some(seq);
        }
        if finished && ring.used_bytes() == 0 {
            break;
        }
        std::thread::yield_now();
    }
    producer.join().unwrap();
}

#[test]
fn eviction_against_a_concurrent_pop_shared_ring() {
    evict_against_a_concurrent_pop(false);
}

#[test]
fn eviction_against_a_concurrent_pop_single_producer_ring() {
    evict_against_a_concurrent_pop(true);
}

#[test]
fn scan_finds_valid_records_and_skips_torn_ones() {
    let storage = HeapWords::new(64);
    let base = storage.ptr();
    let ring = Ring::with_storage(base, 512, true, 0, Storage::Heap(storage));
    for i in 0..5u8 {
        ring.try_push(Level::Info, &[b'a' + i; 20], u64::MAX, 0, false, 0)
            .unwrap();
    }
    // Tear the second record's payload.
    let second = footprint(20);
    ring.word(second + HEADER).store(0xdead, Ordering::Relaxed);
    // SAFETY: the ring is not used concurrently.
    let s = unsafe { scan(base.as_ptr() as *const u8, 512, 0) };
    let firsts: Vec<u8> = s.records.iter().map(|r| r.2[0]).collect();
    assert_eq!(firsts, [b'a', b'c', b'd', b'e']);
    assert_eq!(s.torn, 1);
    assert_eq!(s.end, 5 * footprint(20));
    drop(ring);
}

/// `has_room` answers what `try_push` would: a record that exactly fits the limit
/// has room, one byte more has none, and the answer follows `tail` as the writer
/// releases space; the ring's capacity caps any limit.
#[cfg(not(loglag_loom))]
#[test]
fn has_room_agrees_with_try_push_to_the_byte() {
    let record = [b'r'; 100];
    let need = footprint(record.len());
    for limit in [need, 3 * need, 3 * need + 7, 4096, u64::MAX] {
        let ring = Ring::new(4096);
        loop {
            let room = ring.has_room(need, limit);
            let pushed = ring
                .try_push(Level::Info, &record, limit, 1, false, 0)
                .is_ok();
            assert_eq!(room, pushed, "limit {limit}, used {}", ring.used_bytes());
            if !pushed {
                break;
            }
        }
        let used = ring.used_bytes();
        assert!(used + need > limit.min(4096) && used <= limit.min(4096));
        // One byte short of room, and exactly room (the capacity caps a limit).
        assert!(!ring.has_room(need, used + need - 1));
        assert_eq!(ring.has_room(need, used + need), used + need <= 4096);
        let mut out = Vec::new();
        ring.pop_into(
            &mut out,
            1,
            true,
            &mut Vec::new(),
            &mut |_, _: &[u8], _: &mut Vec<u8>| {},
            PopBound::NONE,
            |_| {},
        );
        assert!(ring.has_room(need, limit), "room after a release");
    }
}

/// Records written in place pop as written, around the ring's end too, in a
/// thread's own ring (`try_push_owned_in_place`) and in the shared ring
/// (`try_push_in_place`): a payload that would wrap is refused with nothing
/// written (the caller copies it in instead), and so is one into a ring that
/// evicted. A ring is said full only when the writer's tail says so, and a try
/// after the writer made room writes in place though the producer's cached tail
/// is stale.
#[cfg(not(loglag_loom))]
fn records_written_in_place_pop_as_written_and_never_wrap(ring: Ring, shared: bool) {
    // Captured records are "rendered" as their bytes.
    let drain = |ring: &Ring, out: &mut Vec<u8>| {
        ring.pop_into(
            out,
            usize::MAX,
            true,
            &mut Vec::new(),
            &mut |_, captured: &[u8], out: &mut Vec<u8>| out.extend_from_slice(captured),
            PopBound::NONE,
            |_| {},
        );
    };
    let stamps = Stamps {
        merge_key: 0,
        enqueued: 1,
    };
    let in_place = |ring: &Ring, len: usize, fill: &dyn Fn(&mut [u8])| {
        if shared {
            ring.try_push_in_place(Level::Info, len, u64::MAX, &stamps, fill)
        } else {
            ring.try_push_owned_in_place(Level::Info, len, u64::MAX, |dst| {
                fill(dst);
                stamps
            })
        }
    };
    let capacity = ring.capacity();
    let (mut out, mut written) = (Vec::new(), Vec::new());
    let (mut refused_at_the_end, mut refused_full) = (0, 0);
    for i in 0..200u32 {
        let len = 1 + (i as usize * 7) % 90;
        let record = vec![b'a' + (i % 26) as u8; len];
        let fill = |dst: &mut [u8]| {
            assert_eq!(dst.len(), len);
            dst.copy_from_slice(&record);
        };
        match in_place(&ring, len, &fill) {
            Ok(_) => {}
            Err(NotInPlace::CopyInstead) => {
                assert!(
                    ring.offset(ring.head_position() + HEADER) + len as u64 > capacity,
                    "refused only at the ring's end"
                );
                refused_at_the_end += 1;
                // Would wrap: refused even with room, so drain and copy it in.
                drain(&ring, &mut out);
                ring.try_push(Level::Info, &record, u64::MAX, 1, true, 0)
                    .expect("fits an empty ring");
            }
            Err(NotInPlace::Full) => {
                // Full by the writer's tail too: really no room.
                let need = footprint(len);
                assert!(ring.used_bytes() + need > capacity, "refused with room");
                refused_full += 1;
                // Once the writer has made room, the next try reads its tail
                // (the cached one still says full) and writes in place.
                drain(&ring, &mut out);
                in_place(&ring, len, &fill).expect("in place once drained");
            }
        }
        written.extend_from_slice(&record);
    }
    drain(&ring, &mut out);
    assert!(refused_at_the_end > 0, "the ring's end was reached");
    assert!(refused_full > 0, "the ring was full");
    assert_eq!(out, written);
    assert_eq!(ring.used_bytes(), 0, "nothing left reserved");

    // After an eviction, payloads are atomic words: in place is refused, with
    // room and nowhere near the ring's end.
    let fresh = if shared {
        Ring::new(capacity as usize)
    } else {
        Ring::single_producer(capacity as usize)
    };
    fresh.head.evicted.store(true, Ordering::Relaxed);
    assert_eq!(
        in_place(&fresh, 8, &|_| unreachable!()),
        Err(NotInPlace::CopyInstead)
    );
    assert_eq!(fresh.used_bytes(), 0, "nothing reserved");
}

#[cfg(not(loglag_loom))]
#[test]
fn records_written_in_place_into_a_thread_ring_pop_as_written() {
    records_written_in_place_pop_as_written_and_never_wrap(Ring::single_producer(1024), false);
}

#[cfg(not(loglag_loom))]
#[test]
fn records_written_in_place_into_the_shared_ring_pop_as_written() {
    records_written_in_place_pop_as_written_and_never_wrap(Ring::new(1024), true);
}

/// Producers writing in place into the shared ring while others copy into it and
/// the writer pops: every record comes out whole, each producer's in its order,
/// none lost or written twice (the compare-and-swap reserves for both kinds).
#[cfg(not(loglag_loom))]
#[test]
fn producers_in_place_and_copying_share_a_ring() {
    const PER_PRODUCER: u32 = if cfg!(miri) { 200 } else { 20_000 };
    let ring = Ring::new(4096);
    let record = |producer: u32, i: u32| {
        let len = 8 + (i as usize * 13 + producer as usize) % 60;
        let mut bytes = vec![producer as u8; len];
        bytes[..4].copy_from_slice(&i.to_le_bytes());
        bytes
    };
    std::thread::scope(|s| {
        for producer in 0..3u32 {
            let ring = &ring;
            s.spawn(move || {
                let stamps = Stamps {
                    merge_key: 0,
                    enqueued: 1,
                };
                for i in 0..PER_PRODUCER {
                    let bytes = record(producer, i);
                    loop {
                        let pushed = if producer == 2 {
                            ring.try_push(Level::Info, &bytes, u64::MAX, 1, true, 0)
                                .map_err(|_| NotInPlace::Full)
                        } else {
                            ring.try_push_in_place(
                                Level::Info,
                                bytes.len(),
                                u64::MAX,
                                &stamps,
                                |dst| dst.copy_from_slice(&bytes),
                            )
                        };
                        match pushed {
                            Ok(_) => break,
                            Err(NotInPlace::CopyInstead) => {
                                if ring
                                    .try_push(Level::Info, &bytes, u64::MAX, 1, true, 0)
                                    .is_ok()
                                {
                                    break;
                                }
                            }
                            Err(NotInPlace::Full) => {}
                        }
                        std::thread::yield_now();
                    }
                }
            });
        }
        let mut next = [0u32; 3];
        let mut out = Vec::new();
        let mut looks_without_a_record = 0u64;
        while next.iter().any(|&n| n < PER_PRODUCER) {
            // A producer that died, or a reservation never published, would
            // otherwise keep this loop looking for good.
            assert!(
                looks_without_a_record < 10_000_000,
                "no record in ten million looks: {next:?} of {PER_PRODUCER} each"
            );
            out.clear();
            let mut lens = Vec::new();
            ring.pop_into(
                &mut out,
                usize::MAX,
                true,
                &mut Vec::new(),
                &mut |_, captured: &[u8], out: &mut Vec<u8>| {
                    lens.push(captured.len());
                    out.extend_from_slice(captured)
                },
                PopBound::NONE,
                |_| {},
            );
            if lens.is_empty() {
                looks_without_a_record += 1;
            } else {
                looks_without_a_record = 0;
            }
            let mut at = 0;
            for len in lens {
                let bytes = &out[at..at + len];
                at += len;
                let producer = bytes[len - 1] as u32;
                let i = u32::from_le_bytes(bytes[..4].try_into().unwrap());
                assert_eq!(i, next[producer as usize], "producer {producer}'s order");
                assert_eq!(bytes, record(producer, i), "record {i} of {producer}");
                next[producer as usize] += 1;
            }
            std::thread::yield_now();
        }
    });
    assert_eq!(ring.used_bytes(), 0);
}
