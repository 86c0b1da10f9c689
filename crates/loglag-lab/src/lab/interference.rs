//! The one rule for interference: whether what the machine may have added to two
//! sides' latencies (the CPU wait of their processes, the generator's lateness) could
//! account for the difference between them. Its answer is a typed value
//! ([`Disturbance`] when it could, [`Remark`]s when it could not but a reader must
//! know), and each caller words it for itself with a [`Wording`]: the lab's findings
//! and `--against` speak of the API and a percentile, `lab hops` of the topology's
//! processes and its own statistic, the sweep of a point's p99.

use crate::export::findings::three_figures;
use crate::report::{PairSummary, Percentile};
use crate::stats::{INTERFERENCE_SHARE, NOTED_SHARE};

/// What the machine may have added to one side's latencies at one percentile.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Interference<'a> {
    /// The CPU wait of the side's processes (API, reader and generator, summed over
    /// its runs) at the percentile's time scale, ms: shared among the requests at or
    /// beyond the percentile, at least one per run (a p99 of 160 requests: 1.6; a
    /// p50: 80), the most each could have been delayed had all of it fallen on them.
    /// `None`: not measured.
    pub wait_ms: Option<f64>,
    /// The API's own CPU wait, ms per run, for the label.
    pub api_wait_ms: Option<f64>,
    /// The generator's lateness at the percentile, ms (it is in every latency).
    pub late_ms: Option<f64>,
    /// The generator's lateness at p99 weighed at the percentile's scale, as the CPU
    /// wait is: `None` where the side's lateness is not known by percentile.
    pub late_tail: Option<LateTail>,
    /// The machine was flagged busy (saturated) during the side's runs.
    pub busy: bool,
    /// Whose runs these are (a condition), named in the reason; empty: unnamed.
    pub who: &'a str,
}

/// The generator's late sends at the percentile's scale: the requests beyond its
/// p99 lateness (1% of them, at least one per run) were each sent at least `p99_ms`
/// late; that delay, shared among the requests at or beyond the percentile (at least
/// one per run), is `at_scale_ms` each, the most it could move the percentile had it
/// fallen on them. At p99 it is the p99 lateness itself; at p50, a fiftieth of it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct LateTail {
    pub p99_ms: f64,
    pub at_scale_ms: f64,
}

impl Interference<'_> {
    pub(crate) fn of(p: &PairSummary, percentile: Percentile) -> Interference<'_> {
        let q = percentile.quantile();
        let runs = p.runs.max(1) as f64;
        let beyond_at = |q: f64| (p.requests as f64 * (1.0 - q)).max(runs);
        let beyond = beyond_at(q);
        let wait = p.metrics.cpu_wait_ms;
        Interference {
            wait_ms: wait.and_then(|w| w.total()).map(|w| w / beyond),
            api_wait_ms: wait.and_then(|w| w.api).map(|w| w / runs),
            late_ms: p.metrics.send_lateness.map(|l| l.at_us(q) / 1e3),
            late_tail: p.metrics.send_lateness.map(|l| {
                let p99_ms = l.p99_us / 1e3;
                LateTail {
                    p99_ms,
                    at_scale_ms: p99_ms * beyond_at(Percentile::P99.quantile()) / beyond,
                }
            }),
            busy: p.metrics.machine_warning.is_some(),
            who: &p.condition,
        }
    }
}

impl<'a> Interference<'a> {
    /// The generator's lateness weighed at the percentile's scale: the larger of its
    /// lateness at the percentile and its p99 lateness at that scale (at p99 itself,
    /// its own).
    fn late_weighed(&self, percentile: Percentile) -> Option<Late<'a>> {
        let own = self.late_ms.map(|ms| Late::At { ms, who: self.who });
        let tail = self.late_tail.map(|t| Late::Tail {
            p99_ms: t.p99_ms,
            at_scale_ms: t.at_scale_ms,
            who: self.who,
        });
        match (own, tail) {
            (Some(o), Some(t)) if t.ms() > o.ms() && percentile != Percentile::P99 => Some(t),
            (Some(o), _) => Some(o),
            (None, t) => t,
        }
    }
}

