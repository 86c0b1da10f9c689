//! Whether each hop tax holds (the hops analogue of `lab/findings.rs`): the tax (services − monolith, traced runs) at a
//! statistic is inconclusive, and says why, when the runs cannot carry it. One rule,
//! [`judge`], stated in words with its numbers by [`rule`] (the tables' caption).
//!
//! In order, the first that applies:
//! 1. **Not served at the offered rate.** Every run (both topologies, traced and
//!    untraced) of an open loop must serve [`SERVED_SHARE`] (97%) of the offered rate
//!    or more. A topology that keeps up answers each request within its latency of its
//!    due time, so it serves N ÷ (d + L) per second, L its slowest response: at the
//!    defaults (200 requests/s for 10 s, a few ms each) 99.9% and more. Under 97%, the
//!    last answers came 0.3 s or more behind a 10 s schedule (30 ms behind a 1 s one):
//!    a queue built up, and a percentile measures it, not the hop. The old check (90%)
//!    passed a monolith that served 183 of 200 requests/s with a mean of 90 ms for
//!    3 ms of work, and its negative p99 tax of −685 ms.
//!    A closed loop has no offered rate: `analyse::saturation` says when it ran
//!    saturated (a mean over 4× the work), which is inconclusive too.
//! 2. **Failed requests** are not in the percentiles: any of the monolith's, or the
//!    services' when the tax is not positive (the services may look faster only for
//!    their absence). A positive tax with failed services' requests is a lower bound.
//! 3. **A maximum** is one request: no interval can say where it lies. Never judged.
//! 4. **Noise**: the 95% bootstrap interval includes zero.
//! 5. **Interference**: the lab's own rule, `lab::interference::interference_verdict`,
//!    over the two traced runs: on a machine busy by the lab's rule (its cores 90% used
//!    or more), the CPU wait of the topology's processes and the load generator,
//!    shared among the requests the statistic rests on (all of them for the mean,
//!    the slowest 50%, 5%, 1% for p50, p95, p99; at least one), half the tax or more;
//!    or the generator's send lateness at the statistic half the tax or more. A tax
//!    that holds beside a busy machine says so.
//! 6. **Queueing at the front door**: the traced request nearest the percentile (its
//!    waterfall, p50 and p99 only) spent half the tax or more before its first span
//!    began, beyond the generator's lateness: connecting, and waiting in the kernel
//!    to be accepted and read. A hop's cost lies inside the front's span (its calls
//!    to the other services), so time before that span is not the hop's: the issue's
//!    monolith p99 of 1,234 ms had 1,224 ms outside any span.
//! 7. **Drift**: a topology's traced and untraced runs differ at the statistic by half
//!    the tax or more ([`INTERFERENCE_SHARE`]). The interval resamples requests within
//!    a run and cannot see a shared machine drifting between runs; the untraced run is
//!    a second measurement of the same topology (plus what tracing costs, a few µs), so
//!    a difference that large means either run could be off by as much. Without the
//!    untraced runs (`--no-overhead`) the drift is not measured, and a tax that holds
//!    says so.
//! 8. **A negative tax** (the services faster than the monolith) that passed all of
//!    the above: the services make the monolith's calls in sequence plus a hop each,
//!    so they cannot be faster; what made them look it lies between the runs (drift,
//!    the machine). With `--no-overhead` nothing else catches it: CI saw a mean tax
//!    of −1.2 ms, interval −1.7 to −0.8 ms, hold that way.

use crate::lab::interference::{interference_verdict, remarks_words, Interference, Wording};
use crate::report::{
    Knee, Lateness, Percentile, RunInterference, SweepPoint, TaxRow, TaxVerdict, TopologySummary,
    Waterfall,
};
use crate::stats::INTERFERENCE_SHARE;

/// The share of the offered rate every run of an open loop must serve for its tax to
/// be judged (see the module's rule 1 for why 97%).
pub const SERVED_SHARE: f64 = 0.97;

/// The statistic a tax row reports.
#[derive(Debug, Clone, Copy)]
struct Statistic {
    /// As the row names it: `mean`, `p50`, `p95`, `p99`, `max`.
    name: &'static str,
    /// The share of requests at or beyond it (the mean rests on all of them).
    beyond: f64,
    /// The nearest percentile the lab's rule knows, for its wording.
    percentile: Percentile,
    figure: fn(&TopologySummary) -> Option<f64>,
    /// The generator's lateness that could move it, µs.
    late_us: fn(&Lateness) -> f64,
}

