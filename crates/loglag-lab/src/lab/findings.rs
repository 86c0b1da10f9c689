//! The lab's conclusions, each with its evidence: every condition's p50 and p99
//! against the baseline's on the same sink (and the queue against sync logging), with
//! a 95% bootstrap interval over the requests of every round, and a verdict that says
//! "inconclusive", and why, when the runs cannot carry the difference.
//!
//! The interval is a bootstrap over requests (pooled over rounds), so one round is
//! enough to have one: `--rounds` adds requests, and shows the spread between rounds in
//! the pairs table's "p99 range" column, which the interval does not include.

use super::interference::{interference_verdict, remarks_words, Interference, Wording};
use crate::export::findings::three_figures;
use crate::report::{Finding, PairSummary, Percentile};
use crate::stats::{bootstrap_pairs, interval95, quantile_select};

/// The most requests of one pair a bootstrap resamples: above it, every k-th request in
/// send order. Fewer samples only widen the interval, and 400 resamples of 450,000
/// requests (a closed loop) would take seconds per finding.
const MAX_BOOTSTRAP_SAMPLES: usize = 20_000;

/// The condition the findings compare with: the plan's `--baseline`, else `none` (the
/// reference's API without logging) when it ran.
pub(crate) fn baseline_of(chosen: Option<&str>, conditions: &[String]) -> Option<String> {
    chosen
        .map(str::to_owned)
        .or_else(|| conditions.iter().find(|c| *c == "none").cloned())
}

/// Comparisons beyond the baseline's: (condition, compared with). "sync p99 is N× the
/// queue's" is the reference's headline.
const HEADLINES: [(&str, &str); 1] = [("json-sync", "json-queue")];

/// Each round's (round, p50 ms, p99 ms) of one pair.
pub(crate) type RoundPercentiles = Vec<(usize, f64, f64)>;

/// What the findings need of one pair: its summary (whose p50 and p99, over every
/// request, are the point estimates), its requests' latencies (ms, pooled over rounds,
/// [`thinned`] for resampling), and each round's (p50, p99) in ms, by round.
pub(crate) struct PairSamples<'a> {
    pub pair: &'a PairSummary,
    pub resample_ms: Vec<f64>,
    pub per_round: RoundPercentiles,
}

