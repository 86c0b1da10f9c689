//! loglag's own macros (`loglag::info!` and the other levels) and the pipeline they
//! log to.
//!
//! A call costs: one relaxed load (the level filter), a raw timestamp, copying the
//! values into a per-thread buffer in binary, and one push into the ring. Everything
//! static about the call (level, target, file, line, field names, a literal message)
//! lives in a `static` at the call site, which the record points to; the line is
//! rendered on the writer thread.

use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};
use std::sync::Arc;

use crate::core::Core;
use crate::pipeline::handle::NonBlocking;
use crate::record::capture::{PlainRecord, Site};
use crate::record::level::Level;
use crate::record::Format;

/// No level is enabled.
const OFF: u8 = 5;

/// The least severe level the macros log, as `Level as u8`, or `OFF`.
static MAX_LEVEL: AtomicU8 = AtomicU8::new(OFF);

struct Global {
    core: Arc<Core>,
    format: Format,
}

static GLOBAL: AtomicPtr<Global> = AtomicPtr::new(std::ptr::null_mut());

/// Sends loglag's macros (`loglag::info!`, …) to `writer`'s pipeline, rendered in
/// `format`, for `max_level` and more severe levels. Call it once, at start. Calling
/// it again moves the macros to another pipeline, but the previous one stays
/// registered, and so alive (its queue's memory, a spool's lock), for the life of the
/// process: a call may still be using it, and counting references on every call would
/// put a shared atomic on the hot path.
///
/// ```
/// let (writer, guard) = loglag::NonBlockingBuilder::default().finish(Vec::<u8>::new());
/// loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
/// loglag::info!(port = 8080, tls = true, "listening");
/// loglag::debug!("not logged: below the maximum level");
/// assert_eq!(guard.shutdown().written_records, 1);
/// ```
pub fn set_global(writer: &NonBlocking, format: Format, max_level: Level) {
    writer.core.adopt_report_format(format);
    let global = Box::into_raw(Box::new(Global {
        core: writer.core.clone(),
        format,
    }));
    // Leaked on purpose: a thread may be inside `emit` with the previous pointer.
    GLOBAL.swap(global, Ordering::AcqRel);
    set_max_level(Some(max_level));
}

/// Sets the least severe level the macros log; `None` turns them off.
pub fn set_max_level(level: Option<Level>) {
    MAX_LEVEL.store(level.map_or(OFF, |l| l as u8), Ordering::Relaxed);
}

/// What the macros expand to. Not a stable interface.
#[doc(hidden)]
pub mod __private {
    use super::*;

    pub use crate::record::capture::{literal_message, Callsite, Encoder, Fixed, MESSAGE};
    /// The level macros name their level through here, not the crate root.
    pub use crate::record::level::Level;

    /// The level filter: one relaxed load.
    #[inline(always)]
    pub fn enabled(level: Level) -> bool {
        level as u8 >= MAX_LEVEL.load(Ordering::Relaxed)
    }

