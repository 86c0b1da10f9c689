//! Recovery: delivers what a previous process left in a spool, exactly once into the
//! file it was writing and at least once into any other sink, journaling its own
//! progress so that a recovery killed part-way resumes the same way. Works on a
//! [`SpoolRegion`] and a [`Sink`], not on the file, so its crash points can be tested
//! in memory (`model.rs`).

use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::header::{validate_positions, SpoolRegion};
use super::journal::Landed;
use super::{invalid, SpoolErrorKind};
use crate::queue;
use crate::record::drops::DROP_REASONS;
use crate::record::level::Level;
use crate::sink::{call_sink, write_all_counted, Sink};
use crate::spool::ledger::REPORT_FORMAT;

/// Recovery delivers and journals at most this many bytes at a time.
pub(super) const RECOVERY_CHUNK: usize = 64 << 10;

/// What recovery found in a spool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recovered {
    /// Records written to the sink by recovery.
    pub records: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Regions holding no valid record (torn or partial writes), skipped.
    pub torn: u64,
    /// Records of an interrupted batch that the sink already had, not written again.
    pub already_delivered: u64,
    /// Bytes of a partly written batch cut from the end of the sink file before the
    /// batch was written again.
    pub cut_bytes: u64,
    /// An interrupted batch went to a different sink than the one recovering (or one
    /// that cannot tell its length): it was delivered again, at least once.
    pub at_least_once: bool,
    /// Records the previous process dropped (by its overflow policy, a failing sink…)
    /// and had not yet announced in-band when it ended. Recovery announced them in the
    /// sink, in one report after the recovered records.
    pub unannounced_drops: u64,
}

/// What every start of a spool runs: recovers `region` into `sink`, then zeroes its
/// ring so that no stale word of an earlier lap can look like a committed record after
/// the next crash. Returns the position the ring resumes at.
pub(super) fn resume(
    region: &mut SpoolRegion<'_>,
    sink: &mut dyn Sink,
    path: &Path,
) -> io::Result<(u64, Recovered)> {
    let recovered = recover_into(region, sink, path)?;
    let position = region.header().tail();
    region.zero_ring();
    Ok((position, recovered))
}

/// Checks the header's positions, delivers the records after the persisted tail to
/// `sink`, then advances the tail. Journals its own progress chunk by chunk, with the
/// writer's protocol, so being killed part-way loses and repeats nothing for the same
/// file.
pub(super) fn recover_into(
    region: &SpoolRegion<'_>,
    sink: &mut dyn Sink,
    path: &Path,
) -> io::Result<Recovered> {
    let header = region.header();
    validate_positions(header, region.capacity())
        .map_err(|why| invalid(path, SpoolErrorKind::Corrupt, why))?;
    settle_pending_report(region, sink);
    let tail = header.tail();
    let scan = region.scan(tail);
    let mut recovered = Recovered {
        torn: scan.torn,
        ..Recovered::default()
    };
    let mut records: &[(u64, Level, Vec<u8>)] = &scan.records;
    if let Some(batch) = header.pending_batch() {
        let in_batch = records.iter().take_while(|r| r.0 < batch.end).count();
        let (position, identity) = crate::sink::place(sink);
        match batch.landed(position, identity) {
            Landed::Whole => {
                recovered.already_delivered = in_batch as u64;
                records = &records[in_batch..];
                header.end_batch(batch.end);
            }
            Landed::Part { keep, cut } => {
                crate::sink::truncate_to(sink, keep)?;
                recovered.cut_bytes = cut;
            }
            Landed::Nothing => {}
            Landed::Unknown => {
                recovered.at_least_once = true;
                eprintln!(
                    "loglag: spool {}: a batch of {in_batch} records was being written when the process ended, to a sink other than this one (or one that cannot tell its length); delivering it again (at least once)",
                    path.display()
                );
            }
        }
    }
    let mut delivered_to = tail;
    while !records.is_empty() {
        let mut bytes = 0;
        let take = records
            .iter()
            .take_while(|r| {
                let fits = bytes == 0 || bytes + r.2.len() <= RECOVERY_CHUNK;
                bytes += r.2.len();
                fits
            })
            .count()
            .max(1);
        let (chunk, rest) = records.split_at(take);
        let last = chunk.last().expect("a chunk has a record");
        let end = last.0 + queue::footprint(last.2.len());
        let chunk_bytes: u64 = chunk.iter().map(|r| r.2.len() as u64).sum();
        call_sink(|| sink.before_batch(chunk_bytes as usize))?;
        let (position, identity) = crate::sink::place(sink);
        header.begin_batch(end, position, identity, chunk_bytes);
        for (_, _, bytes) in chunk {
            if let (_, Err((e, _))) = write_all_counted(sink, bytes) {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "cannot deliver recovered records from {}: {e}; run recovery again to resume",
                        path.display()
                    ),
                ));
            }
            recovered.records += 1;
            recovered.bytes += bytes.len() as u64;
        }
        call_sink(|| sink.flush())?;
        header.end_batch(end);
        delivered_to = end;
        records = rest;
    }
    announce_unannounced(region, sink, &mut recovered)?;
    call_sink(|| sink.flush())?;
    let _ = crate::sink::sync(sink);
    header.end_batch(scan.end.max(tail).max(delivered_to));
    Ok(recovered)
}

/// Settles a live report the killed process was writing: in this very file, whole, it
/// announced its counts already. Before recovery writes anything, so that only the
/// report itself can account for the file's length past where it began.
fn settle_pending_report(region: &SpoolRegion<'_>, sink: &mut dyn Sink) {
    let header = region.header();
    let Some(report) = header.pending_report() else {
        return;
    };
    let (position, identity) = crate::sink::place(sink);
    header
        .ledger()
        .end_report(report.landed(position, identity));
}

/// Writes one in-band report of the drops the previous process had not announced, in
/// its report format, then clears them.
fn announce_unannounced(
    region: &SpoolRegion<'_>,
    sink: &mut dyn Sink,
    recovered: &mut Recovered,
) -> io::Result<()> {
    use crate::record::Format;
    let header = region.header();
    let ledger = header.ledger();
    let dropped: [[u64; 5]; DROP_REASONS] =
        std::array::from_fn(|r| std::array::from_fn(|l| ledger.word(r, l).load(Ordering::Acquire)));
    let total: u64 = dropped.iter().flatten().sum();
    if total == 0 {
        return Ok(());
    }
    let format = match header.word(REPORT_FORMAT).load(Ordering::Acquire) {
        0 => Format::Compact,
        n => Format::from_index((n - 1) as u8),
    };
    let line = crate::record::drops::drop_report_line(
        format,
        &dropped,
        "before the previous process ended, announced at recovery",
    );
    call_sink(|| sink.before_batch(line.len()))?;
    if let (_, Err((e, _))) = write_all_counted(sink, &line) {
        return Err(e);
    }
    for r in 0..DROP_REASONS {
        for l in 0..5 {
            ledger.word(r, l).store(0, Ordering::Release);
        }
    }
    recovered.unannounced_drops = total;
    Ok(())
}
