//! Escaping that keeps one record on one line and stops user input from forging
//! records or terminal escapes. Invalid UTF-8 becomes U+FFFD; nothing here panics.

use std::fmt;

/// Bytes that may start something to escape: ASCII controls, DEL, `"`, `\\`, `]` (for
/// syslog structured data; the other styles keep it), and the
/// lead bytes of C1 controls (0xC2), of U+2028/U+2029 and the bidi controls U+200E,
/// U+200F, U+202A–U+202E, U+2066–U+2069 (0xE2), and of U+061C (0xD8). Everything else is
/// copied in bulk, which keeps long clean strings at memcpy speed.
const fn suspicious_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[0x7f] = true;
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b']' as usize] = true;
    t[0xC2] = true;
    t[0xD8] = true;
    t[0xE2] = true;
    t
}
static SUSPICIOUS: [bool; 256] = suspicious_table();

/// Whether any of the eight bytes in `w` may be in [`SUSPICIOUS`]: a control, DEL,
/// `"`, `\\`, `]`, or any byte of a multi-byte character (a superset: the table
/// decides byte by byte).
#[inline]
fn may_be_suspicious(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is zero exactly where the classic test sets its high bit (it may
    // also set bits above a zero byte, which only sends the word to the table).
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    (w & HIGHS)
        | below_space
        | has_zero(w ^ (ONES * u64::from(b'"')))
        | has_zero(w ^ (ONES * u64::from(b'\\')))
        | has_zero(w ^ (ONES * u64::from(b']')))
        | has_zero(w ^ (ONES * 0x7f))
        != 0
}

/// Copies clean runs of `s` in bulk; `replacement` appends the escape for a suspicious
/// character and returns true, or returns false to keep it as it is.
fn escape_with(out: &mut Vec<u8>, s: &str, replacement: impl Fn(char, &mut Vec<u8>) -> bool) {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight clean bytes at a time: the byte-by-byte table loop was half of
        // `json_str` in `perf annotate` on the throughput bench.
        while let Some(word) = bytes.get(i..i + 8) {
            if may_be_suspicious(u64::from_le_bytes(word.try_into().unwrap_or([0; 8]))) {
                break;
            }
            i += 8;
        }
        if i >= bytes.len() {
            break;
        }
        if !SUSPICIOUS[bytes[i] as usize] {
            i += 1;
            continue;
        }
        // `i` is a char boundary: suspicious bytes are ASCII or UTF-8 lead bytes.
        let c = s[i..].chars().next().unwrap_or('\u{FFFD}');
        out.extend_from_slice(&bytes[start..i]);
        start = i;
        if replacement(c, out) {
            start = i + c.len_utf8();
        }
        i += c.len_utf8();
    }
    out.extend_from_slice(&bytes[start..]);
}

/// Appends `s` as the inside of a JSON string: quotes, backslashes and every control
/// character (C0, DEL, C1, so ESC too) are escaped.
#[inline]
pub fn json_str(out: &mut Vec<u8>, s: &str) {
    // Most strings a record carries are short and clean (keys, levels, targets, user
    // names): one or two word tests and a copy, inlined, instead of a call into the
    // escaping loop, whose entry and exit were a third of its samples.
    if short_and_clean(s.as_bytes()) {
        out.extend_from_slice(s.as_bytes());
    } else {
        json_str_escaping(out, s);
    }
}

/// Whether `b` is at most 16 bytes with nothing the escapers would stop at.
#[inline]
fn short_and_clean(b: &[u8]) -> bool {
    let word = |at: usize| {
        let mut w = [b'a'; 8];
        let end = (at + 8).min(b.len());
        w[..end - at].copy_from_slice(&b[at..end]);
        u64::from_le_bytes(w)
    };
    match b.len() {
        0 => true,
        1..=8 => !may_be_suspicious(word(0)),
        // Two overlapping words cover 9 to 16 bytes.
        9..=16 => !may_be_suspicious(word(0)) && !may_be_suspicious(word(b.len() - 8)),
        _ => false,
    }
}

fn json_str_escaping(out: &mut Vec<u8>, s: &str) {
    escape_with(out, s, |c, tmp| {
        match c {
            '"' => tmp.extend_from_slice(b"\\\""),
            '\\' => tmp.extend_from_slice(b"\\\\"),
            '\n' => tmp.extend_from_slice(b"\\n"),
            '\r' => tmp.extend_from_slice(b"\\r"),
            '\t' => tmp.extend_from_slice(b"\\t"),
            c if is_control(c) => push_fmt(tmp, format_args!("\\u{:04x}", c as u32)),
            _ => return false,
        }
        true
    })
}

