//! A corrupt spool file must never cause a panic, a hang or unbounded memory use:
//! recovery either delivers what checks out or refuses the file with an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool");
    let mut file = std::fs::File::create(&path).unwrap();
    // Half the inputs get a valid header so the fuzzer reaches the record scanner.
    if data.first().is_some_and(|b| b & 1 == 1) {
        let mut header = vec![0u8; 4096];
        header[..8].copy_from_slice(b"LOGLAGSP");
        header[8..16].copy_from_slice(&1u64.to_le_bytes());
        header[16..24].copy_from_slice(&4096u64.to_le_bytes());
        // Header words 2..=8 (capacity, tail, pending end, sink length, batch length,
        // sink device, sink inode) come from the input when it asks for it (bit 1), so
        // the validation and the pending-batch branches are reached with garbage too.
        let tail = u64::from(*data.get(1).unwrap_or(&0)) * 8;
        header[24..32].copy_from_slice(&tail.to_le_bytes());
        let mut rest = data.get(2..).unwrap_or(&[]);
        if data[0] & 2 == 2 && rest.len() >= 56 {
            header[16..72].copy_from_slice(&rest[..56]);
            rest = &rest[56..];
        }
        file.write_all(&header).unwrap();
        let mut ring = rest.to_vec();
        ring.resize(4096, 0);
        file.write_all(&ring).unwrap();
    } else {
        file.write_all(data).unwrap();
    }
    drop(file);
    let _ = loglag::spool::recover(&path, loglag::sink::WriterSink::new(Vec::new()));
});
