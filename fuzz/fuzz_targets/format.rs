//! Any bytes as field names and values, in every format: never a panic, always exactly
//! one line, no raw control characters.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loglag::__lab::{LineBuilder, Value};
use loglag::{Format, Level};

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(0, |&b| b as usize % (data.len().max(1)));
    let (name, value) = data.split_at(split);
    let name = String::from_utf8_lossy(name);
    let text = String::from_utf8_lossy(value);
    for format in [Format::Json, Format::Compact, Format::Logfmt] {
        let mut out = Vec::new();
        let mut line = LineBuilder::begin(&mut out, format, std::time::SystemTime::UNIX_EPOCH, Level::Warn, &name);
        line.field("message", Value::Str(&text));
        line.field(&name, Value::Bytes(value));
        line.field("dbg", Value::Debug(&text));
        line.finish();
        let s = std::str::from_utf8(&out).expect("output is UTF-8");
        assert_eq!(s.matches('\n').count(), 1, "{format:?}: one record, one line");
        assert!(s.ends_with('\n'));
        assert!(!s[..s.len() - 1].chars().any(|c| c.is_control()), "{format:?}: raw control character in {s:?}");
        if format == Format::Json {
            let v: serde_json::Value = serde_json::from_str(s).expect("the JSON format is valid JSON");
            assert_eq!(v["fields"]["message"].as_str(), Some(&*text), "the message round-trips");
        }
    }
});
