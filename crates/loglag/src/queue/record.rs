//! A record's layout in the ring: its footprint, its checksum, the relaxed word
//! stores its payload is written with, and `Scan`, which reads the records a previous
//! process left in a spool's ring (the layout itself is in `mod.rs`'s docs).

use super::*;

/// Bytes a record of `len` payload bytes occupies in the ring.
pub(crate) fn footprint(len: usize) -> u64 {
    HEADER + ((len as u64 + 7) & !7)
}

/// A fast, non-cryptographic checksum (word-at-a-time multiply-xor) of a record's
/// position, state word and payload: enough to tell a complete record from a torn one.
pub(crate) fn checksum(pos: u64, state: u64, payload: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (pos ^ K).wrapping_mul(K) ^ state;
    let mut mix = |w: u64| h = (h.rotate_left(23) ^ w).wrapping_mul(K);
    let mut chunks = payload.chunks_exact(8);
    for c in &mut chunks {
        mix(u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix(u64::from_le_bytes(last) ^ payload.len() as u64);
    h
}

/// Stores `bytes` into the first words of `slots` (which has room for them) with
/// relaxed atomic stores, the last word padded with zeroes.
pub(super) fn store_words(slots: &[AtomicU64], bytes: &[u8]) {
    let mut chunks = bytes.chunks_exact(8);
    for (slot, chunk) in slots.iter().zip(&mut chunks) {
        slot.store(
            u64::from_ne_bytes(chunk.try_into().expect("8 bytes")),
            Ordering::Relaxed,
        );
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        slots[bytes.len() / 8].store(u64::from_ne_bytes(last), Ordering::Relaxed);
    }
}

/// Scans ring memory left by a previous process: valid records from `from` on, in
/// order, skipping torn ones. Used by spool recovery, on memory nobody else touches.
pub(crate) struct Scan {
    /// Each valid record: (position, level, payload).
    pub(crate) records: Vec<(u64, Level, Vec<u8>)>,
    /// Regions that held no valid record (torn or partial writes), skipped.
    pub(crate) torn: u64,
    /// The position after the last valid record.
    pub(crate) end: u64,
}

/// # Safety
/// `base` points to `capacity` readable, 8-aligned bytes that nobody writes during the
/// scan.
pub(crate) unsafe fn scan(base: *const u8, capacity: u64, from: u64) -> Scan {
    let word = |pos: u64| {
        let index = ((pos % capacity) / 8) as usize;
        // SAFETY: in bounds per the caller's contract.
        unsafe { std::ptr::read_volatile((base as *const u64).add(index)) }
    };
    let payload = |pos: u64, len: usize| {
        let start = (pos % capacity) as usize;
        let first = len.min(capacity as usize - start);
        // SAFETY: in bounds per the caller's contract.
        unsafe {
            let mut v = std::slice::from_raw_parts(base.add(start), first).to_vec();
            v.extend_from_slice(std::slice::from_raw_parts(base, len - first));
            v
        }
    };
    // Bound the work on a corrupt file: checksumming many huge fake records could
    // otherwise take quadratic time.
    let budget = std::cell::Cell::new(4 * capacity + 4096);
    // A record is valid where it says it is, fits in the ring, and checks out.
    let valid_at = |pos: u64| -> Option<(u64, Level, Vec<u8>)> {
        let state = word(pos);
        if state & COMMITTED == 0 || word(pos + 16) != pos {
            return None;
        }
        let len = (state >> 8) as usize;
        if (len as u64) > capacity - HEADER || (len as u64) > budget.get() {
            return None;
        }
        budget.set(budget.get() - len as u64);
        let bytes = payload(pos + HEADER, len);
        (word(pos + 24) == checksum(pos, state, &bytes)).then(|| {
            (
                footprint(len),
                Level::from_index(((state >> 1) & 7) as u8),
                bytes,
            )
        })
    };
    let mut records = Vec::new();
    let mut torn = 0;
    let mut pos = from;
    let mut end = from;
    let limit = from + capacity;
    while pos < limit {
        match valid_at(pos) {
            Some((size, level, bytes)) => {
                records.push((pos, level, bytes));
                pos += size;
                end = pos;
            }
            None => {
                // Resynchronise: the next valid record names its own position, so stale
                // bytes from an older lap (smaller positions) never match.
                match (pos + 8..limit).step_by(8).find(|&q| valid_at(q).is_some()) {
                    Some(q) => {
                        torn += 1;
                        pos = q;
                    }
                    None => break,
                }
            }
        }
    }
    Scan { records, torn, end }
}