fn statistic(at: &str) -> Option<Statistic> {
    let p99 = |l: &Lateness| l.at_us(0.99);
    Some(match at {
        "mean" => Statistic {
            name: "mean",
            beyond: 1.0,
            percentile: Percentile::P50,
            figure: |t| t.mean_ms,
            late_us: |l| l.mean_us,
        },
        "p50" => Statistic {
            name: "p50",
            beyond: 0.5,
            percentile: Percentile::P50,
            figure: |t| t.p50_ms,
            late_us: |l| l.at_us(0.5),
        },
        // The lateness of the slowest 5% is at most its p99: the larger, so the safer.
        "p95" => Statistic {
            name: "p95",
            beyond: 0.05,
            percentile: Percentile::P99,
            figure: |t| t.p95_ms,
            late_us: p99,
        },
        "p99" => Statistic {
            name: "p99",
            beyond: 0.01,
            percentile: Percentile::P99,
            figure: |t| t.p99_ms,
            late_us: p99,
        },
        "max" => Statistic {
            name: "max",
            beyond: 0.0,
            percentile: Percentile::P99,
            figure: |t| t.max_ms,
            late_us: |l| l.max_us,
        },
        _ => return None,
    })
}

/// One side of the lab's interference rule: what the machine may have added to a
/// traced run's latencies at `stat`.
fn side(t: &TopologySummary, stat: Statistic) -> Interference<'static> {
    t.interference
        .as_ref()
        .map_or_else(Interference::default, |i| measured(i, t.requests, stat))
}

/// What a run's measured interference may have added to each of the `requests` its
/// statistic `stat` rests on.
fn measured(i: &RunInterference, requests: u64, stat: Statistic) -> Interference<'static> {
    let requests_beyond = (requests as f64 * stat.beyond).max(1.0);
    Interference {
        wait_ms: i.wait_ms().map(|w| w / requests_beyond),
        api_wait_ms: i.services_wait_ms,
        late_ms: i.send_lateness.as_ref().map(|l| (stat.late_us)(l) / 1e3),
        // Each statistic's lateness is chosen for it (`Statistic::late_us`).
        late_tail: None,
        busy: i.machine_warning.is_some(),
        who: "",
    }
}

/// A sweep's knee, judged: the knee is where the topology stopped keeping up, unless
/// what was measured at its point could account for that. A knee found by its p99
/// (over 5× the p99 at the lowest rate) is weighed by the lab's interference rule,
/// the rise in p99 from the lowest rate's point in place of a difference; a knee
/// found by its throughput (under 90% of the offer served), by the generator's own
/// lateness: a generator a tenth of the point's duration late at p99 fell behind
/// itself, and sent less than was offered.
pub fn judge_knee(mut knee: Knee, points: &[SweepPoint], duration_s: f64) -> Knee {
    let Some(rate) = knee.knee_rps else {
        return knee;
    };
    let mine = |p: &&SweepPoint| p.topology == knee.topology;
    let first = points
        .iter()
        .filter(mine)
        .min_by(|a, b| a.offered_rps.total_cmp(&b.offered_rps));
    let Some(at) = points.iter().filter(mine).find(|p| p.offered_rps == rate) else {
        return knee;
    };
    let Some(i) = &at.interference else {
        return knee;
    };
    let p99 = statistic("p99").expect("p99 is a statistic");
    let served_short = at.rps < 0.9 * at.offered_rps;
    knee.inconclusive = if served_short {
        i.send_lateness
            .as_ref()
            .map(|l| l.p99_us / 1e3)
            .filter(|&late| late >= duration_s * 1e3 * 0.1)
            .map(|late| {
                format!(
                    "the generator was {} ms late at p99, a tenth of the point's {duration_s} s or more: it may have sent less than was offered",
                    ms(late)
                )
            })
    } else {
        let rise = first
            .and_then(|f| Some(at.p99_ms? - f.p99_ms?))
            .filter(|r| *r > 0.0);
        rise.and_then(|rise| {
            let side = |p: &SweepPoint| {
                p.interference
                    .as_ref()
                    .map_or_else(Interference::default, |i| {
                        measured(i, p.requests.unwrap_or(0), p99)
                    })
            };
            let base = first.map_or_else(Interference::default, side);
            let why = interference_verdict(rise, Percentile::P99, [base, side(at)]).err()?;
            Some(why.words(&Wording {
                against: "the rise in p99 from the lowest rate",
                ..wording(p99)
            }))
        })
    };
    knee
}