/// The findings of a run.
pub(crate) fn findings(samples: &[PairSamples<'_>], baseline: Option<&str>) -> Vec<Finding> {
    let pairs = || samples.iter().map(|s| s.pair);
    let find = |condition: &str, sink: &str| {
        samples
            .iter()
            .find(|s| s.pair.condition == condition && s.pair.sink == sink)
    };
    let mut comparisons: Vec<(&str, &str)> = Vec::new();
    if let Some(base) = baseline {
        for p in pairs() {
            if p.condition != base && !comparisons.contains(&(&p.condition, base)) {
                comparisons.push((&p.condition, base));
            }
        }
    }
    for (t, b) in HEADLINES {
        if pairs().any(|p| p.condition == t)
            && pairs().any(|p| p.condition == b)
            && !comparisons.contains(&(t, b))
        {
            comparisons.push((t, b));
        }
    }
    let mut sinks: Vec<&str> = Vec::new();
    for p in pairs() {
        if !sinks.contains(&p.sink.as_str()) {
            sinks.push(&p.sink);
        }
    }
    let mut out = Vec::new();
    for sink in sinks {
        for &(condition, base) in &comparisons {
            let (Some(t), Some(b)) = (find(condition, sink), find(base, sink)) else {
                continue;
            };
            for percentile in [Percentile::P50, Percentile::P99] {
                if let Some(mut f) =
                    compare(t.pair, &t.resample_ms, b.pair, &b.resample_ms, percentile)
                {
                    check_rounds(&mut f, t, b);
                    out.push(f);
                }
            }
        }
    }
    out
}

/// The bootstrap resamples requests, so it sees the noise within runs, not the drift
/// of a shared machine between one run and the next. With two rounds or more, each
/// round's own difference must lean the same way as the pooled one; with one, a
/// finding that holds says that the drift was not measured.
fn check_rounds(f: &mut Finding, t: &PairSamples<'_>, b: &PairSamples<'_>) {
    if f.inconclusive.is_some() {
        return;
    }
    let pick = |&(_, p50, p99): &(usize, f64, f64)| match f.percentile {
        Percentile::P50 => p50,
        Percentile::P99 => p99,
    };
    let per_round: Vec<f64> = t
        .per_round
        .iter()
        .filter_map(|tr| {
            let br = b.per_round.iter().find(|br| br.0 == tr.0)?;
            Some(pick(tr) - pick(br))
        })
        .collect();
    if per_round.len() < 2 {
        let note = "one round: drift between runs is not in the interval (--rounds 3 measures it)";
        f.note = Some(match f.note.take() {
            Some(n) => format!("{n}; {note}"),
            None => note.to_owned(),
        });
        return;
    }
    if per_round.iter().any(|d| d * f.difference_ms <= 0.0) {
        let lo = per_round.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = per_round.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        f.inconclusive = Some(format!(
            "the rounds disagree: their own differences run from {} to {} ms",
            three_figures(lo),
            three_figures(hi)
        ));
        f.note = None;
    }
}

/// The findings of a summary read back from files written before findings existed
/// (`loglag report DIR`): the latencies come from its requests, the rounds from its runs.
pub fn from_summary(s: &crate::report::Summary) -> Vec<Finding> {
    let samples: Vec<PairSamples<'_>> = s
        .pairs
        .iter()
        .map(|pair| {
            let mine = |c: &str, k: &str| c == pair.condition && k == pair.sink;
            PairSamples {
                pair,
                resample_ms: thinned(
                    &s.requests
                        .iter()
                        .filter(|r| mine(&r.condition, &r.sink))
                        .filter_map(|r| r.latency_ms)
                        .collect::<Vec<_>>(),
                ),
                per_round: s
                    .runs
                    .iter()
                    .filter(|r| mine(&r.condition, &r.sink))
                    .filter_map(|r| Some((r.round, r.metrics.p50_ms?, r.metrics.p99_ms?)))
                    .collect(),
            }
        })
        .filter(|p| !p.resample_ms.is_empty())
        .collect();
    let baseline = baseline_of(s.params.plan.baseline.as_deref(), &s.params.plan.conditions);
    findings(&samples, baseline.as_deref())
}

/// Every k-th request in send order, at most [`MAX_BOOTSTRAP_SAMPLES`]: what a
/// bootstrap resamples.
pub(crate) fn thinned(ms: &[f64]) -> Vec<f64> {
    let step = ms.len().div_ceil(MAX_BOOTSTRAP_SAMPLES).max(1);
    ms.iter().step_by(step).copied().collect()
}

/// One finding: the point estimates are the pairs' own percentiles (over every
/// request); the intervals come from the thinned samples.
fn compare(
    t: &PairSummary,
    t_ms: &[f64],
    b: &PairSummary,
    b_ms: &[f64],
    percentile: Percentile,
) -> Option<Finding> {
    let q = percentile.quantile();
    let stat = |s: &mut [f64]| quantile_select(s, q);
    let (value_ms, baseline_ms) = (percentile.of(t)?, percentile.of(b)?);
    // Resampled once as (baseline, condition): the difference (condition − baseline)
    // and the ratio come from the same resamples.
    let resampled = bootstrap_pairs(b_ms, t_ms, stat)?;
    let interval = |compare: fn(f64, f64) -> f64| {
        interval95(resampled.iter().map(|&(b, t)| compare(b, t)).collect())
    };
    let difference_interval_ms = interval(|b, t| t - b);
    let ratio_interval = interval(|b, t| t / b);
    let difference_ms = value_ms - baseline_ms;
    let (inconclusive, note) = judge(t, b, percentile, difference_ms, difference_interval_ms);
    Some(Finding {
        condition: t.condition.clone(),
        baseline: b.condition.clone(),
        sink: t.sink.clone(),
        percentile,
        value_ms,
        baseline_ms,
        difference_ms,
        difference_interval_ms,
        ratio: value_ms / baseline_ms,
        ratio_interval,
        inconclusive,
        note,
    })
}

/// (why the difference is inconclusive, what to know even when it holds).
///
/// A saturated baseline makes every comparison with it inconclusive: its latency is
/// not the API's alone. A saturated condition does not, when that is the condition's
/// own doing: sync logging to a slow sink saturates the API, and that is the finding.
/// A busy machine and a late generator add their delay to either side, so they make a
/// difference inconclusive only when that delay could account for it
/// ([`interference_verdict`](super::interference::interference_verdict)); a difference within the noise is said to be that first.
fn judge(
    t: &PairSummary,
    b: &PairSummary,
    percentile: Percentile,
    difference_ms: f64,
    (lo, hi): (f64, f64),
) -> (Option<String>, Option<String>) {
    let who = |p: &PairSummary| format!("{} / {}", p.condition, p.sink);
    if b.metrics.saturation_warning.is_some() {
        return (
            Some(format!(
                "the baseline ({}) was saturated, so its latency is queueing",
                who(b)
            )),
            None,
        );
    }
    let failed = |p: &PairSummary| p.metrics.http_errors + p.metrics.timeouts;
    if failed(b) > 0 {
        return (
            Some(format!(
                "{} of the baseline's requests ({}) failed or timed out",
                failed(b),
                who(b)
            )),
            None,
        );
    }
    if failed(t) > 0 && difference_ms <= 0.0 {
        // Failed requests are not in the percentiles: a condition can look faster
        // only because its slowest requests are missing.
        return (
            Some(format!(
                "{} of its requests failed or timed out and are not in its percentiles: it may look faster only for their absence",
                failed(t)
            )),
            None,
        );
    }
    if lo <= 0.0 && hi >= 0.0 {
        return (
            Some("the 95% interval includes zero: within the noise".to_owned()),
            None,
        );
    }
    // A busy machine (other tenants, or the lab's own reader and generator) slows
    // whatever ran then, on either side: not a condition's doing, when what the runs
    // waited for a CPU, or the generator's lateness, could account for the difference.
    let mut notes = Vec::new();
    let sides = [b, t].map(|p| Interference::of(p, percentile));
    let wording = Wording::lab(percentile);
    match interference_verdict(difference_ms, percentile, sides) {
        Err(why) => return (Some(why.words(&wording)), None),
        Ok(remarks) => notes.extend(remarks_words(&remarks, &wording)),
    }
    if t.metrics.saturation_warning.is_some() {
        notes.push(
            "this condition's runs were saturated and the baseline's were not (see the warning): the difference includes the queue it built"
                .to_owned(),
        );
    }
    if failed(t) > 0 && difference_ms > 0.0 {
        notes.push(format!(
            "{} requests failed or timed out and are not in its percentiles: the difference is a lower bound",
            failed(t)
        ));
    }
    (None, (!notes.is_empty()).then(|| notes.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{CpuWaitMs, Lateness};

    fn pair(condition: &str, sink: &str) -> PairSummary {
        serde_json::from_value(serde_json::json!({
            "condition": condition, "sink": sink, "runs": 1, "requests": 200,
            "p50_ms": null, "p99_ms": null, "max_ms": null, "http_errors": 0, "timeouts": 0,
            "gen_us": null, "log_call_us": null, "max_backlog_kib": null, "drain_s": 0.0,
            "rps_api": 20.0, "rps_logs_read": 20.0, "cpu_cores": null, "dropped": null,
            "queue_full": null, "verified": true,
        }))
        .unwrap()
    }

    /// Latencies around `centre` ms with a spread of ±10%.
    fn around(centre: f64) -> Vec<f64> {
        (0..200)
            .map(|i| centre * (0.9 + 0.2 * ((i * 37) % 200) as f64 / 200.0))
            .collect()
    }

    fn samples(pairs: &[(PairSummary, Vec<f64>)]) -> Vec<PairSamples<'_>> {
        pairs
            .iter()
            .map(|(pair, v)| PairSamples {
                pair,
                resample_ms: v.clone(),
                per_round: Vec::new(),
            })
            .collect()
    }

    /// The pairs with their p50 and p99 from their latencies, as `summarise` gives them.
    fn measured(pairs: &[(PairSummary, Vec<f64>)]) -> Vec<(PairSummary, Vec<f64>)> {
        pairs
            .iter()
            .map(|(p, v)| {
                let mut p = p.clone();
                p.metrics.p50_ms = Some(crate::stats::quantile_f64(&mut v.clone(), 0.5));
                p.metrics.p99_ms = Some(crate::stats::quantile_f64(&mut v.clone(), 0.99));
                (p, v.clone())
            })
            .collect()
    }

    fn run(pairs: &[(PairSummary, Vec<f64>)]) -> Vec<Finding> {
        findings(&samples(&measured(pairs)), Some("none"))
    }

    #[test]
    fn a_real_difference_holds_and_noise_is_inconclusive() {
        let f = run(&[
            (pair("none", "slow"), around(0.5)),
            (pair("json-sync", "slow"), around(800.0)),
            (pair("short1", "slow"), around(0.5)),
        ]);
        let sync = f
            .iter()
            .find(|f| f.condition == "json-sync" && f.percentile == Percentile::P99)
            .unwrap();
        assert_eq!(sync.inconclusive, None, "{sync:?}");
        assert!(sync.difference_interval_ms.0 > 600.0, "{sync:?}");
        assert!(sync.ratio_interval.0 > 1000.0, "{sync:?}");
        let short = f
            .iter()
            .find(|f| f.condition == "short1" && f.percentile == Percentile::P50)
            .unwrap();
        assert!(
            short
                .inconclusive
                .as_deref()
                .unwrap()
                .contains("includes zero"),
            "{short:?}"
        );
        assert_eq!(f.len(), 4, "two conditions against none, p50 and p99 each");
    }

    #[test]
    fn a_flagged_baseline_makes_every_comparison_inconclusive() {
        let mut none = pair("none", "fast");
        none.metrics.saturation_warning = Some("served 10 of 20".into());
        let f = run(&[
            (none, around(0.5)),
            (pair("json-sync", "fast"), around(800.0)),
        ]);
        assert!(
            f.iter()
                .all(|f| f.inconclusive.as_deref().unwrap().contains("baseline")),
            "{f:?}"
        );
    }

    /// The condition's own saturation is its cost, said in a note; a late generator
    /// counts only when its lateness at the percentile could explain the difference.
    #[test]
    fn a_late_generator_weighs_against_the_size_of_the_difference() {
        let late = |p: &mut PairSummary, p99_us: f64| {
            p.metrics.lateness_warning = Some("late".into());
            p.metrics.send_lateness = Some(Lateness {
                mean_us: 50.0,
                p50_us: Some(20.0),
                p99_us,
                // One send 40 ms late: the old rule weighed this, not the p99.
                max_us: 40_000.0,
            });
        };
        let mut sync = pair("json-sync", "slow");
        sync.metrics.saturation_warning = Some("served 16 of 20".into());
        late(&mut sync, 2_000.0);
        let mut queue = pair("json-queue", "slow");
        late(&mut queue, 1_500.0);
        let f = run(&[
            (pair("none", "slow"), around(0.5)),
            (sync, around(800.0)),
            (queue, around(2.5)),
        ]);
        let sync = f
            .iter()
            .find(|f| {
                f.condition == "json-sync"
                    && f.baseline == "none"
                    && f.percentile == Percentile::P99
            })
            .unwrap();
        assert_eq!(sync.inconclusive, None);
        // 2 ms late at p99 against an 800 ms difference: not worth a word.
        let note = sync.note.as_deref().unwrap();
        assert!(
            note.contains("saturated") && !note.contains("late"),
            "{note}"
        );
        // p99: 1.5 ms late against a 2.2 ms difference, over half of it.
        let queue_p99 = f
            .iter()
            .find(|f| f.condition == "json-queue" && f.percentile == Percentile::P99)
            .unwrap();
        assert!(
            queue_p99
                .inconclusive
                .as_deref()
                .unwrap()
                .contains("1.50 ms late at p99"),
            "{queue_p99:?}"
        );
        // p50: 0.02 ms late against a 2 ms difference: holds; 0.2 ms would be noted.
        let queue_p50 = f
            .iter()
            .find(|f| f.condition == "json-queue" && f.percentile == Percentile::P50)
            .unwrap();
        assert_eq!(queue_p50.inconclusive, None, "{queue_p50:?}");
        assert!(
            !queue_p50.note.as_deref().unwrap().contains("late"),
            "{queue_p50:?}"
        );
        // The headline comparison exists, against the queue.
        assert!(f
            .iter()
            .any(|f| f.condition == "json-sync" && f.baseline == "json-queue"));
    }

    /// A condition whose slow requests failed looks faster: inconclusive, not a win.
    /// A machine flagged saturated whose wait was not measured (results from before it
    /// was) makes every finding inconclusive, as it did then.
    #[test]
    fn missing_requests_and_an_unmeasured_busy_machine_make_a_finding_inconclusive() {
        let mut fast_by_failing = pair("short1", "fast");
        fast_by_failing.metrics.timeouts = 12;
        let f = run(&[
            (pair("none", "fast"), around(2.0)),
            (fast_by_failing, around(1.0)),
        ]);
        assert!(
            f.iter()
                .all(|f| f.inconclusive.as_deref().unwrap().contains("failed")),
            "{f:?}"
        );
        let mut busy = pair("json-sync", "slow");
        busy.metrics.machine_warning = Some("the machine was saturated".into());
        let f = run(&[(pair("none", "slow"), around(0.5)), (busy, around(800.0))]);
        assert!(
            f.iter().all(|f| f
                .inconclusive
                .as_deref()
                .unwrap()
                .contains("was not measured")),
            "{f:?}"
        );
    }

    /// A pair whose runs waited `api_ms` + 10% more (reader and generator) for a CPU;
    /// `busy` flags the machine saturated, as `machine_saturation` does.
    fn waited(condition: &str, api_ms: f64, busy: bool) -> PairSummary {
        let mut p = pair(condition, "slow");
        p.metrics.cpu_wait_ms = Some(CpuWaitMs {
            api: Some(api_ms),
            reader: Some(api_ms * 0.05),
            generator: Some(api_ms * 0.05),
        });
        if busy {
            p.metrics.machine_warning = Some("the machine was saturated (98% busy)".into());
        }
        p
    }

    /// The rule over constructed runs: on a busy machine, the measured wait at the
    /// percentile's scale against half the difference. 200 requests in one run: a
    /// p99's wait is shared by 2 requests, a p50's by 100. A quiet machine's runs wait
    /// too (40 ms in a run, for their wake-ups): that does not decide.
    #[test]
    fn the_measured_cpu_wait_decides_whether_a_busy_machine_explains_a_difference() {
        let find = |f: &[Finding], c: &str, p: Percentile| {
            f.iter()
                .find(|f| f.condition == c && f.baseline == "none" && f.percentile == p)
                .cloned()
                .unwrap()
        };
        let one_round =
            "one round: drift between runs is not in the interval (--rounds 3 measures it)";
        // Quiet machine, huge effect: holds, nothing to say.
        let quiet = run(&[
            (waited("none", 40.0, false), around(4.6)),
            (waited("json-sync", 40.0, false), around(2025.0)),
        ]);
        for p in [Percentile::P50, Percentile::P99] {
            let q = find(&quiet, "json-sync", p);
            assert_eq!(
                (q.inconclusive.as_deref(), q.note.as_deref()),
                (None, Some(one_round)),
                "{q:?}"
            );
        }
        // Busy machine (the issue's: 98% busy, the API waited 50 ms), huge effect:
        // holds, labelled.
        let busy = run(&[
            (waited("none", 50.0, true), around(4.6)),
            (waited("json-sync", 50.0, true), around(2025.0)),
        ]);
        for p in [Percentile::P50, Percentile::P99] {
            let b = find(&busy, "json-sync", p);
            assert_eq!(b.inconclusive, None, "{b:?}");
            let note = b.note.as_deref().unwrap();
            assert!(
                note.starts_with(
                    "absolute values inflated by a busy machine (the API waited 50.0 ms for a CPU; "
                ),
                "{note}"
            );
        }
        let p99 = find(&busy, "json-sync", Percentile::P99);
        assert!(
            p99.note
                .as_deref()
                .unwrap()
                .contains("27.5 ms of waiting at p99's scale, under half the difference"),
            "55 ms over the 2 requests beyond the p99 (200 × 1%): {p99:?}"
        );
        // Busy machine, small effect: inconclusive, with the numbers. p50: 0.55 ms of
        // waiting at its scale against a 0.4 ms difference.
        let small = run(&[
            (waited("none", 50.0, true), around(4.6)),
            (waited("short1", 50.0, true), around(5.0)),
        ]);
        for p in [Percentile::P50, Percentile::P99] {
            let s = find(&small, "short1", p);
            let why = s.inconclusive.as_deref().unwrap();
            assert!(
                why.starts_with("the machine was busy and the runs waited")
                    && why.contains(&format!(
                        "ms for a CPU at {}'s scale, half the difference",
                        p.as_str()
                    )),
                "{why}"
            );
        }
        // Quiet machine, small effect: the interval decides, as it did without the
        // wait: a clear shift holds, noise is inconclusive for being noise.
        let quiet_small = run(&[
            (waited("none", 40.0, false), around(4.6)),
            (waited("short1", 40.0, false), around(5.0)),
            (waited("short10", 40.0, false), around(4.6)),
        ]);
        for p in [Percentile::P50, Percentile::P99] {
            let shift = find(&quiet_small, "short1", p);
            assert_eq!(
                (shift.inconclusive.as_deref(), shift.note.as_deref()),
                (None, Some(one_round)),
                "{shift:?}"
            );
            let noise = find(&quiet_small, "short10", p);
            assert!(
                noise
                    .inconclusive
                    .as_deref()
                    .unwrap()
                    .contains("includes zero"),
                "{noise:?}"
            );
        }
    }

    #[test]
    fn without_a_baseline_only_the_headline_is_compared() {
        let pairs = measured(&[
            (pair("a", "fast"), around(1.0)),
            (pair("b", "fast"), around(2.0)),
        ]);
        assert!(findings(&samples(&pairs), None).is_empty());
        assert_eq!(
            baseline_of(None, &["a".into(), "none".into()]).as_deref(),
            Some("none")
        );
        assert_eq!(
            baseline_of(Some("a"), &["a".into(), "none".into()]).as_deref(),
            Some("a")
        );
    }

    /// Requests pooled over rounds can favour a condition that one round contradicts:
    /// the machine drifted between runs. That is inconclusive; one round says it could
    /// not look.
    #[test]
    fn rounds_that_disagree_make_a_difference_inconclusive() {
        let pairs = measured(&[
            (pair("none", "fast"), around(1.0)),
            (pair("short1", "fast"), around(1.5)),
        ]);
        let one_round = run(&pairs);
        assert!(one_round.iter().all(|f| f.inconclusive.is_none()));
        assert!(
            one_round[0].note.as_deref().unwrap().contains("one round"),
            "{:?}",
            one_round[0]
        );
        let mut s = samples(&pairs);
        s[0].per_round = vec![(0, 1.0, 1.1), (1, 1.0, 1.1)];
        s[1].per_round = vec![(0, 1.9, 2.0), (1, 0.9, 1.0)];
        let f = findings(&s, Some("none"));
        assert!(
            f.iter().all(|f| f
                .inconclusive
                .as_deref()
                .unwrap()
                .contains("rounds disagree")),
            "{f:?}"
        );
        s[1].per_round = vec![(0, 1.9, 2.0), (1, 1.2, 1.3)];
        let f = findings(&s, Some("none"));
        assert!(
            f.iter()
                .all(|f| f.inconclusive.is_none() && f.note.is_none()),
            "{f:?}"
        );
    }

    #[test]
    fn large_runs_are_thinned_evenly() {
        let v: Vec<f64> = (0..100_000).map(f64::from).collect();
        let t = thinned(&v);
        assert!(t.len() <= MAX_BOOTSTRAP_SAMPLES && t.len() >= MAX_BOOTSTRAP_SAMPLES / 2);
        assert_eq!(t[1] - t[0], 5.0);
    }
}
