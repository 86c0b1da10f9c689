//! A record captured on the caller's thread as binary, and rendered on the writer.
//!
//! The caller copies what only it has (the arguments' values and a raw timestamp) and
//! refers to what is static (the call site: level, target, field names, a literal
//! message) by pointer. The writer renders the line through the same
//! [`LineBuilder`] as a caller would, so the bytes are identical whichever thread
//! formats them.
//!
//! Layout (native-endian, unaligned):
//!
//! ```text
//! header  raw timestamp u64 | flags u8 | format u8 | shape 6 bytes | site pointer u64
//!         (flags: TSC; a tracing site; the message is the call site's, not a field)
//! field   tag u8 | index u8 | value
//!         I64, U64, F64: 8 bytes; BOOL: 1 byte; STR: u32 length + bytes (UTF-8);
//!         STATIC: pointer u64 + length u64 of a &'static str
//! extra   EXTRA | u32 length + bytes, rendered (span context), appended at the end
//! ```
//!
//! The shape ([`Shape::encode`]: option bits, timer, offset) is all zeros for the
//! default record; the layer writes it only when one of its options is set.
//!
//! Pointers in a record are only ever `&'static` and only read by the process that
//! wrote them: a captured record lives only in a heap ring, never in a spool (which
//! outlives the process) and never in a forked child (which writes formatted lines).

use std::fmt;
use std::time::SystemTime;

use crate::record::clock::{Raw, WallClock};
use crate::record::level::Level;
use crate::record::{Format, LineBuilder, Shape, Value};

/// Bytes of a record's header.
pub(crate) const HEADER: usize = 24;

const FLAG_TSC: u8 = 1;
const FLAG_TRACING: u8 = 2;
/// The record's message is its call site's literal ([`Callsite::message`]), rendered
/// first as a message field would be: 18 bytes a record does not carry, so a burst
/// fits a sixth more records in the same budget.
const FLAG_SITE_MESSAGE: u8 = 4;

const TAG_I64: u8 = 1;
const TAG_U64: u8 = 2;
const TAG_F64: u8 = 3;
const TAG_BOOL: u8 = 4;
const TAG_STR: u8 = 5;
const TAG_STATIC: u8 = 6;
const TAG_EXTRA: u8 = 7;
/// Where a record written in place ends before its computed length (a length
/// computed wrong: a bug): [`Fixed::finish`] zeroes the rest, and rendering stops.
const TAG_END: u8 = 0;

/// The field index that names the message rather than a call-site field.
pub const MESSAGE: u8 = u8::MAX;

/// A loglag macro's call site: everything that does not change between calls lives
/// here, in a `static`, and a record carries a pointer to it.
#[derive(Debug)]
pub struct Callsite {
    /// The call's level.
    pub level: Level,
    /// `module_path!()` unless the call names its target.
    pub target: &'static str,
    /// `file!()`.
    pub file: &'static str,
    /// `line!()`.
    pub line: u32,
    /// The fields' names, in the order the call gives them.
    pub names: &'static [&'static str],
    /// The call's message where it is a literal with no braces (no arguments, no
    /// escapes): its records refer to it here instead of carrying it.
    pub message: Option<&'static str>,
}

/// A literal message that a call site can hold as it is ([`Callsite::message`]):
/// one without `{` or `}`, whose text is the literal's, with no formatting to do.
pub const fn literal_message(literal: &'static str) -> Option<&'static str> {
    let bytes = literal.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' || bytes[i] == b'}' {
            return None;
        }
        i += 1;
    }
    Some(literal)
}

/// Where a record's static parts come from.
#[derive(Clone, Copy)]
pub(crate) enum Site {
    Loglag(&'static Callsite),
    #[cfg(feature = "tracing")]
    Tracing(&'static tracing_core::Metadata<'static>),
}

impl Site {
    fn target(self) -> &'static str {
        match self {
            Site::Loglag(c) => c.target,
            #[cfg(feature = "tracing")]
            Site::Tracing(m) => m.target(),
        }
    }

    fn source(self) -> (Option<&'static str>, Option<u32>) {
        match self {
            Site::Loglag(c) => (Some(c.file), Some(c.line)),
            #[cfg(feature = "tracing")]
            Site::Tracing(m) => (m.file(), m.line()),
        }
    }