/// How this rule names what the lab's interference rule speaks of: the topology's
/// processes, the row's own statistic (the mean is weighed at p50's scale, p95 at
/// p99's), and the tax.
fn wording(stat: Statistic) -> Wording<'static> {
    Wording {
        processes: "the topology's processes",
        at: if stat.name == "mean" {
            "the mean"
        } else {
            stat.name
        },
        // p95's lateness is the p99's, which bounds it.
        late_aside: if stat.name == "p95" {
            " (its p99 lateness, an upper bound)"
        } else {
            ""
        },
        against: "the tax",
    }
}

fn ms(v: f64) -> String {
    crate::export::findings::three_figures(v)
}

fn run_name(t: &TopologySummary) -> String {
    format!(
        "{} ({})",
        t.topology,
        if t.traced { "traced" } else { "untraced" }
    )
}

/// What the lab measured that a tax is judged on.
#[derive(Debug)]
pub struct Evidence<'a> {
    /// Every topology run of the lab, traced and untraced.
    pub runs: &'a [TopologySummary],
    /// The traced runs' waterfalls (the request nearest p50 and p99).
    pub waterfalls: &'a [Waterfall],
    /// `analyse::saturation`'s verdict.
    pub saturation: Option<&'a str>,
}

/// Each row of `rows` with its verdict, judged on `evidence`.
pub fn judge(rows: &[TaxRow], evidence: &Evidence<'_>) -> Vec<TaxRow> {
    rows.iter()
        .map(|row| {
            let mut row = row.clone();
            row.verdict = row.tax_ms.map(|tax| match judge_one(&row, tax, evidence) {
                Ok(note) => TaxVerdict {
                    holds: true,
                    inconclusive: None,
                    note,
                },
                Err(why) => TaxVerdict {
                    holds: false,
                    inconclusive: Some(why),
                    note: None,
                },
            });
            row
        })
        .collect()
}

