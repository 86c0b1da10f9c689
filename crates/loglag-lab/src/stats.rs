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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
