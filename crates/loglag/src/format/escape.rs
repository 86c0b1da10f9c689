//! Escaping that keeps one record on one line and stops user input from forging
//! records or terminal escapes. Invalid UTF-8 becomes U+FFFD; nothing here panics.

use std::fmt;

/// Bytes that may start something to escape: ASCII controls, DEL, `"`, `\\`, and the
/// lead bytes of C1 controls (0xC2) and of U+2028/U+2029 (0xE2). Everything else is
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
    t[0xC2] = true;
    t[0xE2] = true;
    t
}
static SUSPICIOUS: [bool; 256] = suspicious_table();

/// Copies clean runs of `s` in bulk; `replacement` appends the escape for a suspicious
/// character and returns true, or returns false to keep it as it is.
fn escape_with(out: &mut Vec<u8>, s: &str, replacement: impl Fn(char, &mut Vec<u8>) -> bool) {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
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
pub fn json_str(out: &mut Vec<u8>, s: &str) {
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

fn is_control(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
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
}

impl fmt::Write for Escaper<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        match self.style {
            Style::Json => json_str(self.out, s),
            Style::Text => text_str(self.out, s, false),
            Style::Quoted => text_str(self.out, s, true),
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

    proptest! {
        #[test]
        fn escaped_output_is_one_line_and_valid_json(s in any::<String>()) {
            let j = json(&s);
            prop_assert!(!j.bytes().any(|b| b < 0x20 || b == 0x7f));
            let parsed: String = serde_json_like_unescape(&j);
            prop_assert_eq!(parsed, s.clone());
            let t = text(&s);
            prop_assert!(!t.chars().any(is_control));
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
