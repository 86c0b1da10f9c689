//! Residency: how much of a ring's memory the kernel holds, made resident ahead of the
//! producers and given back when idle, and the page arithmetic under both.

use super::*;

/// Resident pages of a ring's first `bytes`, as the kernel reports them.
#[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
fn resident_pages(ring: &Ring, bytes: u64) -> Vec<bool> {
    let page = page_size();
    let pages = bytes.div_ceil(page) as usize;
    let mut map = vec![0u8; pages];
    // SAFETY: `[base, base + bytes)` lies in the ring's mapping, which is page
    // aligned; `map` has a byte per page.
    let done = unsafe { libc::mincore(ring.byte_ptr().cast(), bytes as usize, map.as_mut_ptr()) };
    assert_eq!(done, 0, "mincore: {}", std::io::Error::last_os_error());
    map.iter().map(|b| b & 1 == 1).collect()
}

/// How many of the ring's first `bytes` bytes' pages are resident.
#[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
fn resident_count(ring: &Ring, bytes: u64) -> u64 {
    resident_pages(ring, bytes).iter().filter(|&&r| r).count() as u64
}

/// Under qemu-user (`scripts/test-aarch64` says so), whose `madvise` answers
/// success and does nothing for residency advice: there only bytes are checked.
#[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
fn under_qemu_user() -> bool {
    std::env::var("LOGLAG_EMULATOR").is_ok_and(|e| e == "qemu-user")
}

/// An 8 MiB ring holds 256 KiB resident when made (an idle pipeline held its whole
/// budget before), and the writer's `keep_resident_ahead` makes the pages ahead of
/// the producers resident without changing a byte, and none far beyond them.
#[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
#[test]
fn ring_memory_becomes_resident_ahead_of_the_producers() {
    let capacity = 8u64 << 20;
    let page = page_size();
    let ring = Ring::new(capacity as usize);
    let resident = resident_pages(&ring, capacity);
    assert_eq!(
        resident_count(&ring, capacity),
        RESIDENT_AT_START as u64 / page,
        "resident when made"
    );
    assert!(resident[..(RESIDENT_AT_START as u64 / page) as usize]
        .iter()
        .all(|&r| r));

    // Nothing to do while the producers are further than RESIDENT_AHEAD from the
    // end of what is resident.
    ring.keep_resident_ahead();
    assert_eq!(
        resident_count(&ring, capacity),
        RESIDENT_AT_START as u64 / page,
        "not yet needed"
    );

    // Producers 200 KiB in: the writer makes [head, head + 2 × ahead) resident.
    let record = [b'x'; 1000];
    let mut pushed = 0u64;
    while ring.head_position() < 200 << 10 {
        ring.try_push(Level::Info, &record, u64::MAX, 1, false, pushed)
            .unwrap();
        pushed += 1;
    }
    let head = ring.head_position();
    ring.keep_resident_ahead();
    let resident = resident_pages(&ring, capacity);
    let through = (head + 2 * RESIDENT_AHEAD).div_ceil(page);
    if under_qemu_user() {
        eprintln!("SKIPPED under qemu-user: residency ahead of head (madvise is a no-op there)");
    } else {
        assert!(
            resident[..through as usize].iter().all(|&r| r),
            "ahead of head"
        );
    }
    assert!(
        resident[through as usize..].iter().all(|&r| !r),
        "not beyond"
    );

    // The advice changed no byte: every record pops as it was pushed.
    let mut out = Vec::new();
    let mut popped = 0;
    pop(&ring, &mut out, usize::MAX, |p| {
        assert_eq!(p.len, record.len());
        popped += 1;
    });
    assert_eq!(popped, pushed);
    assert!(out.chunks(record.len()).all(|c| c == record));
}

/// Producers that ran past what the writer made resident (a burst between two of
/// its looks) double how far ahead it looks, up to half a lap; producers it kept
/// ahead of do not.
#[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
#[test]
fn a_burst_that_outruns_the_writer_doubles_its_look_ahead() {
    let capacity = 8u64 << 20;
    let page = page_size();
    let ring = Ring::new(capacity as usize);
    let record = [b'y'; 1000];
    let push_to = |ring: &Ring, to: u64| {
        while ring.head_position() < to {
            ring.try_push(Level::Info, &record, u64::MAX, 1, false, 0)
                .unwrap();
        }
    };
    let resident_hi = |ring: &Ring| ring.resident_hi.load(Ordering::Relaxed);
    let ahead = |ring: &Ring| ring.resident_ahead.load(Ordering::Relaxed);

    // Kept ahead of: the distance stays.
    push_to(&ring, 200 << 10);
    ring.keep_resident_ahead();
    assert_eq!(ahead(&ring), RESIDENT_AHEAD);
    let head = ring.head_position();
    assert_eq!(
        resident_hi(&ring),
        (head + 2 * RESIDENT_AHEAD).next_multiple_of(page)
    );

    // Past what is resident before the writer looked: twice as far, each time.
    let mut expected = RESIDENT_AHEAD;
    for _ in 0..6 {
        push_to(&ring, resident_hi(&ring) + 1);
        ring.keep_resident_ahead();
        expected = (expected * 2).min(capacity / 2).min(MOST_RESIDENT_AHEAD);
        assert_eq!(ahead(&ring), expected, "doubled, up to a cap");
        if resident_hi(&ring) - ring.resident_lo.load(Ordering::Relaxed) >= capacity {
            break; // a lap is resident: nothing is tracked any more
        }
        let head = ring.head_position();
        assert_eq!(
            resident_hi(&ring),
            (head + 2 * expected).next_multiple_of(page),
            "resident through twice the distance past head"
        );
        if !under_qemu_user() {
            let through = (head + 2 * expected).min(capacity).div_ceil(page) as usize;
            assert!(resident_pages(&ring, capacity)[..through]
                .iter()
                .all(|&r| r));
        }
        // The writer pops as it goes, so the ring never fills.
        let mut out = Vec::new();
        pop(&ring, &mut out, usize::MAX, |_| {});
    }
    assert!(expected > RESIDENT_AHEAD);
}