    fn name(self, index: u8) -> &'static str {
        if index == MESSAGE {
            return "message";
        }
        match self {
            Site::Loglag(c) => c.names.get(index as usize).copied().unwrap_or("?"),
            #[cfg(feature = "tracing")]
            Site::Tracing(m) => m
                .fields()
                .iter()
                .nth(index as usize)
                .map_or("?", |f| f.name()),
        }
    }
}

/// Appends one record's captured form to a buffer. Made by the pipeline for a
/// front-end; the macros reach it through `loglag::__private`.
pub struct Encoder<'a> {
    buf: &'a mut Vec<u8>,
    /// Where this record's header starts in `buf`.
    start: usize,
}

impl fmt::Debug for Encoder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoder")
            .field("len", &self.buf.len())
            .finish()
    }
}

/// The fields whose bytes are known from the value alone, written through the
/// impl's `put`: one definition for [`Encoder`] (appending) and [`Fixed`] (in place),
/// so the two paths cannot disagree on a byte.
macro_rules! plain_fields {
    () => {
        #[inline]
        fn word(&mut self, tag: u8, index: u8, value: u64) {
            let mut item = [0u8; Fixed::WORD_LEN];
            item[0] = tag;
            item[1] = index;
            item[2..].copy_from_slice(&value.to_ne_bytes());
            self.put(&item);
        }

        /// A signed integer field.
        #[inline]
        pub fn i64(&mut self, index: u8, value: i64) {
            self.word(TAG_I64, index, value as u64);
        }

        /// An unsigned integer field.
        #[inline]
        pub fn u64(&mut self, index: u8, value: u64) {
            self.word(TAG_U64, index, value);
        }

        /// A float field.
        #[inline]
        pub fn f64(&mut self, index: u8, value: f64) {
            self.word(TAG_F64, index, value.to_bits());
        }

        /// A boolean field.
        #[inline]
        pub fn bool(&mut self, index: u8, value: bool) {
            self.put(&[TAG_BOOL, index, value as u8]);
        }

        /// A text field that lives for the whole program: only its address is copied.
        #[inline]
        pub fn static_str(&mut self, index: u8, value: &'static str) {
            let mut item = [0u8; Fixed::STATIC_LEN];
            item[0] = TAG_STATIC;
            item[1] = index;
            item[2..10].copy_from_slice(&(value.as_ptr() as u64).to_ne_bytes());
            item[10..].copy_from_slice(&(value.len() as u64).to_ne_bytes());
            self.put(&item);
        }
    };
}

/// A record whose length is known before it is written (a macro call with plain
/// values), but for its values: where it comes from, how it renders, whether its
/// message is its call site's (no field carries it then), and the length of what
/// follows the header (the fields, a carried message included).
#[derive(Clone, Copy)]
pub(crate) struct PlainRecord {
    pub(crate) site: Site,
    pub(crate) format: Format,
    pub(crate) site_message: bool,
    pub(crate) values_len: usize,
}

impl PlainRecord {
    /// The record's length, header included.
    pub(crate) fn len(&self) -> usize {
        HEADER + self.values_len
    }

    /// The record's header, read at `time`.
    #[cfg_attr(loglag_loom, allow(dead_code))]
    #[inline]
    pub(crate) fn header(&self, time: Raw) -> [u8; HEADER] {
        let mut header = header(self.site, self.format, time);
        if self.site_message {
            header[8] |= FLAG_SITE_MESSAGE;
        }
        header
    }

    /// Begins the record through an [`Encoder`] instead (the copying path): the
    /// same header.
    #[cfg_attr(loglag_loom, allow(dead_code))]
    pub(crate) fn begin<'a>(&self, buf: &'a mut Vec<u8>, time: Raw) -> Encoder<'a> {
        let mut encoder = Encoder::begin(buf, self.site, self.format, time);
        if self.site_message {
            encoder.site_message();
        }
        encoder
    }
}