/// Appends `s` for plain-text formats: backslash, newline, carriage return, tab and
/// control characters become visible escapes (`\n`, `\x1b`, ...). With `quote`, double
/// quotes are escaped too (logfmt quoted values).
pub fn text_str(out: &mut Vec<u8>, s: &str, quote: bool) {
    escape_with(out, s, |c, tmp| {
        match c {
            '\\' => tmp.extend_from_slice(b"\\\\"),
            '\n' => tmp.extend_from_slice(b"\\n"),
            '\r' => tmp.extend_from_slice(b"\\r"),
            '\t' => tmp.extend_from_slice(b"\\t"),
            '"' if quote => tmp.extend_from_slice(b"\\\""),
            c if is_control(c) && (c as u32) < 0x100 => {
                push_fmt(tmp, format_args!("\\x{:02x}", c as u32))
            }
            c if is_control(c) => push_fmt(tmp, format_args!("\\u{{{:x}}}", c as u32)),
            _ => return false,
        }
        true
    })
}

/// Calls `each` on the valid UTF-8 pieces of `bytes`, with U+FFFD for each invalid run.
pub fn lossy(bytes: &[u8], mut each: impl FnMut(&str)) {
    for chunk in bytes.utf8_chunks() {
        each(chunk.valid());
        if !chunk.invalid().is_empty() {
            each("\u{FFFD}");
        }
    }
}

/// Characters that are escaped wherever they appear: controls (C0, DEL, C1), the line
/// and paragraph separators, and the bidirectional formatting characters, which can make
/// a log line read differently from what it holds ("Trojan Source").
pub(crate) fn is_control(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}' || is_bidi(c)
}

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn push_fmt(out: &mut Vec<u8>, args: fmt::Arguments<'_>) {
    let _ = std::io::Write::write_fmt(out, args);
}

/// A `fmt::Write` that escapes everything written through it, so `Debug` and
/// `Display` values can be formatted straight into the record without a temporary.
pub(crate) struct Escaper<'a> {
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) style: Style,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Style {
    Json,
    Text,
    Quoted,
    /// An RFC 5424 structured-data parameter value.
    SdValue,
}

/// Appends `s` as an RFC 5424 PARAM-VALUE: `"`, `\` and `]` escaped with a backslash
/// as the RFC requires, and control characters as [`text_str`] does, so a record
/// stays one message on one line.
pub fn sd_value(out: &mut Vec<u8>, s: &str) {
    escape_with(out, s, |c, tmp| {
        match c {
            ']' => tmp.extend_from_slice(b"\\]"),
            '"' => tmp.extend_from_slice(b"\\\""),
            '\\' => tmp.extend_from_slice(b"\\\\"),
            '\n' => tmp.extend_from_slice(b"\\n"),
            '\r' => tmp.extend_from_slice(b"\\r"),
            '\t' => tmp.extend_from_slice(b"\\t"),
            c if is_control(c) && (c as u32) < 0x100 => {
                push_fmt(tmp, format_args!("\\x{:02x}", c as u32))
            }
            c if is_control(c) => push_fmt(tmp, format_args!("\\u{{{:x}}}", c as u32)),
            _ => return false,
        }
        true
    })
}

#[cfg(test)]
mod sd_tests {
    /// RFC 5424 §6.3.3: `"`, `\\` and `]` are escaped in a PARAM-VALUE (a raw `]`
    /// would end the structured data early); the other styles leave `]` alone.
    #[test]
    fn sd_values_escape_the_closing_bracket_and_others_keep_it() {
        let mut out = Vec::new();
        super::sd_value(&mut out, "a]b\"c\\d\ne");
        assert_eq!(out, br#"a\]b\"c\\d\ne"#);
        let mut json = Vec::new();
        super::json_str(&mut json, "x]y");
        assert_eq!(json, b"x]y");
        let mut text = Vec::new();
        super::text_str(&mut text, "x]y", true);
        assert_eq!(text, b"x]y");
    }
}

impl fmt::Write for Escaper<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        match self.style {
            Style::Json => json_str(self.out, s),
            Style::Text => text_str(self.out, s, false),
            Style::Quoted => text_str(self.out, s, true),
            Style::SdValue => sd_value(self.out, s),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json(s: &str) -> String {
        let mut v = Vec::new();
        json_str(&mut v, s);
        String::from_utf8(v).unwrap()
    }