/// After a burst has made a whole 8 MiB shared ring resident, the writer gives its
/// memory back a chunk at a time, down to `RESIDENT_AHEAD` past `head`; never
/// while a record is queued or a producer holds a reservation, nor from a `head`
/// that has moved. Every record logged after (another lap and a half, over the
/// pages given back) pops byte for byte, and the writer makes the pages ahead of
/// the producers resident again.
#[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
#[test]
fn an_idle_ring_gives_its_memory_back_and_logs_on_unchanged() {
    let capacity = 8u64 << 20;
    let page = page_size();
    let ring = Ring::new(capacity as usize);
    // A lap and a half, the writer popping and keeping memory resident ahead.
    let lap = |ring: &Ring, laps: f64, seed: u8| {
        let mut sent = Vec::new();
        let mut out = Vec::new();
        let until = ring.head_position() + (capacity as f64 * laps) as u64;
        let mut n = 0u64;
        while ring.head_position() < until {
            let record: Vec<u8> = (0..1 + (n * 37) % 1500)
                .map(|i| seed.wrapping_add((n + i) as u8))
                .collect();
            ring.try_push(Level::Info, &record, u64::MAX, 1, false, n)
                .expect("the writer keeps up");
            sent.extend_from_slice(&record);
            n += 1;
            if n % 64 == 0 {
                pop(ring, &mut out, usize::MAX, |_| {});
                ring.keep_resident_ahead();
            }
        }
        pop(ring, &mut out, usize::MAX, |_| {});
        assert_eq!(out, sent, "every record as it was pushed");
    };
    lap(&ring, 1.5, 0);
    let emulated = under_qemu_user();
    if !emulated {
        assert_eq!(
            resident_count(&ring, capacity),
            capacity / page,
            "a lap made it all resident"
        );
    }

    // Not while a record is queued, nor a producer holds a reservation, nor from a
    // `head` that has moved on.
    let chunk = capacity / 8;
    ring.try_push(Level::Info, b"queued", u64::MAX, 1, false, 0)
        .unwrap();
    assert_eq!(ring.give_back(ring.head_position(), chunk), None, "queued");
    pop(&ring, &mut Vec::new(), usize::MAX, |_| {});
    let reserved = ring.reserve_unpublished(8);
    assert_eq!(
        ring.give_back(ring.head_position(), chunk),
        None,
        "reserved"
    );
    ring.publish_reserved(reserved, Level::Info, b"reserved", 1);
    pop(&ring, &mut Vec::new(), usize::MAX, |_| {});
    assert_eq!(
        ring.give_back(ring.head_position() - 8, chunk),
        None,
        "moved on"
    );

    // Idle: chunks go back until all but RESIDENT_AHEAD has.
    let head = ring.head_position();
    let mut at = head;
    while at - head + chunk <= capacity - RESIDENT_AHEAD {
        at = ring.give_back(at, chunk).expect("given back");
    }
    at = ring
        .give_back(at, capacity - RESIDENT_AHEAD - (at - head))
        .expect("the rest");
    assert_eq!(ring.head_position(), at);
    assert_eq!(ring.used_bytes(), 0, "nothing left reserved");
    assert!(
        at - head >= capacity - RESIDENT_AHEAD - page,
        "{}",
        at - head
    );
    // The writer's next look ahead finds the pages past `head` resident already:
    // it makes none of those just given back resident again.
    ring.keep_resident_ahead();
    if !emulated {
        let left = resident_count(&ring, capacity) * page;
        assert!(
            left <= RESIDENT_AHEAD + 2 * page,
            "{left} bytes still resident"
        );
    }

    // Logging on: another lap and a half over the pages given back.
    lap(&ring, 1.5, 100);
    if !emulated {
        let head = ring.head_position();
        let resident = resident_pages(&ring, capacity);
        for pos in (head..head + RESIDENT_AHEAD).step_by(page as usize) {
            assert!(
                resident[(ring.offset(pos) / page) as usize],
                "ahead of head"
            );
        }
    }
}