    /// Captures one call's values with `fill` and hands them to the pipeline.
    #[inline]
    pub fn emit(site: &'static Callsite, fill: impl FnOnce(&mut Encoder<'_>)) {
        let global = GLOBAL.load(Ordering::Acquire);
        if global.is_null() {
            return;
        }
        // SAFETY: globals are leaked, never freed.
        let global = unsafe { &*global };
        global
            .core
            .submit_captured(site.level, Site::Loglag(site), global.format, fill);
    }

    /// A call whose values are all plain ([`Capture::PLAIN`]) and whose message is a
    /// literal (or absent): its record's length is known before it is written, and
    /// it is written straight into this thread's ring ([`Fixed`]), in the layout
    /// [`Encoder`] would give it. The values were evaluated once, by the caller.
    #[inline]
    pub fn emit_values<V: Values>(
        site: &'static Callsite,
        message: Option<&'static str>,
        values: &V,
    ) {
        let global = GLOBAL.load(Ordering::Acquire);
        if global.is_null() {
            return;
        }
        // SAFETY: globals are leaked, never freed.
        let global = unsafe { &*global };
        // A message the call site holds is not copied (the record says so).
        let carried = message.filter(|_| site.message.is_none());
        let len = carried.map_or(0, |_| Fixed::STATIC_LEN) + values.plain_len();
        let record = PlainRecord {
            site: Site::Loglag(site),
            format: global.format,
            site_message: message.is_some() && carried.is_none(),
            values_len: len,
        };
        global.core.submit_fixed(
            site.level,
            record,
            |out| {
                if let Some(message) = carried {
                    out.static_str(MESSAGE, message);
                }
                values.put_plain(0, out);
            },
            |encoder| {
                if let Some(message) = carried {
                    encoder.static_str(MESSAGE, message);
                }
                values.capture_all(0, encoder);
            },
        );
    }

    /// A call's values, evaluated once, as a list: `(first, (second, ()))`. Any
    /// number of fields, with no tuple arity to run out of.
    pub trait Values {
        /// Whether every value is plain.
        const PLAIN: bool;
        /// Bytes the plain values take.
        fn plain_len(&self) -> usize;
        /// Writes the plain values as fields `index`, `index + 1`, ….
        fn put_plain(&self, index: u8, out: &mut Fixed<'_>);
        /// Appends the values as fields `index`, `index + 1`, … through `encoder`.
        fn capture_all(&self, index: u8, encoder: &mut Encoder<'_>);
    }

    impl Values for () {
        const PLAIN: bool = true;
        #[inline]
        fn plain_len(&self) -> usize {
            0
        }
        #[inline]
        fn put_plain(&self, _: u8, _: &mut Fixed<'_>) {}
        #[inline]
        fn capture_all(&self, _: u8, _: &mut Encoder<'_>) {}
    }

    impl<H: Capture, T: Values> Values for (H, T) {
        const PLAIN: bool = H::PLAIN && T::PLAIN;
        #[inline]
        fn plain_len(&self) -> usize {
            self.0.plain_len() + self.1.plain_len()
        }
        #[inline]
        fn put_plain(&self, index: u8, out: &mut Fixed<'_>) {
            self.0.put_plain(index, out);
            self.1.put_plain(index.wrapping_add(1), out);
        }
        #[inline]
        fn capture_all(&self, index: u8, encoder: &mut Encoder<'_>) {
            self.0.capture(index, encoder);
            self.1.capture_all(index.wrapping_add(1), encoder);
        }
    }

    /// Whether a call's values can take [`emit_values`]: a constant once inlined.
    #[inline(always)]
    pub const fn plain<V: Values>(_: &V) -> bool {
        V::PLAIN
    }

    /// How a macro argument is copied into the record: integers, floats and bools by
    /// value, text with a length prefix. `%value` and `?value` go through `Display`
    /// and `Debug` instead.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be logged as a loglag field value",
        label = "integers, floats, bools and text are copied as they are",
        note = "write `name = %value` to log it through `Display`, or `name = ?value` through `Debug`"
    )]
    pub trait Capture {
        /// Appends this value as field `index`.
        fn capture(&self, index: u8, encoder: &mut Encoder<'_>);

        /// Whether the value's bytes are known before it is written: copied as it
        /// is, with no `Display` or `Debug` (which could run any code, logging
        /// included, while the record is half written into the ring).
        const PLAIN: bool = false;

        /// Bytes this value takes as a field (plain values only).
        #[inline]
        fn plain_len(&self) -> usize {
            0
        }

        /// Writes this value as field `index` (plain values only).
        #[inline]
        fn put_plain(&self, _index: u8, _out: &mut Fixed<'_>) {}
    }

    macro_rules! capture_as {
        ($method:ident as $as:ty: $($t:ty),*) => {$(
            impl Capture for $t {
                #[inline]
                fn capture(&self, index: u8, encoder: &mut Encoder<'_>) {
                    encoder.$method(index, *self as $as);
                }
                const PLAIN: bool = true;
                #[inline]
                fn plain_len(&self) -> usize {
                    Fixed::WORD_LEN
                }
                #[inline]
                fn put_plain(&self, index: u8, out: &mut Fixed<'_>) {
                    out.$method(index, *self as $as);
                }
            }
        )*};
    }
    capture_as!(i64 as i64: i8, i16, i32, i64, isize);
    capture_as!(u64 as u64: u8, u16, u32, u64, usize);
    capture_as!(f64 as f64: f32, f64);

    impl Capture for bool {
        #[inline]
        fn capture(&self, index: u8, encoder: &mut Encoder<'_>) {
            encoder.bool(index, *self);
        }
        const PLAIN: bool = true;
        #[inline]
        fn plain_len(&self) -> usize {
            Fixed::BOOL_LEN
        }
        #[inline]
        fn put_plain(&self, index: u8, out: &mut Fixed<'_>) {
            out.bool(index, *self);
        }
    }

    macro_rules! capture_text {
        ($($t:ty),*) => {$(
            impl Capture for $t {
                #[inline]
                fn capture(&self, index: u8, encoder: &mut Encoder<'_>) {
                    encoder.str(index, self);
                }
                const PLAIN: bool = true;
                #[inline]
                fn plain_len(&self) -> usize {
                    Fixed::str_len(self.len())
                }
                #[inline]
                fn put_plain(&self, index: u8, out: &mut Fixed<'_>) {
                    out.str(index, self);
                }
            }
        )*};
    }
    capture_text!(str, String);

    impl<T: Capture + ?Sized> Capture for &T {
        #[inline]
        fn capture(&self, index: u8, encoder: &mut Encoder<'_>) {
            (**self).capture(index, encoder);
        }
        const PLAIN: bool = T::PLAIN;
        #[inline]
        fn plain_len(&self) -> usize {
            (**self).plain_len()
        }
        #[inline]
        fn put_plain(&self, index: u8, out: &mut Fixed<'_>) {
            (**self).put_plain(index, out);
        }
    }

    /// `%value`: formatted with `Display` on the caller.
    pub struct DisplayValue<'a, T: ?Sized>(pub &'a T);

    impl<T: ?Sized> std::fmt::Debug for DisplayValue<'_, T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("DisplayValue")
        }
    }

    impl<T: std::fmt::Display + ?Sized> Capture for DisplayValue<'_, T> {
        fn capture(&self, index: u8, encoder: &mut Encoder<'_>) {
            encoder.display(index, &self.0);
        }
    }

    /// `?value`: formatted with `Debug` on the caller.
    pub struct DebugValue<'a, T: ?Sized>(pub &'a T);

    impl<T: ?Sized> std::fmt::Debug for DebugValue<'_, T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("DebugValue")
        }
    }

    impl<T: std::fmt::Debug + ?Sized> Capture for DebugValue<'_, T> {
        fn capture(&self, index: u8, encoder: &mut Encoder<'_>) {
            encoder.debug(index, &self.0);
        }
    }
}

