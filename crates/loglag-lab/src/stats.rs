//! Statistics over measured samples. No I/O.

/// The q-quantile as the reference defines it: the ceil(n·q)-th smallest value
/// (1-based), so p99 of 160 samples is the 159th. `None` for no samples.
///
/// ```
/// use loglag_lab::stats::quantile;
/// let mut v: Vec<u64> = (1..=160).collect();
/// assert_eq!(quantile(&mut v, 0.99), Some(159));
/// assert_eq!(quantile(&mut v, 0.5), Some(80));
/// assert_eq!(quantile(&mut v, 1.0), Some(160));
/// ```
pub fn quantile(values: &mut [u64], q: f64) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let rank = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len());
    Some(values[rank - 1])
}

/// The largest `produced − read` over matched samples of (time, produced, read).
pub fn max_backlog(series: &[(u64, u64, u64)]) -> u64 {
    series
        .iter()
        .map(|&(_, produced, read)| produced.saturating_sub(read))
        .max()
        .unwrap_or(0)
}

/// Mean, or `None` with no samples.
pub fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Resamples drawn for a bootstrap interval.
pub const BOOTSTRAP_RESAMPLES: usize = 400;

/// The share of a difference that the machine's interference may reach before the
/// lab calls the difference inconclusive: were all of it on one side, at least the
/// other half of the difference would remain. One share for the CPU wait and for the
/// generator's lateness (`lab::interference::interference_verdict` applies it; the
/// findings' caption states it).
pub const INTERFERENCE_SHARE: f64 = 0.5;

/// The generator's lateness above this share of a difference (and under
/// [`INTERFERENCE_SHARE`]) is said in the note of a difference that holds.
pub const NOTED_SHARE: f64 = 0.1;

/// A 95% bootstrap interval for `stat(b) − stat(a)`: both samples are resampled with
/// replacement [`BOOTSTRAP_RESAMPLES`] times (a fixed seed, so a report is
/// reproducible), and the interval is the 2.5th and 97.5th percentiles of the
/// differences. `None` if either sample is empty.
///
/// ```
/// use loglag_lab::stats::{bootstrap_difference, mean};
/// let a: Vec<f64> = (0..200).map(|i| 10.0 + (i % 7) as f64).collect();
/// let b: Vec<f64> = a.iter().map(|v| v + 5.0).collect();
/// let (lo, hi) = bootstrap_difference(&a, &b, |s| mean(s.iter().copied()).unwrap()).unwrap();
/// assert!(lo > 4.0 && hi < 6.0, "{lo} {hi}");
/// ```
pub fn bootstrap_difference(
    a: &[f64],
    b: &[f64],
    stat: impl Fn(&mut [f64]) -> f64,
) -> Option<(f64, f64)> {
    bootstrap_interval(a, b, stat, |a, b| b - a)
}

/// A 95% bootstrap interval for `compare(stat(a), stat(b))`, resampled as
/// [`bootstrap_difference`] does (which is this with `b − a`); `compare` may be a
/// ratio. `None` if either sample is empty.
pub fn bootstrap_interval(
    a: &[f64],
    b: &[f64],
    stat: impl Fn(&mut [f64]) -> f64,
    compare: impl Fn(f64, f64) -> f64,
) -> Option<(f64, f64)> {
    let resampled = bootstrap_pairs(a, b, stat)?;
    Some(interval95(
        resampled.iter().map(|&(a, b)| compare(a, b)).collect(),
    ))
}

/// `(stat(a'), stat(b'))` for each of [`BOOTSTRAP_RESAMPLES`] resamples `a'`, `b'` of
/// `a` and `b` (fixed seed): several comparisons of the same two samples share one
/// resampling. `None` if either sample is empty.
pub fn bootstrap_pairs(
    a: &[f64],
    b: &[f64],
    stat: impl Fn(&mut [f64]) -> f64,
) -> Option<Vec<(f64, f64)>> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    // xorshift64*: a few lines, deterministic, plenty for resampling indices.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |n: usize| {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as usize % n
    };
    let mut resample = |from: &[f64], into: &mut Vec<f64>| {
        into.clear();
        into.extend((0..from.len()).map(|_| from[next(from.len())]));
    };
    let (mut ra, mut rb) = (Vec::with_capacity(a.len()), Vec::with_capacity(b.len()));
    Some(
        (0..BOOTSTRAP_RESAMPLES)
            .map(|_| {
                resample(a, &mut ra);
                resample(b, &mut rb);
                (stat(&mut ra), stat(&mut rb))
            })
            .collect(),
    )
}