/// How late the generator was, as the rule weighed it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Late<'a> {
    /// `ms` late at the statistic itself.
    At { ms: f64, who: &'a str },
    /// `p99_ms` late at p99, which is `at_scale_ms` at the statistic's scale.
    Tail {
        p99_ms: f64,
        at_scale_ms: f64,
        who: &'a str,
    },
}

impl Late<'_> {
    /// The figure the rule compares with the difference.
    pub(crate) fn ms(&self) -> f64 {
        match *self {
            Late::At { ms, .. } => ms,
            Late::Tail { at_scale_ms, .. } => at_scale_ms,
        }
    }

    /// e.g. "23.5 ms late at p99 in json-queue: 0.470 ms at p50's scale".
    fn words(&self, w: &Wording<'_>) -> String {
        let who = |who: &str| {
            if who.is_empty() {
                String::new()
            } else {
                format!(" in {who}")
            }
        };
        match *self {
            Late::At { ms, who: name } => format!(
                "{} ms late at {}{}{}",
                three_figures(ms),
                w.at,
                w.late_aside,
                who(name)
            ),
            Late::Tail {
                p99_ms,
                at_scale_ms,
                who: name,
            } => format!(
                "{} ms late at p99{}: {} ms at {}'s scale",
                three_figures(p99_ms),
                who(name),
                three_figures(at_scale_ms),
                w.at
            ),
        }
    }
}

/// Why what the machine may have added could account for a difference: the
/// difference is inconclusive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Disturbance<'a> {
    /// The machine was busy and how long the runs waited for a CPU was not measured.
    BusyUnmeasured,
    /// The machine was busy and the runs waited `wait_ms` for a CPU at the
    /// statistic's scale, half the difference or more.
    CpuWait { wait_ms: f64, difference_ms: f64 },
    /// The generator's lateness at the statistic's scale was half the difference or
    /// more.
    GeneratorLate { late: Late<'a>, difference_ms: f64 },
}

/// What a reader must know of interference that could not account for a difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Remark<'a> {
    /// A busy machine inflated the absolute values: the processes' own wait per run
    /// (`None`: not measured) and the wait at the statistic's scale.
    Inflated {
        processes_wait_ms: Option<f64>,
        wait_ms: f64,
    },
    /// The generator was late by a tenth of the difference or more, under half.
    GeneratorLate(Late<'a>),
}

/// How a caller names what the rule speaks of.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wording<'a> {
    /// Whose CPU wait the busy-machine remark names: "the API".
    pub processes: &'a str,
    /// The statistic: "p50", "the mean".
    pub at: &'a str,
    /// Said after a lateness at the statistic when the figure is another's: for a p95,
    /// " (its p99 lateness, an upper bound)".
    pub late_aside: &'a str,
    /// What the interference is weighed against: "the difference", "the tax".
    pub against: &'a str,
}

impl Wording<'static> {
    /// The lab's findings and `--against`: the API, at the finding's percentile.
    pub(crate) fn lab(percentile: Percentile) -> Wording<'static> {
        Wording {
            processes: "the API",
            at: percentile.as_str(),
            late_aside: "",
            against: "the difference",
        }
    }
}

impl Disturbance<'_> {
    /// The reason a reader is given.
    pub(crate) fn words(&self, w: &Wording<'_>) -> String {
        match self {
            Disturbance::BusyUnmeasured => "the machine was saturated and how long the runs waited for a CPU was not measured, so their latency may be waiting for a core".to_owned(),
            Disturbance::CpuWait { wait_ms, difference_ms } => format!(
                "the machine was busy and the runs waited {} ms for a CPU at {}'s scale, half {} ({} ms) or more: that could account for it",
                three_figures(*wait_ms),
                w.at,
                w.against,
                three_figures(difference_ms.abs())
            ),
            Disturbance::GeneratorLate { late, difference_ms } => format!(
                "the generator was {}, half {} ({} ms) or more",
                late.words(w),
                w.against,
                three_figures(difference_ms.abs())
            ),
        }
    }
}