/// Logs at a level given as a constant of type [`Level`] (it goes into
/// the call site's `static`): `loglag::event!(loglag::Level::Warn, disk = "sda", "low space")`.
///
/// The syntax is tracing's: `name = value` fields first (`%value` for `Display`,
/// `?value` for `Debug`), then an optional message, a literal or a format string with
/// arguments; `target: "name",` first overrides the module path. A literal message
/// costs nothing to copy; a message with arguments is formatted on the caller, so
/// prefer fields for values.
#[macro_export]
macro_rules! event {
    ($level:expr, target: $target:expr, $($rest:tt)*) => {
        $crate::__loglag_fields!(@ $level, $target, [], [], $($rest)*)
    };
    ($level:expr, $($rest:tt)*) => {
        $crate::__loglag_fields!(@ $level, module_path!(), [], [], $($rest)*)
    };
}

/// Logs at TRACE through loglag's own capture path; see [`event!`](crate::event).
#[macro_export]
macro_rules! trace {
    ($($rest:tt)*) => { $crate::event!($crate::macros::__private::Level::Trace, $($rest)*) };
}

/// Logs at DEBUG through loglag's own capture path; see [`event!`](crate::event).
#[macro_export]
macro_rules! debug {
    ($($rest:tt)*) => { $crate::event!($crate::macros::__private::Level::Debug, $($rest)*) };
}