fn judge_one(row: &TaxRow, tax: f64, evidence: &Evidence<'_>) -> Result<Option<String>, String> {
    let (runs, saturation) = (evidence.runs, evidence.saturation);
    let Some(stat) = statistic(&row.at) else {
        return Err(format!("{} is not a statistic this rule knows", row.at));
    };
    let behind: Vec<String> = runs
        .iter()
        .filter_map(|t| {
            let offered = t.offered_rps?;
            (t.rps < SERVED_SHARE * offered).then(|| {
                format!(
                    "{} served {:.0} of {offered:.0} requests/s offered ({:.0}%)",
                    run_name(t),
                    t.rps,
                    t.rps / offered * 100.0
                )
            })
        })
        .collect();
    if !behind.is_empty() {
        return Err(format!(
            "{}, under {:.0}%: answers that far behind the schedule are a queue the load built, not the hop",
            behind.join("; "),
            SERVED_SHARE * 100.0
        ));
    }
    if let Some(s) = saturation {
        return Err(s.to_owned());
    }
    let traced = |name: &str| runs.iter().find(|t| t.topology == name && t.traced);
    let (Some(monolith), Some(services)) = (traced("monolith"), traced("services")) else {
        return Err("both traced runs are needed".to_owned());
    };
    if monolith.errors > 0 {
        return Err(format!(
            "{} of the monolith's requests failed and are not in its percentiles",
            monolith.errors
        ));
    }
    if services.errors > 0 && tax <= 0.0 {
        return Err(format!(
            "{} of the services' requests failed and are not in their percentiles: they may look faster only for their absence",
            services.errors
        ));
    }
    if stat.name == "max" {
        return Err("a maximum is one request: no interval can say where it lies".to_owned());
    }
    match row.tax_ci_ms {
        None => return Err("no interval: too few requests".to_owned()),
        Some((lo, hi)) if lo <= 0.0 && hi >= 0.0 => {
            return Err("the 95% interval includes zero: within the noise".to_owned())
        }
        Some(_) => {}
    }
    let mut notes = Vec::new();
    let sides = [side(monolith, stat), side(services, stat)];
    let wording = wording(stat);
    match interference_verdict(tax, stat.percentile, sides) {
        Err(why) => return Err(why.words(&wording)),
        Ok(remarks) => notes.extend(remarks_words(&remarks, &wording)),
    }
    for t in [monolith, services] {
        let Some(u) = evidence
            .waterfalls
            .iter()
            .find(|w| w.topology == t.topology && w.which == stat.name)
            .and_then(|w| w.uncovered.as_ref())
        else {
            continue;
        };
        let Some(before) = u.before_ms else { continue };
        let queued = before - u.send_late_ms.unwrap_or(0.0);
        if queued >= INTERFERENCE_SHARE * tax.abs() {
            return Err(format!(
                "the {} request nearest {} (traced) waited {} ms before its first span began, connecting and queueing to be accepted: half the tax ({} ms) or more, and not the hop's",
                t.topology,
                stat.name,
                ms(queued),
                ms(tax.abs())
            ));
        }
    }
    let mut measured_drift = false;
    for t in [monolith, services] {
        let Some(untraced) = runs.iter().find(|u| u.topology == t.topology && !u.traced) else {
            continue;
        };
        let (Some(a), Some(b)) = ((stat.figure)(t), (stat.figure)(untraced)) else {
            continue;
        };
        measured_drift = true;
        let drift = (a - b).abs();
        if drift >= INTERFERENCE_SHARE * tax.abs() {
            return Err(format!(
                "{}: its traced and untraced runs differ by {} ms at {}, half the tax ({} ms) or more: drift between runs could account for it",
                t.topology,
                ms(drift),
                stat.name,
                ms(tax.abs())
            ));
        }
    }
    // Last: each check above names a more particular cause.
    if tax < 0.0 {
        return Err(format!(
            "the services answered {} ms faster than the monolith at {}: they make its calls in sequence plus a hop each and cannot be faster, so something between the runs (drift, the machine) made the difference, not the hop",
            ms(-tax),
            stat.name
        ));
    }
    if !measured_drift {
        notes.push(
            "one run per topology: drift between runs not measured (the untraced runs measure it; --no-overhead skipped them)"
                .to_owned(),
        );
    }
    if services.errors > 0 {
        notes.push(format!(
            "{} of the services' requests failed and are not in their percentiles: the tax is a lower bound",
            services.errors
        ));
    }
    Ok((!notes.is_empty()).then(|| notes.join("; ")))
}

/// The rule in words, with its numbers: the caption of the tax table. `offered` and
/// `duration_s` give the rate rule's example.
pub fn rule(offered: Option<f64>, duration_s: f64) -> String {
    let share = SERVED_SHARE * 100.0;
    let half = INTERFERENCE_SHARE * 100.0;
    let rate = match offered {
        Some(r) => format!(
            "a run (either topology, traced or untraced) served under {share:.0}% of the offered rate: at {r:.0} requests/s for {duration_s} s, its last answers came {:.2} s or more behind the schedule, a queue the load built, not the hop",
            (1.0 / SERVED_SHARE - 1.0) * duration_s
        ),
        None => "the closed loop ran saturated (a mean over 4× the work: users ÷ throughput, not the hop)".to_owned(),
    };
    format!(
        "A tax holds when its 95% bootstrap interval excludes zero, it is positive, and nothing measured could account for it. It is inconclusive when {rate}; when it is negative (the services cannot be faster than one process making the same calls: the runs differ by something else); when the monolith's requests failed (or the services' did and the tax is not positive): they are not in the percentiles; when the machine was busy (its cores 90% used or more, other tenants included) and the CPU wait of the topology's processes and the load generator, shared among the requests the statistic rests on (all of them for the mean, the slowest 50%, 5%, 1% for p50, p95, p99), is {half:.0}% of the tax or more; when the generator's send lateness at the statistic is {half:.0}% of the tax or more; when the traced request nearest p50 or p99 waited {half:.0}% of the tax or more before its first span began (connecting and queueing to be accepted: not the hop, whose cost lies inside the front's span); or when a topology's traced and untraced runs differ at the statistic by {half:.0}% of the tax or more (drift between runs, which the interval over requests does not see). A tax that holds beside a busy machine says so. A maximum is one request and is never judged."
    )
}