impl Remark<'_> {
    pub(crate) fn words(&self, w: &Wording<'_>) -> String {
        match self {
            Remark::Inflated {
                processes_wait_ms,
                wait_ms,
            } => {
                let own = processes_wait_ms.map_or(String::new(), |a| {
                    format!("{} waited {} ms for a CPU; ", w.processes, three_figures(a))
                });
                format!(
                    "absolute values inflated by a busy machine ({own}{} ms of waiting at {}'s scale, under half {})",
                    three_figures(*wait_ms),
                    w.at,
                    w.against
                )
            }
            Remark::GeneratorLate(late) => {
                format!(
                    "the generator was {}, under half {}",
                    late.words(w),
                    w.against
                )
            }
        }
    }
}

/// The remarks as one note, `None` when there are none.
pub(crate) fn remarks_words(remarks: &[Remark<'_>], w: &Wording<'_>) -> Option<String> {
    (!remarks.is_empty()).then(|| {
        remarks
            .iter()
            .map(|r| r.words(w))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// The rule for interference, one function: `Err` when what the machine may have
/// added to either side could account for the difference (inconclusive), else the
/// remarks a reader must know.
///
/// - On a machine flagged busy during either side's runs (its cores 90% used or more,
///   other tenants included: `machine_warning`), the CPU wait at the percentile's
///   scale ([`Interference::wait_ms`], the larger of the two sides) is
///   [`INTERFERENCE_SHARE`] (half) of the difference or more: inconclusive. Under it
///   the difference holds, remarked as inflated, with how long the processes waited.
/// - On a machine that was not, a thread waits for its wake-up, not for another
///   tenant (measured on a quiet 2-core VM: 30 to 50 ms in an 8 s run, 5 to 30 µs a
///   wake-up): the same in every run, it inflates both sides alike, and the interval
///   decides.
/// - The generator's lateness at the percentile's scale, the larger of the two sides,
///   is half of the difference or more: inconclusive; over [`NOTED_SHARE`] (a tenth)
///   of it, it is remarked. At that scale it is the larger of its lateness at the
///   percentile (p50 for a p50 finding, p99 for a p99) and its p99 lateness weighed
///   as the CPU wait is ([`LateTail`]): a generator 23.5 ms late for 1% of 160
///   requests may have put 0.47 ms on each request at or beyond the p50.
/// - Not measured (results from before the wait was), a machine flagged busy on
///   either side makes the difference inconclusive, as it did then.
pub(crate) fn interference_verdict<'a>(
    difference_ms: f64,
    percentile: Percentile,
    sides: [Interference<'a>; 2],
) -> Result<Vec<Remark<'a>>, Disturbance<'a>> {
    let allowed = difference_ms.abs() * INTERFERENCE_SHARE;
    let largest =
        |f: fn(&Interference<'_>) -> Option<f64>| sides.iter().filter_map(f).reduce(f64::max);
    let mut remarks = Vec::new();
    if sides.iter().any(|s| s.busy) {
        match largest(|s| s.wait_ms) {
            None => return Err(Disturbance::BusyUnmeasured),
            Some(wait_ms) if wait_ms >= allowed => {
                return Err(Disturbance::CpuWait {
                    wait_ms,
                    difference_ms,
                })
            }
            Some(wait_ms) => remarks.push(Remark::Inflated {
                processes_wait_ms: largest(|s| s.api_wait_ms),
                wait_ms,
            }),
        }
    }
    let late = sides
        .iter()
        .filter_map(|s| s.late_weighed(percentile))
        .reduce(|a, b| if b.ms() > a.ms() { b } else { a });
    if let Some(late) = late {
        if late.ms() >= allowed {
            return Err(Disturbance::GeneratorLate {
                late,
                difference_ms,
            });
        }
        if late.ms() >= difference_ms.abs() * NOTED_SHARE {
            remarks.push(Remark::GeneratorLate(late));
        }
    }
    Ok(remarks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(wait: f64, late: f64, busy: bool) -> Interference<'static> {
        Interference {
            wait_ms: Some(wait),
            api_wait_ms: Some(wait),
            late_ms: Some(late),
            late_tail: None,
            busy,
            who: "",
        }
    }

    /// The rule itself, at its edges: on a busy machine, half the difference is the
    /// line for the wait; for the lateness, on any machine; a tenth of it earns the
    /// lateness a remark.
    #[test]
    fn interference_under_half_the_difference_holds_and_a_tenth_is_noted() {
        let p99 = Percentile::P99;
        let w = Wording::lab(p99);
        let note = |r: Result<Vec<Remark<'_>>, Disturbance<'_>>| remarks_words(&r.unwrap(), &w);
        let quiet = side(0.01, 0.01, false);
        assert_eq!(interference_verdict(10.0, p99, [quiet, quiet]), Ok(vec![]));
        // A quiet machine's wait, however long, does not decide.
        assert_eq!(
            interference_verdict(10.0, p99, [quiet, side(50.0, 0.01, false)]),
            Ok(vec![])
        );
        assert_eq!(
            interference_verdict(10.0, p99, [quiet, side(5.0, 0.01, true)]),
            Err(Disturbance::CpuWait {
                wait_ms: 5.0,
                difference_ms: 10.0
            })
        );
        assert!(interference_verdict(-10.0, p99, [side(5.0, 0.01, true), quiet]).is_err());
        assert_eq!(
            note(interference_verdict(10.0, p99, [quiet, side(4.9, 0.01, true)])).as_deref(),
            Some("absolute values inflated by a busy machine (the API waited 4.90 ms for a CPU; 4.90 ms of waiting at p99's scale, under half the difference)")
        );
        assert!(
            interference_verdict(10.0, p99, [quiet, side(0.01, 5.0, false)])
                .unwrap_err()
                .words(&w)
                .contains("5.00 ms late at p99")
        );
        assert_eq!(
            note(interference_verdict(
                10.0,
                p99,
                [side(0.01, 2.0, false), quiet]
            ))
            .as_deref(),
            Some("the generator was 2.00 ms late at p99, under half the difference")
        );
        assert_eq!(
            interference_verdict(10.0, p99, [side(0.01, 0.9, false), quiet]),
            Ok(vec![])
        );
        let unmeasured = Interference {
            wait_ms: None,
            busy: true,
            ..Interference::default()
        };
        assert!(interference_verdict(1e6, p99, [quiet, unmeasured]).is_ok());
        assert_eq!(
            interference_verdict(1e6, p99, [unmeasured, unmeasured]),
            Err(Disturbance::BusyUnmeasured)
        );
    }

    /// One typed reason, two callers' words: the lab names the API and the
    /// percentile; a caller with its own statistic names its processes and that
    /// statistic, and says when the lateness is another statistic's.
    #[test]
    fn each_caller_words_the_same_reason_for_itself() {
        let late = Late::At {
            ms: 3.0,
            who: "json-queue",
        };
        let why = Disturbance::GeneratorLate {
            late,
            difference_ms: -4.0,
        };
        assert_eq!(
            why.words(&Wording::lab(Percentile::P50)),
            "the generator was 3.00 ms late at p50 in json-queue, half the difference (4.00 ms) or more"
        );
        let hops = Wording {
            processes: "the topology's processes",
            at: "p95",
            late_aside: " (its p99 lateness, an upper bound)",
            against: "the tax",
        };
        assert_eq!(
            why.words(&hops),
            "the generator was 3.00 ms late at p95 (its p99 lateness, an upper bound) in json-queue, half the tax (4.00 ms) or more"
        );
        let inflated = Remark::Inflated {
            processes_wait_ms: Some(1.5),
            wait_ms: 0.25,
        };
        assert_eq!(
            inflated.words(&Wording { at: "the mean", ..hops }),
            "absolute values inflated by a busy machine (the topology's processes waited 1.50 ms for a CPU; 0.250 ms of waiting at the mean's scale, under half the tax)"
        );
        let tail = Late::Tail {
            p99_ms: 23.5,
            at_scale_ms: 0.47,
            who: "",
        };
        assert_eq!(
            tail.words(&Wording::lab(Percentile::P50)),
            "23.5 ms late at p99: 0.470 ms at p50's scale"
        );
    }
}