/// Logs at INFO through loglag's own capture path; see [`event!`](crate::event).
///
/// ```
/// # let (writer, _guard) = loglag::non_blocking(std::io::sink());
/// # loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
/// let user = "ann";
/// loglag::info!(port = 8080u16, user, latency_ms = 1.5, "listening");
/// loglag::info!(peer = %"10.0.0.1", "accepted connection {}", 7);
/// ```
#[macro_export]
macro_rules! info {
    ($($rest:tt)*) => { $crate::event!($crate::macros::__private::Level::Info, $($rest)*) };
}

/// Logs at WARN through loglag's own capture path; see [`event!`](crate::event).
#[macro_export]
macro_rules! warn {
    ($($rest:tt)*) => { $crate::event!($crate::macros::__private::Level::Warn, $($rest)*) };
}

/// Logs at ERROR through loglag's own capture path; see [`event!`](crate::event).
#[macro_export]
macro_rules! error {
    ($($rest:tt)*) => { $crate::event!($crate::macros::__private::Level::Error, $($rest)*) };
}

/// Collects `name = value` fields, then hands them and the message to the emitter.
#[doc(hidden)]
#[macro_export]
macro_rules! __loglag_fields {
    (@ $l:expr, $t:expr, [$($n:tt)*], [$($v:tt)*], $k:ident = % $val:expr $(, $($rest:tt)*)?) => {
        $crate::__loglag_fields!(@ $l, $t, [$($n)* stringify!($k),],
            [$($v)* ($crate::macros::__private::DisplayValue(&$val)),], $($($rest)*)?)
    };
    (@ $l:expr, $t:expr, [$($n:tt)*], [$($v:tt)*], $k:ident = ? $val:expr $(, $($rest:tt)*)?) => {
        $crate::__loglag_fields!(@ $l, $t, [$($n)* stringify!($k),],
            [$($v)* ($crate::macros::__private::DebugValue(&$val)),], $($($rest)*)?)
    };
    (@ $l:expr, $t:expr, [$($n:tt)*], [$($v:tt)*], $k:ident = $val:expr $(, $($rest:tt)*)?) => {
        $crate::__loglag_fields!(@ $l, $t, [$($n)* stringify!($k),], [$($v)* (&$val),],
            $($($rest)*)?)
    };
    // A bare name logs the variable of that name, as in tracing.
    (@ $l:expr, $t:expr, [$($n:tt)*], [$($v:tt)*], $k:ident $(, $($rest:tt)*)?) => {
        $crate::__loglag_fields!(@ $l, $t, [$($n)* stringify!($k),], [$($v)* (&$k),],
            $($($rest)*)?)
    };
    (@ $l:expr, $t:expr, [$($n:tt)*], [$($v:tt)*], $fmt:literal $($args:tt)*) => {
        $crate::__loglag_emit!($l, $t, [$($n)*], [$($v)*], [$fmt $($args)*])
    };
    (@ $l:expr, $t:expr, [$($n:tt)*], [$($v:tt)*], ) => {
        $crate::__loglag_emit!($l, $t, [$($n)*], [$($v)*], [])
    };
}

