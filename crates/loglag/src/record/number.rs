//! Numbers written straight into the line, byte for byte as `Display` writes them.
//!
//! The writer renders every record, and `write!(out, "{v}")` went through
//! `core::fmt`'s machinery for each number: 14% of the writer's time in
//! `perf record -g` on `cargo bench -p loglag --bench latency -- --throughput`, most of
//! it for one `f64`. Integers take two digits per step; floats with up to six decimals
//! (the ones logs carry, such as `12.5`) are written exactly without a shortest-digit
//! search, the rest by `Display`. The tests check both against `Display` itself, on any
//! bit pattern.

const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends `v` in decimal, as `Display` does.
pub(crate) fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = v as usize * 2;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + v as u8;
    }
    out.extend_from_slice(&buf[at..]);
}

/// Appends `v` in decimal, as `Display` does.
pub(crate) fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Decimals a float is tried with before `Display` takes over.
const SCALE: f64 = 1e6;

/// Appends a finite `v` as `Display` writes it: `1`, `-0`, `0.25`, `12.5`.
///
/// `Display` writes the shortest decimal that reads back to `v`. When `v` is the
/// double nearest to some `m / 10⁶` with `|m| < 10¹⁵` (checked exactly: `m` and `10⁶`
/// are exact doubles and IEEE division rounds correctly), that decimal has at most 15
/// significant digits, and no other decimal of 15 digits or fewer reads back to `v`
/// (they lie further apart than a double's rounding interval is wide), so it is the
/// shortest, and it is what `Display` writes. Everything else (more decimals, huge or
/// tiny magnitudes) goes through `Display` itself.
pub(crate) fn push_f64(out: &mut Vec<u8>, v: f64) {
    debug_assert!(v.is_finite());
    let m = (v * SCALE).round();
    if m.abs() < 1e15 && m / SCALE == v {
        if v.is_sign_negative() {
            out.push(b'-');
        }
        let m = m.abs() as u64;
        push_u64(out, m / 1_000_000);
        let mut frac = m % 1_000_000;
        if frac != 0 {
            let mut width = 6;
            while frac % 10 == 0 {
                frac /= 10;
                width -= 1;
            }
            out.push(b'.');
            let mut digits = [b'0'; 6];
            for slot in digits[..width].iter_mut().rev() {
                *slot = b'0' + (frac % 10) as u8;
                frac /= 10;
            }
            out.extend_from_slice(&digits[..width]);
        }
        return;
    }
    let _ = std::io::Write::write_fmt(out, format_args!("{v}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn f(v: f64) -> String {
        let mut out = Vec::new();
        push_f64(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_read_as_display_writes_them() {
        for v in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            12.5,
            1e21,
            1e22,
            1e-7,
            123456.789,
            5e-324,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            0.3,
            2.0f64.powi(60),
            1.5e300,
            9007199254740993.0,
            100.0,
            0.001,
            0.000001,
            0.0000005,
            -0.5,
            -12.5,
            999_999_999.999_999,
            123_456_789.123_456,
            1e9,
            999_999_999_999_999.0,
            0.1 + 0.2,
        ] {
            assert_eq!(f(v), format!("{v}"), "{v:e}");
        }
    }

    #[test]
    fn integers_read_as_display_writes_them() {
        for v in [0u64, 9, 10, 99, 100, 101, 12345, u64::MAX, 1 << 63] {
            let mut out = Vec::new();
            push_u64(&mut out, v);
            assert_eq!(out, v.to_string().as_bytes());
        }
        for v in [0i64, -1, -10, i64::MIN, i64::MAX, -99, 42] {
            let mut out = Vec::new();
            push_i64(&mut out, v);
            assert_eq!(out, v.to_string().as_bytes());
        }
    }

    proptest! {
        // Under miri a few cases (each is slow there; the real runs cover the space).
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 16 } else { 100_000 }))]
        /// Any finite double, from its bits: byte for byte what `Display` writes.
        #[test]
        fn any_float_reads_as_display_writes_it(bits in any::<u64>()) {
            let v = f64::from_bits(bits);
            prop_assume!(v.is_finite());
            prop_assert_eq!(f(v), format!("{}", v));
        }

        #[test]
        fn any_integer_reads_as_display_writes_it(v in any::<i64>(), u in any::<u64>()) {
            let mut out = Vec::new();
            push_i64(&mut out, v);
            prop_assert_eq!(String::from_utf8(out.clone()).unwrap(), v.to_string());
            out.clear();
            push_u64(&mut out, u);
            prop_assert_eq!(String::from_utf8(out.clone()).unwrap(), u.to_string());
        }

        /// Doubles whose shortest form has up to 15 digits, at any magnitude: the path
        /// that does not fall back to `Display`. (Below 10¹⁵ × 10²⁹³ < `f64::MAX`: a
        /// larger exponent parses to infinity, which no field value can be.)
        #[test]
        fn short_floats_at_any_exponent_read_as_display_writes_them(mantissa in 1u64..1_000_000_000_000_000, exponent in -320i32..=293, neg in any::<bool>()) {
            let v: f64 = format!("{}{mantissa}e{exponent}", if neg { "-" } else { "" }).parse().unwrap();
            prop_assert_eq!(f(v), format!("{}", v));
        }

        /// Every double nearest to a decimal of six places: the fast path, at its edges.
        #[test]
        fn six_place_decimals_read_as_display_writes_them(m in -999_999_999_999_999i64..1_000_000_000_000_000) {
            let v = m as f64 / 1e6;
            prop_assert_eq!(f(v), format!("{}", v));
        }

        /// Floats as logs carry them: a few decimals.
        #[test]
        fn everyday_floats_read_as_display_writes_them(whole in 0u32..100_000, frac in 0u32..10_000, neg in any::<bool>()) {
            let v = (f64::from(whole) + f64::from(frac) / 10_000.0) * if neg { -1.0 } else { 1.0 };
            prop_assert_eq!(f(v), format!("{}", v));
        }
    }
}