/// A record's header (see the layout above).
#[inline]
pub(crate) fn header(site: Site, format: Format, time: Raw) -> [u8; HEADER] {
    let (flags, site_ptr) = match site {
        Site::Loglag(c) => (0, c as *const Callsite as u64),
        #[cfg(feature = "tracing")]
        Site::Tracing(m) => (FLAG_TRACING, m as *const _ as u64),
    };
    let flags = flags | if time.tsc { FLAG_TSC } else { 0 };
    let mut header = [0u8; HEADER];
    header[..8].copy_from_slice(&time.value.to_ne_bytes());
    header[8] = flags;
    header[9] = format.index();
    header[16..].copy_from_slice(&site_ptr.to_ne_bytes());
    header
}

/// Writes a record whose length is known before it is written (a macro call whose
/// values are all copied as they are: integers, floats, bools, text) into a slice of
/// exactly that length: the ring's own memory where it can, so the record is copied
/// once. The bytes are the ones [`Encoder`] appends for the same values.
pub struct Fixed<'a> {
    out: &'a mut [u8],
    at: usize,
    /// A field did not fit (the length was computed too short) and was left out.
    overflowed: bool,
}

impl fmt::Debug for Fixed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fixed")
            .field("len", &self.out.len())
            .field("at", &self.at)
            .finish()
    }
}

#[cfg_attr(loglag_loom, allow(dead_code))]
impl<'a> Fixed<'a> {
    #[inline]
    pub(crate) fn new(out: &'a mut [u8]) -> Fixed<'a> {
        Fixed {
            out,
            at: 0,
            overflowed: false,
        }
    }

    /// Whether exactly the slice's length was written.
    pub(crate) fn is_full(&self) -> bool {
        self.at == self.out.len() && !self.overflowed
    }

    /// Never panics: the slice is ring memory between the record's reservation and
    /// its publication, and a panic there would leave the writer waiting at the
    /// shared ring's unpublished record for good. A field that does not fit (a
    /// length computed too short) is left out; [`Fixed::finish`] says so.
    #[inline]
    pub(crate) fn put(&mut self, bytes: &[u8]) {
        match self.out.get_mut(self.at..self.at + bytes.len()) {
            Some(into) => {
                into.copy_from_slice(bytes);
                self.at += bytes.len();
            }
            None => self.left_out(),
        }
    }

    #[cold]
    fn left_out(&mut self) {
        self.overflowed = true;
    }

    /// Ends the record: bytes no field wrote (a length computed too long) are zeroed,
    /// where rendering stops (`TAG_END`). Whether exactly the computed length was
    /// written, which the caller asserts once the record is published.
    #[inline]
    pub(crate) fn finish(mut self) -> bool {
        let exact = self.is_full();
        if !exact {
            self.out[self.at..].fill(TAG_END);
            self.at = self.out.len();
        }
        exact
    }

    /// Bytes of an integer or float field.
    pub const WORD_LEN: usize = 10;
    /// Bytes of a bool field.
    pub const BOOL_LEN: usize = 3;
    /// Bytes of a `&'static str` field.
    pub const STATIC_LEN: usize = 18;

    /// Bytes of a text field of `len` bytes.
    #[inline]
    pub fn str_len(len: usize) -> usize {
        6 + len
    }

    plain_fields!();

    /// A text field, copied (under 4 GiB: longer records take the copying path).
    #[inline]
    pub fn str(&mut self, index: u8, value: &str) {
        let mut item = [0u8; 6];
        item[0] = TAG_STR;
        item[1] = index;
        item[2..].copy_from_slice(&(value.len() as u32).to_ne_bytes());
        self.put(&item);
        self.put(value.as_bytes());
    }
}

impl<'a> Encoder<'a> {
    pub(crate) fn begin(buf: &'a mut Vec<u8>, site: Site, format: Format, time: Raw) -> Self {
        let start = buf.len();
        buf.extend_from_slice(&header(site, format, time));
        Encoder { buf, start }
    }

    /// Marks the record's message as its call site's ([`Callsite::message`]).
    pub(crate) fn site_message(&mut self) {
        self.buf[self.start + 8] |= FLAG_SITE_MESSAGE;
    }

    /// Sets the record's shape (the layer's options), which the header otherwise
    /// leaves at the default.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn shape(&mut self, shape: Shape) {
        self.buf[self.start + 10..self.start + 16].copy_from_slice(&shape.encode());
    }

    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    plain_fields!();