/// The call site's `static` and the call itself. The values are evaluated once, into
/// a list (`__loglag_values!`); a call whose values are all plain and whose message
/// is a literal (or absent) is written straight into the ring
/// (`__private::emit_values`), any other through an [`Encoder`](crate::record::capture::Encoder)
/// (`__private::emit`).
#[doc(hidden)]
#[macro_export]
macro_rules! __loglag_emit {
    ($level:expr, $target:expr, [$($n:expr,)*], [$($v:expr,)*], [$($message:tt)*]) => {{
        static __LOGLAG_CALLSITE: $crate::macros::__private::Callsite =
            $crate::macros::__private::Callsite {
                level: $level,
                target: $target,
                file: file!(),
                line: line!(),
                names: &[$($n,)*],
                message: $crate::__loglag_site_message!($($message)*),
            };
        if $crate::macros::__private::enabled($level) {
            // A `match`, not a `let`: temporaries the values borrow live to its end.
            match $crate::__loglag_values!($($v,)*) {
                __loglag_values => {
                    $crate::__loglag_message!(&__LOGLAG_CALLSITE, __loglag_values, $($message)*)
                }
            }
        }
    }};
}

/// The message a call site holds ([`Callsite::message`](crate::record::capture::Callsite)): a
/// literal without arguments or braces.
#[doc(hidden)]
#[macro_export]
macro_rules! __loglag_site_message {
    () => {
        ::core::option::Option::None
    };
    ($fmt:literal) => {
        $crate::macros::__private::literal_message($fmt)
    };
    ($fmt:literal $($args:tt)+) => {
        ::core::option::Option::None
    };
}

/// A call's values as a list: `(a, (b, ()))`.
#[doc(hidden)]
#[macro_export]
macro_rules! __loglag_values {
    () => { () };
    ($first:expr, $($rest:expr,)*) => { ($first, $crate::__loglag_values!($($rest,)*)) };
}

/// The message, first, as tracing puts it, and the call.
#[doc(hidden)]
#[macro_export]
macro_rules! __loglag_message {
    ($site:expr, $values:ident, ) => {
        if $crate::macros::__private::plain(&$values) {
            $crate::macros::__private::emit_values($site, None, &$values)
        } else {
            $crate::macros::__private::emit($site, |__loglag_encoder| {
                $crate::macros::__private::Values::capture_all(&$values, 0, __loglag_encoder)
            })
        }
    };
    // A literal: `as_str` is `Some` unless it captures variables (`"{user}"`).
    ($site:expr, $values:ident, $fmt:literal) => {
        match format_args!($fmt).as_str() {
            Some(__loglag_message) if $crate::macros::__private::plain(&$values) => {
                $crate::macros::__private::emit_values($site, Some(__loglag_message), &$values)
            }
            _ => $crate::macros::__private::emit($site, |__loglag_encoder| {
                __loglag_encoder.args(
                    $crate::macros::__private::MESSAGE,
                    format_args!($fmt),
                );
                $crate::macros::__private::Values::capture_all(&$values, 0, __loglag_encoder)
            }),
        }
    };
    ($site:expr, $values:ident, $fmt:literal $($args:tt)+) => {
        $crate::macros::__private::emit($site, |__loglag_encoder| {
            __loglag_encoder.args(
                $crate::macros::__private::MESSAGE,
                format_args!($fmt $($args)+),
            );
            $crate::macros::__private::Values::capture_all(&$values, 0, __loglag_encoder)
        })
    };
}

#[cfg(test)]
mod tests {
    use super::__private::{Capture, Encoder, Fixed, Values};
    use crate::record::capture::{Callsite, Site};
    use crate::record::clock::Raw;
    use crate::record::level::Level;
    use crate::record::Format;

    static SITE: Callsite = Callsite {
        level: Level::Info,
        target: "t",
        file: "f.rs",
        line: 1,
        names: &["a", "b", "c", "d", "e", "f", "g", "h", "i"],
        message: None,
    };