/// The central 95% of resampled `values`.
pub fn interval95(mut values: Vec<f64>) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() as f64 * q) as usize).min(values.len() - 1)];
    (at(0.025), at(0.975))
}

/// A 95% bootstrap interval for `stat` of one sample, resampled as
/// [`bootstrap_difference`] does. `None` for an empty sample.
pub fn bootstrap_one(sample: &[f64], stat: impl Fn(&mut [f64]) -> f64) -> Option<(f64, f64)> {
    // The difference against a constant baseline is the statistic itself.
    bootstrap_interval(&[0.0], sample, stat, |_, b| b)
}

/// The q-quantile of floats by [`quantile`]'s rule, found by selection rather than a
/// sort (linear time: a bootstrap takes hundreds of them). Reorders `values`.
pub fn quantile_select(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let rank = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len());
    *values.select_nth_unstable_by(rank - 1, f64::total_cmp).1
}

/// The q-quantile of floats, by [`quantile`]'s rule, by sorting: the reference the
/// tests hold [`quantile_select`] to.
#[cfg(test)]
pub fn quantile_f64(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Two samples from the same distribution give an interval around zero; a shift
    /// gives an interval around the shift that excludes zero.
    #[test]
    fn bootstrap_intervals_cover_the_difference_and_exclude_zero_only_when_real() {
        let a: Vec<f64> = (0..1000)
            .map(|i| ((i * 7919) % 1000) as f64 / 100.0)
            .collect();
        let b: Vec<f64> = (0..1000)
            .map(|i| ((i * 104_729) % 1000) as f64 / 100.0)
            .collect();
        let p50 = |s: &mut [f64]| quantile_f64(s, 0.5);
        let (lo, hi) = bootstrap_difference(&a, &b, p50).unwrap();
        assert!(lo < 0.0 && hi > 0.0, "same distribution: [{lo}, {hi}]");
        let shifted: Vec<f64> = b.iter().map(|v| v + 2.0).collect();
        let (lo, hi) = bootstrap_difference(&a, &shifted, p50).unwrap();
        assert!(lo > 1.0 && hi < 3.0, "shifted by 2: [{lo}, {hi}]");
        assert_eq!(bootstrap_difference(&[], &b, p50), None);
        let ratio = bootstrap_interval(
            &a,
            &a.iter().map(|v| v * 3.0).collect::<Vec<_>>(),
            p50,
            |a, b| b / a,
        )
        .unwrap();
        assert!(ratio.0 > 2.0 && ratio.1 < 4.5, "three times: {ratio:?}");
        let (lo, hi) = bootstrap_one(&a, p50).unwrap();
        let median = quantile_f64(&mut a.clone(), 0.5);
        assert!(
            lo <= median && median <= hi && hi - lo < 2.0,
            "[{lo}, {hi}] around {median}"
        );
    }

    proptest! {
        #[test]
        fn selection_finds_the_sorted_quantile(mut v in proptest::collection::vec(-1e6f64..1e6, 1..300), q in 0.0f64..=1.0) {
            let mut sorted = v.clone();
            prop_assert_eq!(quantile_select(&mut v, q), quantile_f64(&mut sorted, q));
        }
    }

    proptest! {
        #[test]
        fn quantiles_are_monotone_and_members(mut v in proptest::collection::vec(0u64..1_000_000, 1..500), a in 0.0f64..1.0, b in 0.0f64..1.0) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let ql = quantile(&mut v, lo).unwrap();
            let qh = quantile(&mut v, hi).unwrap();
            prop_assert!(ql <= qh);
            prop_assert!(v.contains(&ql));
            prop_assert_eq!(quantile(&mut v, 1.0).unwrap(), *v.iter().max().unwrap());
        }
    }

    #[test]
    fn backlog_is_the_largest_gap() {
        assert_eq!(
            max_backlog(&[(0, 0, 0), (1, 100, 10), (2, 300, 150), (3, 300, 300)]),
            150
        );
        assert_eq!(max_backlog(&[]), 0);
    }
}