    /// A text field, copied.
    #[inline]
    pub fn str(&mut self, index: u8, value: &str) {
        // A field longer than 4 GiB is cut; the record would be truncated anyway.
        self.buf.extend_from_slice(&[TAG_STR, index, 0, 0, 0, 0]);
        let start = self.buf.len();
        self.buf
            .extend_from_slice(&value.as_bytes()[..value.len().min(u32::MAX as usize)]);
        let len = cap_u32(self.buf, start);
        self.buf[start - 4..start].copy_from_slice(&len.to_ne_bytes());
    }

    /// A field rendered through `Display` now, on the caller (the value may not live
    /// until the writer formats).
    pub fn display(&mut self, index: u8, value: &dyn fmt::Display) {
        self.text(index, format_args!("{value}"));
    }

    /// A field rendered through `Debug` now.
    pub fn debug(&mut self, index: u8, value: &dyn fmt::Debug) {
        self.text(index, format_args!("{value:?}"));
    }

    /// A message: a literal is referred to, anything else formatted now.
    #[inline]
    pub fn args(&mut self, index: u8, args: fmt::Arguments<'_>) {
        match args.as_str() {
            Some(literal) => self.static_str(index, literal),
            None => self.text(index, args),
        }
    }

    /// Formats `args` straight into the record as a STR field.
    fn text(&mut self, index: u8, args: fmt::Arguments<'_>) {
        self.buf.extend_from_slice(&[TAG_STR, index, 0, 0, 0, 0]);
        let start = self.buf.len();
        // Through `fmt::Write`, not `io::Write`: the latter wraps the buffer in an
        // adapter that keeps an `io::Error` per write, for a `Vec` that cannot fail.
        let _ = fmt::Write::write_fmt(&mut crate::record::FmtVec(self.buf), args);
        let len = cap_u32(self.buf, start);
        self.buf[start - 4..start].copy_from_slice(&len.to_ne_bytes());
    }

    /// Appends rendered bytes (span context) that the writer adds at the end of the line.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn extra(&mut self, fill: impl FnOnce(&mut Vec<u8>)) {
        self.buf.extend_from_slice(&[TAG_EXTRA, 0, 0, 0, 0]);
        let start = self.buf.len();
        fill(self.buf);
        let len = cap_u32(self.buf, start);
        self.buf[start - 4..start].copy_from_slice(&len.to_ne_bytes());
    }
}

/// The length of `buf[start..]` as a u32 length prefix. Past 4 GiB the bytes are cut
/// to what the prefix can say (at a character boundary), so the prefix never lies and
/// no byte of user text can be read back as a tag.
fn cap_u32(buf: &mut Vec<u8>, start: usize) -> u32 {
    let mut end = buf.len().min(start + u32::MAX as usize);
    while end > start && end < buf.len() && (buf[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    buf.truncate(end);
    (end - start) as u32
}

fn take<'r>(rec: &mut &'r [u8], n: usize) -> Option<&'r [u8]> {
    if rec.len() < n {
        return None;
    }
    let (head, rest) = rec.split_at(n);
    *rec = rest;
    Some(head)
}

fn u64_at(bytes: &[u8]) -> u64 {
    u64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes"))
}

/// Renders a captured record as one line into `out`, with its timestamp from `clock`.
/// A record cut short (which only a bug could make) ends at what was read.
pub(crate) fn render(mut rec: &[u8], level: Level, clock: &mut WallClock, out: &mut Vec<u8>) {
    let Some(header) = take(&mut rec, HEADER) else {
        debug_assert!(false, "captured record without a header");
        return;
    };
    let raw = Raw {
        value: u64_at(header),
        tsc: header[8] & FLAG_TSC != 0,
    };
    render_at(header, rec, level, clock.system_time_of(raw), out);
}

/// Renders with the caller's clock instead of the captured one: the record could not
/// be handed over, and the caller has no tick rate to convert with.
pub(crate) fn render_now(mut rec: &[u8], level: Level, out: &mut Vec<u8>) {
    let Some(header) = take(&mut rec, HEADER) else {
        return;
    };
    render_at(header, rec, level, SystemTime::now(), out);
}