    /// The bytes a call with these values gives through `Encoder` (the copying path)
    /// and through `Fixed` (in place, with the length computed first), with its
    /// message carried as a field.
    fn both<V: Values>(values: &V) -> (Vec<u8>, Vec<u8>) {
        let time = Raw {
            value: 42,
            tsc: true,
        };
        let site = Site::Loglag(&SITE);
        let mut encoded = Vec::new();
        let mut encoder = Encoder::begin(&mut encoded, site, Format::Json, time);
        encoder.static_str(crate::record::capture::MESSAGE, "message");
        values.capture_all(0, &mut encoder);
        let mut fixed =
            vec![0xAA; crate::record::capture::HEADER + Fixed::STATIC_LEN + values.plain_len()];
        let mut out = Fixed::new(&mut fixed);
        out.put(&crate::record::capture::header(site, Format::Json, time));
        out.static_str(crate::record::capture::MESSAGE, "message");
        values.put_plain(0, &mut out);
        assert!(out.is_full(), "the computed length is the written length");
        (encoded, fixed)
    }

    /// Every plain type, at the edges of its range, and text of every shape: the
    /// in-place path writes exactly the bytes the copying path writes, so the writer
    /// renders them alike, and its length, computed before, is exact.
    #[test]
    fn in_place_and_copied_records_are_the_same_bytes() {
        let text = String::from("ünïcode \n \"quoted\" \u{0}");
        let values = (
            i64::MIN,
            (
                u64::MAX,
                (
                    f64::NAN,
                    (
                        // Not NaN: an f32 NaN widened to f64 may take any payload
                        // (miri picks one per conversion), so the two paths differ.
                        f32::MIN_POSITIVE,
                        (
                            true,
                            ("", (text.as_str(), (&text, (&&7u8, (isize::MAX, ()))))),
                        ),
                    ),
                ),
            ),
        );
        assert!(super::__private::plain(&values));
        let (encoded, fixed) = both(&values);
        assert_eq!(encoded, fixed);
        let (encoded, fixed) = both(&());
        assert_eq!(encoded, fixed);
    }

    /// A call whose literal message its call site holds: its record carries no
    /// message field, and the header says the site's message is the record's, on
    /// both paths alike.
    #[test]
    fn a_literal_message_stays_with_its_call_site() {
        static HELD: Callsite = Callsite {
            level: Level::Info,
            target: "t",
            file: "f.rs",
            line: 1,
            names: &["n"],
            message: crate::__loglag_site_message!("listening"),
        };
        assert_eq!(HELD.message, Some("listening"));
        let none: Option<&str> = crate::__loglag_site_message!("port {}" 1);
        assert_eq!(none, None);
        let none: Option<&str> = crate::__loglag_site_message!();
        assert_eq!(none, None);
        let time = Raw {
            value: 42,
            tsc: true,
        };
        let site = Site::Loglag(&HELD);
        let values = (8080u16, ());
        let mut encoded = Vec::new();
        let mut encoder = Encoder::begin(&mut encoded, site, Format::Json, time);
        encoder.site_message();
        values.capture_all(0, &mut encoder);
        let mut fixed = vec![0xAA; crate::record::capture::HEADER + values.plain_len()];
        let mut out = Fixed::new(&mut fixed);
        let record = crate::record::capture::PlainRecord {
            site,
            format: Format::Json,
            site_message: true,
            values_len: values.plain_len(),
        };
        out.put(&record.header(time));
        values.put_plain(0, &mut out);
        assert!(out.is_full());
        assert_eq!(encoded, fixed);
        if cfg!(miri) {
            return; // rendering reads the wall clock, which miri's isolation hides
        }
        let mut line = Vec::new();
        crate::record::capture::render_now(&fixed, Level::Info, &mut line);
        let line = String::from_utf8(line).unwrap();
        assert!(
            line.contains(r#""fields":{"message":"listening","n":8080}"#),
            "{line}"
        );
    }

    /// `%value` and `?value` are never plain: their `Display` or `Debug` could log,
    /// or run any code, while the record is half written into the ring.
    #[test]
    fn display_and_debug_values_take_the_copying_path() {
        let n = 1;
        assert!(!super::__private::plain(&(
            super::__private::DisplayValue(&n),
            ()
        )));
        assert!(!super::__private::plain(&(
            1u8,
            (super::__private::DebugValue(&n), ())
        )));
        const { assert!(<&&str as Capture>::PLAIN) };
    }
}