    fn text(s: &str) -> String {
        let mut v = Vec::new();
        text_str(&mut v, s, false);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn injection_is_neutralised() {
        assert_eq!(
            json("a\"b\\c\nd\re\u{1b}[31m\0"),
            "a\\\"b\\\\c\\nd\\re\\u001b[31m\\u0000"
        );
        assert_eq!(
            text("ok\nFAKE ERROR forged\r\u{1b}[2J\u{7f}"),
            "ok\\nFAKE ERROR forged\\r\\x1b[2J\\x7f"
        );
        assert_eq!(text("naïve ✓"), "naïve ✓");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let mut s = String::new();
        lossy(b"ok\xff\xfeend", |p| s.push_str(p));
        assert_eq!(s, "ok\u{FFFD}\u{FFFD}end");
    }

    /// Strings rich in what escaping is for: every kind of control, quotes, backslashes,
    /// separators, bidi controls, and ordinary text, in any mix.
    fn hostile_string() -> impl Strategy<Value = String> {
        let special = prop::sample::select(vec![
            '\n',
            '\r',
            '\t',
            '\0',
            '\u{1b}',
            '\u{7f}',
            '\u{80}',
            '\u{85}',
            '\u{9b}',
            '\u{9f}',
            '"',
            '\\',
            '\u{2028}',
            '\u{2029}',
            '\u{202e}',
            '\u{2066}',
            '\u{200f}',
            '\u{61c}',
            'é',
            '✓',
            '\u{1F600}',
        ]);
        let any_control = prop::char::range('\0', '\u{a0}');
        prop::collection::vec(
            prop_oneof![special, any_control, any::<char>(), Just('a')],
            0..64,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    fn visible(c: char) -> bool {
        !c.is_control() && !matches!(c, '\u{2028}' | '\u{2029}') && !is_bidi(c)
    }

    /// The word test never passes a byte the table would stop at, wherever it sits.
    #[test]
    fn the_word_test_misses_no_suspicious_byte() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut word = [b'a'; 8];
                word[at] = b;
                if SUSPICIOUS[b as usize] {
                    assert!(
                        may_be_suspicious(u64::from_le_bytes(word)),
                        "{b:#x} at {at}"
                    );
                }
            }
        }
        assert!(!may_be_suspicious(u64::from_le_bytes(*b"request ")));
    }

    proptest! {
        // Under miri a few cases (each is slow there; the real runs cover the space).
        #![proptest_config(ProptestConfig::with_cases(
            if cfg!(miri) { 16 } else { ProptestConfig::default().cases }
        ))]
        #[test]
        fn words_with_a_suspicious_byte_are_never_passed(word in any::<[u8; 8]>()) {
            if word.iter().any(|&b| SUSPICIOUS[b as usize]) {
                prop_assert!(may_be_suspicious(u64::from_le_bytes(word)));
            }
        }

        /// The short path and the escaping loop write the same bytes, at every length
        /// around the word sizes.
        #[test]
        fn short_strings_escape_as_the_loop_does(s in "[a-z\"\\\\\\]\\n\\x00\\x7fé\u{2028} ]{0,20}") {
            let mut short = Vec::new();
            json_str(&mut short, &s);
            let mut looped = Vec::new();
            json_str_escaping(&mut looped, &s);
            prop_assert_eq!(short, looped);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) {
            16
        } else {
            std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2048)
        }))]
        #[test]
        fn escaped_output_is_one_line_and_valid_json(s in hostile_string()) {
            let j = json(&s);
            // Checked against the standard library's idea of a control, not ours.
            prop_assert!(j.chars().all(visible), "{j:?}");
            let parsed: String = serde_json::from_str(&format!("\"{j}\"")).unwrap();
            prop_assert_eq!(&parsed, &s);
            prop_assert_eq!(serde_json_like_unescape(&j), s.clone());
            let t = text(&s);
            prop_assert!(t.chars().all(visible), "{t:?}");
            prop_assert!(!t.contains('\n'));
            let mut q = Vec::new();
            text_str(&mut q, &s, true);
            let q = String::from_utf8(q).unwrap();
            // A quoted logfmt value never contains an unescaped quote.
            let unescaped_quote = q.char_indices().any(|(i, c)| {
                c == '"' && q[..i].chars().rev().take_while(|&b| b == '\\').count() % 2 == 0
            });
            prop_assert!(!unescaped_quote, "{q:?}");
        }
    }

    #[test]
    fn c1_and_bidi_controls_are_escaped() {
        assert_eq!(json("a\u{85}b\u{9b}c"), "a\\u0085b\\u009bc");
        assert_eq!(text("a\u{85}b"), "a\\x85b");
        assert_eq!(json("x\u{202e}y\u{2066}z"), "x\\u202ey\\u2066z");
        assert_eq!(text("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(json("\u{2028}\u{2029}"), "\\u2028\\u2029");
        assert_eq!(text("\u{61c}"), "\\u{61c}");
    }

    /// Found by `cargo mutants`: nothing pinned the short escapes for tab, or that a
    /// printable character sharing a lead byte with the controls (0xC2: U+0080–U+00BF,
    /// 0xD8: U+0600–U+063F, 0xE2: U+2000–U+2FFF) is copied as it is.
    #[test]
    fn tabs_get_their_short_escape_and_printable_neighbours_of_controls_are_kept() {
        assert_eq!(json("a\tb"), "a\\tb");
        assert_eq!(text("a\tb"), "a\\tb");
        for kept in [
            "\u{a9}\u{bf}",
            "\u{600}\u{634}\u{63f}",
            "\u{20ac}\u{2192}\u{2013}",
        ] {
            assert_eq!(json(kept), kept);
            assert_eq!(text(kept), kept);
        }
    }

    /// A minimal JSON-string unescaper for the round-trip property (no serde in this crate).
    fn serde_json_like_unescape(s: &str) -> String {
        let mut out = String::new();
        let mut it = s.chars();
        while let Some(c) = it.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match it.next().unwrap() {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'u' => {
                    let hex: String = it.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
                }
                other => out.push(other),
            }
        }
        out
    }
}