fn render_at(header: &[u8], mut rec: &[u8], level: Level, time: SystemTime, out: &mut Vec<u8>) {
    let site_ptr = u64_at(&header[16..]);
    // SAFETY: the encoder wrote this pointer from a `&'static` of the kind its flag
    // names, in this process (see the module's note).
    let site = unsafe {
        if header[8] & FLAG_TRACING != 0 {
            #[cfg(feature = "tracing")]
            {
                Site::Tracing(&*(site_ptr as *const tracing_core::Metadata<'static>))
            }
            #[cfg(not(feature = "tracing"))]
            {
                return;
            }
        } else {
            Site::Loglag(&*(site_ptr as *const Callsite))
        }
    };
    let format = Format::from_index(header[9]);
    let shape = Shape::decode(&header[10..16]);
    let mut line = LineBuilder::begin_shaped(out, format, shape, time, level, site.target());
    if shape.bits & (Shape::FILE | Shape::LINE) != 0 {
        let (file, number) = site.source();
        line.source(file, number);
    }
    if header[8] & FLAG_SITE_MESSAGE != 0 {
        if let Site::Loglag(Callsite {
            message: Some(message),
            ..
        }) = site
        {
            line.field(site.name(MESSAGE), Value::Str(message));
        }
    }
    let mut extra: &[u8] = &[];
    while let Some(&[tag, index]) = take(&mut rec, 2) {
        let value = match tag {
            TAG_I64 | TAG_U64 | TAG_F64 => {
                let Some(w) = take(&mut rec, 8) else { break };
                let w = u64_at(w);
                match tag {
                    TAG_I64 => Value::I64(w as i64),
                    TAG_U64 => Value::U64(w),
                    _ => Value::F64(f64::from_bits(w)),
                }
            }
            TAG_BOOL => match take(&mut rec, 1) {
                Some(b) => Value::Bool(b[0] != 0),
                None => break,
            },
            TAG_STR => {
                let Some(len) = take(&mut rec, 4) else { break };
                let len = u32::from_ne_bytes(len.try_into().expect("4 bytes")) as usize;
                let Some(bytes) = take(&mut rec, len) else {
                    break;
                };
                match std::str::from_utf8(bytes) {
                    Ok(text) => Value::Str(text),
                    Err(_) => Value::Bytes(bytes),
                }
            }
            TAG_STATIC => {
                let Some(w) = take(&mut rec, 16) else { break };
                let (ptr, len) = (u64_at(w), u64_at(&w[8..]) as usize);
                // SAFETY: written from a `&'static str` in this process.
                Value::Str(unsafe {
                    std::str::from_utf8_unchecked(std::slice::from_raw_parts(ptr as *const u8, len))
                })
            }
            TAG_EXTRA => {
                // The index byte was the first of the length.
                let Some(rest) = take(&mut rec, 3) else { break };
                let len = u32::from_ne_bytes([index, rest[0], rest[1], rest[2]]) as usize;
                let Some(bytes) = take(&mut rec, len) else {
                    break;
                };
                extra = bytes;
                continue;
            }
            TAG_END => break,
            _ => {
                debug_assert!(false, "unknown capture tag {tag}");
                break;
            }
        };
        line.field(site.name(index), value);
    }
    line.finish_with(|out| out.extend_from_slice(extra));
}

#[cfg(test)]
mod tests {
    use super::*;

    static SITE: Callsite = Callsite {
        level: Level::Warn,
        target: "app::db",
        file: "src/db.rs",
        line: 7,
        names: &["id", "user", "ok", "ms", "query"],
        message: Some("slow query"),
    };

    /// A record goes through its bytes: the call site and a `&'static str` by
    /// address (the `unsafe` reads of `render_at`), the rest by value.
    #[test]
    fn a_captured_record_renders_from_its_bytes_alone() {
        let mut rec = Vec::new();
        let raw = Raw {
            value: 0,
            tsc: false,
        };
        let mut e = Encoder::begin(&mut rec, Site::Loglag(&SITE), Format::Logfmt, raw);
        e.u64(0, 42);
        e.str(1, "ann");
        e.bool(2, true);
        e.f64(3, 12.5);
        e.static_str(4, "select 1");
        e.i64(0, -3);
        e.args(MESSAGE, format_args!("slow query"));
        // The bytes as the writer gets them: copied out of the ring.
        let copied = rec.clone();
        drop(rec);
        let mut out = Vec::new();
        render_at(
            &copied[..HEADER],
            &copied[HEADER..],
            Level::Warn,
            SystemTime::UNIX_EPOCH,
            &mut out,
        );
        let line = String::from_utf8(out).unwrap();
        assert_eq!(
            line,
            "ts=1970-01-01T00:00:00.000000Z level=warn target=app::db id=42 user=\"ann\" \
             ok=true ms=12.5 query=\"select 1\" id=-3 msg=\"slow query\"\n"
        );
    }

    /// A captured record (header and fields) rendered at the epoch, as WARN.
    fn render(rec: &[u8]) -> String {
        let mut out = Vec::new();
        render_at(
            &rec[..HEADER],
            &rec[HEADER..],
            Level::Warn,
            SystemTime::UNIX_EPOCH,
            &mut out,
        );
        String::from_utf8(out).unwrap()
    }

    /// A record whose message is its call site's renders as one that carries the
    /// same message as its first field, in every format, and is shorter by that
    /// field.
    #[test]
    fn a_message_held_by_the_call_site_renders_as_one_carried() {
        let raw = Raw {
            value: 0,
            tsc: false,
        };
        for format in [
            Format::Json,
            Format::Logfmt,
            Format::Compact,
            Format::Syslog,
        ] {
            if cfg!(miri) && format == Format::Syslog {
                continue; // its header names the host: `gethostname`, which miri lacks
            }
            let mut carried = Vec::new();
            let mut e = Encoder::begin(&mut carried, Site::Loglag(&SITE), format, raw);
            e.static_str(MESSAGE, "slow query");
            e.u64(0, 42);
            let mut held = Vec::new();
            let mut e = Encoder::begin(&mut held, Site::Loglag(&SITE), format, raw);
            e.site_message();
            e.u64(0, 42);
            assert_eq!(held.len() + Fixed::STATIC_LEN, carried.len());
            assert_eq!(render(&held), render(&carried), "{format:?}");
            assert!(render(&held).contains("slow query"));
        }
    }

    /// Only a literal without braces is held as it is: one with arguments or
    /// escapes is formatted.
    #[test]
    fn only_a_literal_without_braces_is_held_by_the_call_site() {
        assert_eq!(literal_message("listening"), Some("listening"));
        assert_eq!(literal_message(""), Some(""));
        assert_eq!(literal_message("a \"quoted\"\n"), Some("a \"quoted\"\n"));
        assert_eq!(literal_message("user {user}"), None);
        assert_eq!(literal_message("a {{brace}}"), None);
        assert_eq!(literal_message("}"), None);
    }

    /// A plain record whose length was computed wrong (a bug) never panics while it
    /// is being written (it may be in ring memory, reserved and not yet published):
    /// too short, the field that does not fit is left out; too long, the rest is
    /// zeroed and rendering stops there. `finish` says it was not exact.
    #[test]
    fn a_plain_record_of_the_wrong_length_is_ended_not_panicked() {
        let raw = Raw {
            value: 0,
            tsc: false,
        };
        let header = header(Site::Loglag(&SITE), Format::Logfmt, raw);
        let exact = HEADER + 2 * Fixed::WORD_LEN;
        // (length, what renders, where the fields written end)
        for (len, shows, written) in [
            (exact, "id=1 user=2", exact),
            (exact - 1, "id=1", HEADER + Fixed::WORD_LEN),
            (exact + 9, "id=1 user=2", exact),
        ] {
            // What the ring held before, past the fields: bytes that would render as
            // fields (`ok=true`) were they not zeroed.
            let mut ring_memory = vec![0u8; len];
            for (i, byte) in ring_memory[written..].iter_mut().enumerate() {
                *byte = [TAG_BOOL, 2, 1][i % 3];
            }
            let mut out = Fixed::new(&mut ring_memory);
            out.put(&header);
            out.u64(0, 1);
            out.u64(1, 2);
            assert_eq!(out.finish(), len == exact, "{len}");
            let line = render(&ring_memory);
            assert!(
                line.ends_with(&format!("target=app::db {shows}\n")),
                "{len}: {line}"
            );
        }
    }
}