/// Producers logging in bursts while the writer pops, keeps memory resident ahead
/// and gives it back at every idle moment: every record arrives once, whole, and
/// in its producer's order, whoever wins the race for `head`.
#[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
#[test]
fn giving_memory_back_never_touches_a_record() {
    use std::sync::atomic::AtomicUsize;
    let ring = Ring::new(1 << 20);
    let done = AtomicUsize::new(0);
    const PRODUCERS: usize = 2;
    const RECORDS: u64 = 40_000;
    let given_back = std::thread::scope(|scope| {
        for producer in 0..PRODUCERS as u64 {
            let ring = &ring;
            let done = &done;
            scope.spawn(move || {
                for n in 0..RECORDS {
                    let len = 16 + (n * 13 % 600) as usize;
                    let mut record = vec![(n % 251) as u8; len];
                    record[..8].copy_from_slice(&(producer << 56 | n).to_le_bytes());
                    while ring
                        .try_push(Level::Info, &record, u64::MAX, 1, false, n)
                        .is_err()
                    {
                        std::thread::yield_now();
                    }
                    // Now and then, a pause for the ring to drain.
                    if n % 500 == 499 {
                        while ring.used_bytes() > 0 {
                            std::thread::yield_now();
                        }
                    }
                }
                done.fetch_add(1, Ordering::Release);
            });
        }
        let mut next = [0u64; PRODUCERS];
        let mut given_back = 0;
        let mut out = Vec::new();
        let mut lens = Vec::new();
        loop {
            let finished = done.load(Ordering::Acquire) == PRODUCERS;
            out.clear();
            lens.clear();
            pop(&ring, &mut out, usize::MAX, |p| lens.push(p.len));
            let mut at = 0;
            for &len in &lens {
                let record = &out[at..at + len];
                at += len;
                let id = u64::from_le_bytes(record[..8].try_into().unwrap());
                let (producer, n) = ((id >> 56) as usize, id & ((1 << 56) - 1));
                assert_eq!(n, next[producer], "producer {producer}: order or loss");
                assert_eq!(len, 16 + (n * 13 % 600) as usize);
                assert!(record[8..].iter().all(|&b| b == (n % 251) as u8), "bytes");
                next[producer] += 1;
            }
            ring.keep_resident_ahead();
            given_back += ring.give_back(ring.head_position(), 256 << 10).is_some() as u32;
            if finished && ring.used_bytes() == 0 {
                break;
            }
            if lens.is_empty() {
                std::thread::yield_now();
            }
        }
        assert_eq!(next, [RECORDS; PRODUCERS], "every record");
        given_back
    });
    // How many idle moments came in the middle is up to the scheduler; the last
    // look, with every record popped, always finds one.
    eprintln!("chunks given back while logging: {given_back}");
    assert!(given_back > 0, "memory was given back");
    assert_eq!(ring.used_bytes(), 0);
}

/// `page_ranges` splits a run of positions at the ring's end and rounds each part
/// to pages: outward (every page touched, never past the mapping) or inward (only
/// whole pages), also for a capacity that is no multiple of the page.
#[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
#[test]
fn page_ranges_split_at_the_end_and_round_to_pages() {
    let page = page_size() as usize;
    let ring = Ring::new(16 * page);
    let cap = 16 * page as u64;
    let p = page as u64;
    // Inside, unaligned: outward covers pages 1..=3, inward only page 2.
    assert_eq!(
        ring.page_ranges(p + 5, 3 * p + 5, Rounding::Outward),
        vec![(page, 4 * page)]
    );
    assert_eq!(
        ring.page_ranges(p + 5, 3 * p + 5, Rounding::Inward),
        vec![(2 * page, 3 * page)]
    );
    // Across the end, a lap later: two parts.
    let from = cap + 14 * p + 7;
    assert_eq!(
        ring.page_ranges(from, from + 4 * p, Rounding::Outward),
        vec![(14 * page, 16 * page), (0, 3 * page)]
    );
    assert_eq!(
        ring.page_ranges(from, from + 4 * p, Rounding::Inward),
        vec![(15 * page, 16 * page), (0, 2 * page)]
    );
    // More than a lap is a lap.
    assert_eq!(
        ring.page_ranges(0, 3 * cap, Rounding::Inward),
        vec![(0, 16 * page)]
    );
    // A capacity of 10.5 pages: outward ends at the mapping's last page.
    let odd = Ring::new(10 * page + page / 2);
    let odd_cap = odd.capacity();
    assert_eq!(
        odd.page_ranges(9 * p, odd_cap, Rounding::Outward),
        vec![(9 * page, 11 * page)]
    );
    assert_eq!(
        odd.page_ranges(9 * p, odd_cap, Rounding::Inward),
        vec![(9 * page, 10 * page)]
    );
}