/// The lab's rule for a busy machine (`lab::measure::machine_saturation`: its cores
/// 90% used or more, by the run's processes or by anything), in hops' words.
pub(super) fn machine_warning(
    services_cores: Option<f64>,
    generator_cores: Option<f64>,
    machine_cores: f64,
    machine_busy: Option<f64>,
) -> Option<String> {
    crate::lab::measure::machine_saturation(
        [services_cores, None, generator_cores],
        machine_cores,
        machine_busy,
    )?;
    let ours = services_cores.unwrap_or(0.0) + generator_cores.unwrap_or(0.0);
    let busy = machine_busy.unwrap_or(0.0).max(ours / machine_cores);
    Some(format!(
        "the machine was {:.0}% busy (the topology's processes used {:.2} and the load generator {:.2} of its {machine_cores:.0} cores): latencies include waiting for a core",
        (busy * 100.0).min(100.0),
        services_cores.unwrap_or(0.0),
        generator_cores.unwrap_or(0.0)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A topology run at 200 requests/s, 2000 requests, p50 `p50` ms and p99 `p99`.
    fn run(topology: &str, traced: bool, p50: f64, p99: f64) -> TopologySummary {
        TopologySummary {
            topology: topology.into(),
            traced,
            requests: 2000,
            errors: 0,
            rps: 200.0,
            mean_ms: Some(p50 * 1.05),
            p50_ms: Some(p50),
            p95_ms: Some((p50 + p99) / 2.0),
            p99_ms: Some(p99),
            max_ms: Some(p99 * 2.0),
            percentiles_ms: Vec::new(),
            offered_rps: Some(200.0),
            sent: Some(2000),
            interference: Some(quiet()),
        }
    }

    /// A quiet machine: 40 ms of wake-up waits in 10 s, sends on time to 50 µs.
    fn quiet() -> RunInterference {
        RunInterference {
            window_s: 10.0,
            services_wait_ms: Some(30.0),
            generator_wait_ms: Some(10.0),
            machine_busy: Some(0.2),
            send_lateness: Some(Lateness {
                mean_us: 10.0,
                p50_us: Some(8.0),
                p99_us: 50.0,
                max_us: 400.0,
            }),
            ..RunInterference::default()
        }
    }

    /// Two busy loops on both cores: 2 s of waiting per run, the machine 100% busy.
    fn busy(t: &mut TopologySummary) {
        let i = t.interference.as_mut().unwrap();
        i.services_wait_ms = Some(1500.0);
        i.generator_wait_ms = Some(500.0);
        i.machine_busy = Some(1.0);
        i.machine_warning = Some("the machine was 100% busy".into());
    }

    /// A tax row from the two traced runs, with an interval `ci` around it.
    fn rows(runs: &[TopologySummary], ci: f64) -> Vec<TaxRow> {
        let traced = |n: &str| runs.iter().find(|t| t.topology == n && t.traced).unwrap();
        let rows = crate::hops::analyse::tax(traced("monolith"), traced("services"));
        let rows: Vec<TaxRow> = rows
            .into_iter()
            .map(|mut r| {
                r.tax_ci_ms = (r.at != "max")
                    .then(|| r.tax_ms.map(|t| (t - ci, t + ci)))
                    .flatten();
                r
            })
            .collect();
        judge(
            &rows,
            &Evidence {
                runs,
                waterfalls: &[],
                saturation: None,
            },
        )
    }

    fn verdict<'a>(rows: &'a [TaxRow], at: &str) -> &'a TaxVerdict {
        rows.iter()
            .find(|r| r.at == at)
            .and_then(|r| r.verdict.as_ref())
            .unwrap()
    }

    fn four(m: (f64, f64), s: (f64, f64)) -> Vec<TopologySummary> {
        vec![
            run("monolith", true, m.0, m.1),
            run("services", true, s.0, s.1),
            run("monolith", false, m.0 * 1.01, m.1 * 1.02),
            run("services", false, s.0 * 0.99, s.1 * 1.01),
        ]
    }

    /// Quiet machine, a tax far beyond noise, drift and interference: it holds, with
    /// nothing to say; a maximum is never judged.
    #[test]
    fn a_huge_tax_on_a_quiet_machine_holds() {
        let r = rows(&four((3.3, 6.0), (13.3, 40.0)), 0.2);
        for at in ["mean", "p50", "p95", "p99"] {
            let v = verdict(&r, at);
            assert!(v.holds && v.note.is_none(), "{at}: {v:?}");
        }
        let max = verdict(&r, "max");
        assert!(!max.holds && max.inconclusive.as_ref().unwrap().contains("one request"));
    }

    /// Busy machine, a tax of 1000 ms beside 2 s of waiting: 2000 ÷ 20 requests = 100 ms
    /// at p99's scale, under half the tax: it holds, labelled with what the topology
    /// waited.
    #[test]
    fn a_huge_tax_on_a_busy_machine_holds_with_a_label() {
        let mut runs = four((3.3, 10.0), (900.0, 1010.0));
        runs.iter_mut().for_each(busy);
        let r = rows(&runs, 5.0);
        let v = verdict(&r, "p99");
        assert!(v.holds, "{v:?}");
        let note = v.note.as_deref().unwrap();
        assert!(
            note.contains("absolute values inflated by a busy machine"),
            "{note}"
        );
        assert!(
            note.contains("the topology's processes waited 1500 ms"),
            "{note}"
        );
        // The mean rests on every request: 2000 ms ÷ 2000, 1 ms of waiting.
        let mean = verdict(&r, "mean");
        assert!(mean.holds, "{mean:?}");
        assert!(
            mean.note
                .as_deref()
                .unwrap()
                .contains("at the mean's scale"),
            "{mean:?}"
        );
    }

    /// Busy machine, a tax of 0.6 ms at p99: 100 ms of waiting at p99's scale could
    /// account for it. At p50, the same wait spread over 1000 requests is 2 ms, still
    /// over half of a 0.6 ms tax.
    #[test]
    fn a_small_tax_on_a_busy_machine_is_inconclusive() {
        let mut runs = four((3.3, 6.0), (3.9, 6.6));
        runs.iter_mut().for_each(busy);
        let r = rows(&runs, 0.05);
        for at in ["p50", "p95", "p99"] {
            let v = verdict(&r, at);
            assert!(!v.holds, "{at}: {v:?}");
            let why = v.inconclusive.as_deref().unwrap();
            assert!(
                why.contains("the machine was busy") && why.contains(&format!("at {at}'s scale")),
                "{at}: {why}"
            );
        }
    }

    /// A closed loop at capacity: `saturation` says so and every row is inconclusive.
    #[test]
    fn a_saturated_topology_is_inconclusive() {
        let mut runs = four((3.3, 6.0), (13.3, 40.0));
        for t in &mut runs {
            t.offered_rps = None;
        }
        let traced = |n: &str| runs.iter().find(|t| t.topology == n && t.traced).unwrap();
        let rows = crate::hops::analyse::tax(traced("monolith"), traced("services"));
        let r = judge(
            &rows,
            &Evidence {
                runs: &runs,
                waterfalls: &[],
                saturation: Some("both topologies are saturated: …"),
            },
        );
        for row in &r {
            let v = row.verdict.as_ref().unwrap();
            assert_eq!(
                v.inconclusive.as_deref(),
                Some("both topologies are saturated: …")
            );
        }
    }

    /// The run: the monolith served 183 of 200 requests/s (the 90% check passed
    /// it) and its p99 was 1,234 ms, so the services looked 685 ms faster, with a
    /// tight interval. Behind its offered rate, its latency is a queue: inconclusive,
    /// and so at 95% (190 of 200).
    #[test]
    fn a_negative_tax_while_the_monolith_was_behind_is_inconclusive() {
        for served in [183.0, 190.0] {
            let mut runs = four((90.0, 1234.3), (4.0, 549.07));
            runs[0].rps = served;
            let r = rows(&runs, 50.0);
            let v = verdict(&r, "p99");
            assert!(!v.holds, "{v:?}");
            let why = v.inconclusive.as_deref().unwrap();
            assert!(
                why.starts_with(&format!(
                    "monolith (traced) served {served:.0} of 200 requests/s offered"
                )) && why.contains("under 97%"),
                "{why}"
            );
        }
        // An untraced run behind counts too.
        let mut runs = four((3.3, 6.0), (13.3, 40.0));
        runs[3].rps = 150.0;
        assert!(!verdict(&rows(&runs, 0.2), "p50").holds);
    }

    /// The p99 request: 1,234 ms, of which 1,223 ms before the monolith's span
    /// began (1 ms of it the generator's lateness), with every run served in full:
    /// the tax is queueing at the front door, not the hop. At p50, where the request
    /// nearest it was seen at once, the tax holds.
    #[test]
    fn a_tax_made_of_queueing_before_the_server_is_inconclusive() {
        let runs = four((3.3, 1234.3), (4.3, 549.07));
        let traced = |n: &str| runs.iter().find(|t| t.topology == n && t.traced).unwrap();
        let mut rows = crate::hops::analyse::tax(traced("monolith"), traced("services"));
        for r in &mut rows {
            r.tax_ci_ms = r.tax_ms.map(|t| (t - 0.1, t + 0.1));
        }
        let waterfall = |which: &str, before: f64| Waterfall {
            topology: "monolith".into(),
            which: which.into(),
            request_id: 7,
            latency_ms: 1234.3,
            trace_id: "t".into(),
            spans: Vec::new(),
            uncovered: Some(crate::report::Uncovered {
                outside_ms: before + 0.2,
                before_ms: Some(before),
                send_late_ms: Some(1.0),
                after_ms: Some(0.2),
            }),
        };
        let waterfalls = [waterfall("p50", 0.08), waterfall("p99", 1223.0)];
        let r = judge(
            &rows,
            &Evidence {
                runs: &runs,
                waterfalls: &waterfalls,
                saturation: None,
            },
        );
        let why = verdict(&r, "p99").inconclusive.clone().unwrap();
        assert!(
            why.starts_with("the monolith request nearest p99 (traced) waited 1222 ms"),
            "{why}"
        );
        assert!(verdict(&r, "p50").holds, "{:?}", verdict(&r, "p50"));
    }

    /// Traced and untraced runs of one topology far apart: the drift could be the tax.
    #[test]
    fn runs_that_drifted_are_inconclusive() {
        let mut runs = four((3.3, 6.0), (4.0, 7.0));
        runs[3].p50_ms = Some(5.3);
        let r = rows(&runs, 0.05);
        let v = verdict(&r, "p50");
        let why = v.inconclusive.as_deref().unwrap();
        assert!(
            why.starts_with("services: its traced and untraced runs differ by 1.3"),
            "{why}"
        );
        // Without the untraced runs, a tax holds and says drift was not measured.
        let r = rows(&runs[..2], 0.05);
        let v = verdict(&r, "p50");
        assert!(v.holds);
        assert!(v
            .note
            .as_deref()
            .unwrap()
            .contains("drift between runs not measured"));
    }

    /// A generator sending late by half the tax or more at the statistic: inconclusive,
    /// whatever the machine.
    #[test]
    fn a_late_generator_is_inconclusive() {
        let mut runs = four((3.3, 6.0), (4.3, 9.0));
        runs[1].interference.as_mut().unwrap().send_lateness = Some(Lateness {
            mean_us: 300.0,
            p50_us: Some(600.0),
            p99_us: 2_000.0,
            max_us: 9_000.0,
        });
        let r = rows(&runs, 0.05);
        let why = verdict(&r, "p50").inconclusive.clone().unwrap();
        assert!(why.contains("late at p50"), "{why}");
        let why = verdict(&r, "p95").inconclusive.clone().unwrap();
        assert!(why.contains("late at p95 (its p99 lateness"), "{why}");
        // Within the noise comes first.
        let r = rows(&runs, 2.0);
        let why = verdict(&r, "p50").inconclusive.clone().unwrap();
        assert!(why.contains("within the noise"), "{why}");
    }

    /// CI's run: one run per topology (`--no-overhead`), the monolith's mean 5.49 ms and
    /// the services' 4.27 ms, an interval of −1.7 to −0.8 ms. Nothing measured the drift,
    /// and a negative tax is not a hop's: inconclusive, saying why.
    #[test]
    fn a_negative_tax_is_inconclusive_even_with_a_tight_interval() {
        let runs = four((5.2, 9.0), (4.07, 8.0));
        for r in [rows(&runs[..2], 0.45), rows(&runs, 0.45)] {
            for at in ["mean", "p50", "p95", "p99"] {
                let v = verdict(&r, at);
                assert!(!v.holds, "{at}: {v:?}");
                let why = v.inconclusive.as_deref().unwrap();
                assert!(
                    why.starts_with("the services answered")
                        && why.contains("faster than the monolith"),
                    "{at}: {why}"
                );
            }
        }
        // Within the noise still comes first.
        let why = verdict(&rows(&runs[..2], 5.0), "p50")
            .inconclusive
            .clone()
            .unwrap();
        assert!(why.contains("within the noise"), "{why}");
    }

    /// The caption states the numbers the rule uses.
    #[test]
    fn the_rule_states_its_numbers() {
        let text = rule(Some(200.0), 10.0);
        for number in ["97%", "200 requests/s for 10 s", "0.31 s", "90%", "50%"] {
            assert!(text.contains(number), "{number}: {text}");
        }
        assert!(rule(None, 10.0).contains("closed loop"));
    }

    /// A machine busy with other work is flagged though the run's processes were not;
    /// a quiet one is not; the run's own processes filling the cores are.
    #[test]
    fn a_busy_machine_is_flagged_by_the_labs_rule() {
        let w = machine_warning(Some(0.1), Some(0.05), 2.0, Some(0.97)).unwrap();
        assert!(w.starts_with("the machine was 97% busy"), "{w}");
        assert!(w.contains("processes used 0.10"), "{w}");
        assert_eq!(machine_warning(Some(0.1), Some(0.05), 2.0, Some(0.3)), None);
        assert!(machine_warning(Some(1.5), Some(0.4), 2.0, Some(0.5)).is_some());
    }

    fn point(offered: f64, rps: f64, p99: f64, i: RunInterference) -> SweepPoint {
        SweepPoint {
            offered_rps: offered,
            topology: "services".into(),
            rps,
            errors: 0,
            mean_ms: Some(p99 / 2.0),
            p50_ms: Some(p99 / 2.0),
            p99_ms: Some(p99),
            requests: Some((rps * 10.0) as u64),
            interference: Some(i),
        }
    }

    fn knee_at(rate: f64) -> Knee {
        Knee {
            topology: "services".into(),
            knee_rps: Some(rate),
            capacity_rps: 1000.0,
            inconclusive: None,
        }
    }

    /// A sweep point carries what was measured around it, and a knee that the
    /// machine could account for says so: a p99 knee on a busy machine whose wait,
    /// at p99's scale, is half the rise or more; a throughput knee whose generator
    /// was a tenth of the point late. The same knee on a quiet machine holds.
    #[test]
    fn a_knee_the_machine_could_account_for_is_inconclusive_with_its_reason() {
        let mut busy_point = quiet();
        busy_point.services_wait_ms = Some(1500.0);
        busy_point.machine_warning = Some("the machine was 100% busy".into());
        // 10 s at 1000 req/s: p99 rests on 100 requests, 15.1 ms of wait each,
        // against a rise of 20 ms (3.3 -> 23.3).
        let points = [
            point(100.0, 100.0, 3.3, quiet()),
            point(1000.0, 1000.0, 23.3, busy_point.clone()),
        ];
        let k = judge_knee(knee_at(1000.0), &points, 10.0);
        let why = k.inconclusive.expect("the wait could account for the rise");
        assert!(
            why.contains("waited 15.1 ms for a CPU at p99's scale, half the rise in p99 from the lowest rate (20.0 ms) or more"),
            "{why}"
        );
        let quiet_points = [
            point(100.0, 100.0, 3.3, quiet()),
            point(1000.0, 1000.0, 23.3, quiet()),
        ];
        assert_eq!(
            judge_knee(knee_at(1000.0), &quiet_points, 10.0).inconclusive,
            None
        );
        // Served under 90%: the generator a second late at p99 of a 10 s point.
        let mut behind = quiet();
        behind.send_lateness.as_mut().unwrap().p99_us = 1_000_000.0;
        let points = [
            point(100.0, 100.0, 3.3, quiet()),
            point(1000.0, 700.0, 3.5, behind),
        ];
        let why = judge_knee(knee_at(1000.0), &points, 10.0)
            .inconclusive
            .expect("the generator fell behind");
        assert!(why.contains("1000 ms late at p99"), "{why}");
        // No knee, nothing to judge.
        let mut none = knee_at(1000.0);
        none.knee_rps = None;
        assert_eq!(judge_knee(none, &points, 10.0).inconclusive, None);
    }
}
