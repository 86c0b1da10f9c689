//! The pure half of `lab hops`: latencies and spans in, the report's figures out.

use std::collections::HashMap;

use super::trace::SpanLine;
use crate::report::{
    HopBreakdown, Knee, RunInterference, SweepPoint, TaxRow, TopologySummary, TracingCost,
    Uncovered, Waterfall, WaterfallSpan, HOP_PERCENTILES,
};
use crate::stats::{bootstrap_difference, mean, quantile, quantile_select};

/// One topology's latencies (ns, by request id) and what the run counted.
#[derive(Debug, Default)]
pub struct TopologyRun {
    pub topology: &'static str,
    pub traced: bool,
    pub latencies: Vec<(u64, u64)>,
    pub errors: u64,
    pub wall_s: f64,
    /// Requests/s offered (open loop).
    pub offered_rps: Option<f64>,
    /// Requests the generator sent: each is in `latencies` or in `errors`.
    pub sent: u64,
    /// What the machine did meanwhile.
    pub interference: Option<RunInterference>,
    /// Request id → (its due time as `CLOCK_REALTIME` ns, the spans' clock; how late
    /// the generator sent it, ns): where a waterfall places its request's send.
    pub sends: HashMap<u64, (u64, u64)>,
}

pub fn summarise(run: &TopologyRun) -> TopologySummary {
    let mut ns: Vec<u64> = run.latencies.iter().map(|&(_, l)| l).collect();
    let ms = |v: Option<u64>| v.map(|ns| ns as f64 / 1e6);
    let mut at = |p: f64| ms(quantile(&mut ns, p / 100.0));
    TopologySummary {
        topology: run.topology.to_owned(),
        traced: run.traced,
        requests: run.latencies.len() as u64,
        errors: run.errors,
        rps: run.latencies.len() as f64 / run.wall_s.max(1e-9),
        p50_ms: at(50.0),
        p95_ms: at(95.0),
        p99_ms: at(99.0),
        max_ms: at(100.0),
        percentiles_ms: HOP_PERCENTILES
            .iter()
            .filter_map(|&p| at(p).map(|v| (p, v)))
            .collect(),
        mean_ms: mean(run.latencies.iter().map(|&(_, l)| l as f64 / 1e6)),
        offered_rps: run.offered_rps,
        sent: Some(run.sent),
        interference: run.interference.clone(),
    }
}

/// Whether the traced runs measured queueing rather than the hop, in words: an open
/// loop a topology could not keep up with (under 90% of the offered rate), or a closed
/// loop whose mean latency is over 4× the work a request does (`work_ms`). Users with
/// no think time keep a topology at its capacity, where the mean is users ÷
/// throughput (Little's law), whatever the hop costs.
pub fn saturation(
    users: Option<usize>,
    rate: Option<f64>,
    work_ms: f64,
    topologies: &[TopologySummary],
) -> Option<String> {
    let traced: Vec<&TopologySummary> = topologies.iter().filter(|t| t.traced).collect();
    let saturated: Vec<String> = traced
        .iter()
        .filter_map(|t| {
            let mean = t.mean_ms?;
            let behind = rate.filter(|&r| t.rps < 0.9 * r);
            let queued = users.is_some() && mean > 4.0 * work_ms;
            match (behind, queued) {
                (Some(r), _) => Some(format!(
                    "{}: served {:.0} of {r:.0} requests/s offered",
                    t.topology, t.rps
                )),
                (None, true) => Some(format!(
                    "{}: mean {mean:.1} ms for {work_ms:.1} ms of work ({} users ÷ {:.0} requests/s = {:.1} ms)",
                    t.topology,
                    users.unwrap_or(0),
                    t.rps,
                    users.unwrap_or(0) as f64 / t.rps.max(1e-9) * 1e3
                )),
                _ => None,
            }
        })
        .collect();
    let fix =
        "run below both capacities for the hop's own cost (an open loop, --rate: the default)";
    match saturated.len() {
        0 => None,
        n if n == traced.len() => Some(format!(
            "both topologies are saturated: {}. The difference is queueing, not the hop; {fix}.",
            saturated.join("; ")
        )),
        _ => Some(format!(
            "saturated: {}. Its latency is queueing, so the tax overstates the hop; {fix}.",
            saturated.join("; ")
        )),
    }
}

/// Each topology's knee in a sweep: the lowest offered rate at which it served under
/// 90% of the offer, or its p99 rose over 5× its p99 at the lowest rate (queueing has
/// taken over); and its capacity, the most it served at any rate.
pub fn knees(points: &[SweepPoint]) -> Vec<Knee> {
    let mut topologies: Vec<&str> = Vec::new();
    for p in points {
        if !topologies.contains(&p.topology.as_str()) {
            topologies.push(&p.topology);
        }
    }
    topologies
        .into_iter()
        .map(|topology| {
            let mut mine: Vec<&SweepPoint> =
                points.iter().filter(|p| p.topology == topology).collect();
            mine.sort_by(|a, b| a.offered_rps.total_cmp(&b.offered_rps));
            let base_p99 = mine.first().and_then(|p| p.p99_ms);
            let knee_rps = mine
                .iter()
                .find(|p| {
                    p.rps < 0.9 * p.offered_rps
                        || p.p99_ms.zip(base_p99).is_some_and(|(p99, b)| p99 > 5.0 * b)
                })
                .map(|p| p.offered_rps);
            Knee {
                topology: topology.to_owned(),
                knee_rps,
                capacity_rps: mine.iter().map(|p| p.rps).fold(0.0, f64::max),
                inconclusive: None,
            }
        })
        .collect()
}

/// Reads one figure of a topology.
type Figure = fn(&TopologySummary) -> Option<f64>;

/// services − monolith at the mean and each reported percentile.
pub fn tax(monolith: &TopologySummary, services: &TopologySummary) -> Vec<TaxRow> {
    let rows: [(&str, Figure); 5] = [
        ("mean", |t| t.mean_ms),
        ("p50", |t| t.p50_ms),
        ("p95", |t| t.p95_ms),
        ("p99", |t| t.p99_ms),
        ("max", |t| t.max_ms),
    ];
    rows.iter()
        .map(|(at, f)| TaxRow {
            at: (*at).to_owned(),
            monolith_ms: f(monolith),
            services_ms: f(services),
            tax_ms: f(services).zip(f(monolith)).map(|(s, m)| s - m),
            tax_ci_ms: None,
            verdict: None,
        })
        .collect()
}

/// A run's latencies in ms.
fn latencies_ms(run: &TopologyRun) -> Vec<f64> {
    run.latencies.iter().map(|&(_, l)| l as f64 / 1e6).collect()
}

/// The statistic a tax row or a cost reports, for resampling (`max` has none: a
/// bootstrap cannot say where a maximum lies).
fn statistic(at: &str) -> Option<fn(&mut [f64]) -> f64> {
    Some(match at {
        "mean" => |s| mean(s.iter().copied()).unwrap_or(f64::NAN),
        "p50" => |s| quantile_select(s, 0.50),
        "p95" => |s| quantile_select(s, 0.95),
        "p99" => |s| quantile_select(s, 0.99),
        _ => return None,
    })
}

/// Adds to each tax row its 95% bootstrap interval over the two runs' requests.
pub fn with_intervals(
    mut rows: Vec<TaxRow>,
    monolith: &TopologyRun,
    services: &TopologyRun,
) -> Vec<TaxRow> {
    let (m, s) = (latencies_ms(monolith), latencies_ms(services));
    for row in &mut rows {
        if let Some(stat) = statistic(&row.at) {
            row.tax_ci_ms = bootstrap_difference(&m, &s, stat);
        }
    }
    rows
}

/// What collecting spans cost a topology (traced − untraced at p50 and p99), with
/// 95% bootstrap intervals. `None` if a run has no requests.
pub fn tracing_cost(traced: &TopologyRun, untraced: &TopologyRun) -> Option<TracingCost> {
    let (on, off) = (latencies_ms(traced), latencies_ms(untraced));
    let p50 = statistic("p50")?;
    let p99 = statistic("p99")?;
    Some(TracingCost {
        topology: traced.topology.to_owned(),
        p50_ms: p50(&mut on.clone()) - p50(&mut off.clone()),
        p50_ci_ms: bootstrap_difference(&off, &on, p50)?,
        p99_ms: p99(&mut on.clone()) - p99(&mut off.clone()),
        p99_ci_ms: bootstrap_difference(&off, &on, p99)?,
    })
}

/// Each hop's parts, from every client span (`kind` 3) and the server span that names
/// it as parent: connect, request, handler, response; those of the hop's median call
/// (the ceil(n/2)-th shortest, as [`quantile`] picks it), so that they add up to the
/// call time the table and the bar both show.
pub fn breakdown(spans: &[SpanLine]) -> Vec<HopBreakdown> {
    let servers: HashMap<&str, &SpanLine> = spans
        .iter()
        .filter(|s| s.kind == 2)
        .filter_map(|s| s.parent_id.as_deref().map(|p| (p, s)))
        .collect();
    // (call, [connect, request, handler, response]) in ns.
    let mut calls: HashMap<&str, Vec<(u64, [u64; 4])>> = HashMap::new();
    for client in spans.iter().filter(|s| s.kind == 3) {
        let Some(server) = servers.get(client.span_id.as_str()) else {
            continue;
        };
        let connected = client
            .events
            .iter()
            .find(|(_, n)| n == "connected")
            .map_or(client.start_unix_ns, |&(t, _)| t);
        // Each mark no earlier than the one before, so the parts add up to the call.
        let marks = [
            client.start_unix_ns,
            connected,
            server.start_unix_ns,
            server.end_unix_ns,
            client.end_unix_ns,
        ];
        let mut at = marks[0];
        let mut parts = [0; 4];
        for (part, &mark) in parts.iter_mut().zip(&marks[1..]) {
            let next = mark.clamp(at, client.end_unix_ns.max(at));
            *part = next - at;
            at = next;
        }
        calls
            .entry(client.name.as_str())
            .or_default()
            .push((parts.iter().sum(), parts));
    }
    let mut out: Vec<HopBreakdown> = calls
        .into_iter()
        .filter_map(|(hop, rows)| {
            let mut durations: Vec<u64> = rows.iter().map(|r| r.0).collect();
            let median = quantile(&mut durations, 0.5)?;
            let &(call, [connect, request, handler, response]) =
                rows.iter().find(|r| r.0 == median)?;
            let ms = |ns: u64| ns as f64 / 1e6;
            Some(HopBreakdown {
                hop: hop.to_owned(),
                samples: rows.len(),
                median_call: true,
                connect_ms: ms(connect),
                request_ms: ms(request),
                handler_ms: ms(handler),
                response_ms: ms(response),
                call_ms: ms(call),
            })
        })
        .collect();
    out.sort_by(|a, b| a.hop.cmp(&b.hop));
    out
}

/// The part of a request's latency no span covers: the latency less the union of its
/// spans' intervals; with its send's time, split into before the first span and after
/// the last.
fn uncovered(members: &[&SpanLine], latency_ns: u64, send: Option<(u64, u64)>) -> Uncovered {
    let mut intervals: Vec<(u64, u64)> = members
        .iter()
        .map(|s| (s.start_unix_ns, s.end_unix_ns.max(s.start_unix_ns)))
        .collect();
    intervals.sort_unstable();
    let mut covered = 0;
    let mut reach = 0;
    for (start, end) in intervals {
        let start = start.max(reach);
        if end > start {
            covered += end - start;
        }
        reach = reach.max(end);
    }
    let ms = |ns: i128| ns.max(0) as f64 / 1e6;
    let first = members.iter().map(|s| s.start_unix_ns).min();
    let last = members.iter().map(|s| s.end_unix_ns).max();
    let (before_ms, after_ms, send_late_ms) = match (send, first, last) {
        (Some((due, late)), Some(first), Some(last)) => (
            Some(ms(first as i128 - due as i128)),
            Some(ms((due + latency_ns) as i128 - last as i128)),
            Some(ms(late as i128)),
        ),
        _ => (None, None, None),
    };
    Uncovered {
        outside_ms: ms(latency_ns as i128 - covered as i128),
        before_ms,
        send_late_ms,
        after_ms,
    }
}

/// The waterfall of the traced request whose latency is nearest the `q` quantile.
pub fn waterfall(run: &TopologyRun, spans: &[SpanLine], which: &str, q: f64) -> Option<Waterfall> {
    // Traced requests: a root span (no parent) carries the request id.
    let roots: HashMap<u64, &SpanLine> = spans
        .iter()
        .filter(|s| s.parent_id.is_none())
        .filter_map(|s| s.request_id.map(|id| (id, s)))
        .collect();
    let mut traced: Vec<(u64, u64)> = run
        .latencies
        .iter()
        .copied()
        .filter(|(id, _)| roots.contains_key(id))
        .collect();
    let mut all: Vec<u64> = run.latencies.iter().map(|&(_, l)| l).collect();
    let target = quantile(&mut all, q)?;
    traced.sort_by_key(|&(_, l)| l.abs_diff(target));
    let &(id, latency) = traced.first()?;
    let root = roots[&id];
    let members: Vec<&SpanLine> = spans
        .iter()
        .filter(|s| s.trace_id == root.trace_id)
        .collect();
    let depth_of = |span: &SpanLine| {
        let mut depth = 0;
        let mut parent = span.parent_id.clone();
        while let Some(p) = parent {
            depth += 1;
            parent = members
                .iter()
                .find(|s| s.span_id == p)
                .and_then(|s| s.parent_id.clone());
            if depth > 16 {
                break;
            }
        }
        depth
    };
    let ms = |t: u64| (t as f64 - root.start_unix_ns as f64) / 1e6;
    let mut out: Vec<WaterfallSpan> = members
        .iter()
        .map(|s| WaterfallSpan {
            service: s.service.clone(),
            name: s.name.clone(),
            depth: depth_of(s),
            start_ms: ms(s.start_unix_ns),
            duration_ms: s.end_unix_ns.saturating_sub(s.start_unix_ns) as f64 / 1e6,
            events: s.events.iter().map(|(t, n)| (ms(*t), n.clone())).collect(),
        })
        .collect();
    out.sort_by(|a, b| {
        a.start_ms
            .total_cmp(&b.start_ms)
            .then(a.depth.cmp(&b.depth))
    });
    Some(Waterfall {
        topology: run.topology.to_owned(),
        which: which.to_owned(),
        request_id: id,
        latency_ms: latency as f64 / 1e6,
        trace_id: root.trace_id.clone(),
        spans: out,
        uncovered: Some(uncovered(&members, latency, run.sends.get(&id).copied())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology(name: &str, traced: bool, rps: f64, mean_ms: f64) -> TopologySummary {
        TopologySummary {
            topology: name.into(),
            traced,
            requests: 1000,
            errors: 0,
            rps,
            mean_ms: Some(mean_ms),
            p50_ms: Some(mean_ms),
            p95_ms: None,
            p99_ms: None,
            max_ms: None,
            percentiles_ms: Vec::new(),
            offered_rps: None,
            sent: None,
            interference: None,
        }
    }

    fn point(topology: &str, offered: f64, rps: f64, p99: f64) -> SweepPoint {
        SweepPoint {
            offered_rps: offered,
            topology: topology.into(),
            rps,
            errors: 0,
            mean_ms: Some(p99 / 2.0),
            p50_ms: Some(p99 / 2.0),
            p99_ms: Some(p99),
            requests: Some(rps as u64),
            interference: None,
        }
    }

    fn run(topology: &'static str, traced: bool, ms: impl Fn(u64) -> f64) -> TopologyRun {
        TopologyRun {
            topology,
            traced,
            latencies: (0..2000u64).map(|i| (i, (ms(i) * 1e6) as u64)).collect(),
            errors: 0,
            wall_s: 10.0,
            ..TopologyRun::default()
        }
    }

    /// A real difference gets an interval that excludes zero; the same distribution
    /// twice gets one that includes it, which the report calls inconclusive.
    #[test]
    fn tax_and_tracing_cost_carry_intervals_that_tell_signal_from_noise() {
        let jitter = |i: u64| ((i * 7919) % 100) as f64 / 100.0;
        let monolith = run("monolith", true, |i| 3.0 + jitter(i));
        let services = run("services", true, |i| 3.25 + jitter(i * 13));
        let rows = with_intervals(
            tax(&summarise(&monolith), &summarise(&services)),
            &monolith,
            &services,
        );
        let p50 = rows.iter().find(|r| r.at == "p50").unwrap();
        let (lo, hi) = p50.tax_ci_ms.unwrap();
        assert!(lo > 0.1 && hi < 0.4, "[{lo}, {hi}]");
        assert_eq!(rows.iter().find(|r| r.at == "max").unwrap().tax_ci_ms, None);
        let untraced = run("monolith", false, |i| 3.0 + jitter(i * 17));
        let cost = tracing_cost(&monolith, &untraced).unwrap();
        assert!(
            cost.p50_ci_ms.0 <= 0.0 && cost.p50_ci_ms.1 >= 0.0,
            "the same distribution: {cost:?}"
        );
    }

    /// The knee is where a topology stops keeping up: served under 90% of the offer,
    /// or a p99 that left its unloaded value far behind; a topology that kept up has
    /// none, and capacity is the most it ever served.
    #[test]
    fn knees_are_where_each_topology_stops_keeping_up() {
        let points = [
            point("monolith", 100.0, 100.0, 3.3),
            point("services", 100.0, 100.0, 3.6),
            point("monolith", 1000.0, 1000.0, 3.6),
            point("services", 1000.0, 990.0, 30.0),
            point("monolith", 5000.0, 4990.0, 5.0),
            point("services", 5000.0, 2100.0, 900.0),
        ];
        let k = knees(&points);
        assert_eq!(k.len(), 2);
        assert_eq!((k[0].topology.as_str(), k[0].knee_rps), ("monolith", None));
        assert_eq!(k[0].capacity_rps, 4990.0);
        assert_eq!(
            (k[1].topology.as_str(), k[1].knee_rps, k[1].capacity_rps),
            ("services", Some(1000.0), 2100.0)
        );
    }

    /// The lab's 500 users with no think time: both topologies at capacity, the means
    /// are users ÷ throughput, and the verdict says so. Below capacity (an open loop
    /// served in full, or a closed loop near the work time) there is nothing to say;
    /// one topology falling behind an open loop is named alone.
    #[test]
    fn saturation_is_named_and_an_unsaturated_run_is_not() {
        let saturated = [
            topology("monolith", true, 27937.0, 17.9),
            topology("services", true, 13169.0, 38.1),
            topology("services", false, 100.0, 300.0),
        ];
        let note = saturation(Some(500), None, 3.0, &saturated).unwrap();
        assert!(note.starts_with("both topologies are saturated"), "{note}");
        assert!(note.contains("queueing, not the hop"), "{note}");
        assert!(
            note.contains("500 users ÷ 13169 requests/s = 38.0 ms"),
            "{note}"
        );
        let calm = [
            topology("monolith", true, 200.0, 3.2),
            topology("services", true, 199.0, 3.4),
        ];
        assert_eq!(saturation(None, Some(200.0), 3.0, &calm), None);
        assert_eq!(saturation(Some(5), None, 3.0, &calm), None);
        let behind = [
            topology("monolith", true, 5000.0, 3.2),
            topology("services", true, 3100.0, 90.0),
        ];
        let note = saturation(None, Some(5000.0), 3.0, &behind).unwrap();
        assert!(
            note.starts_with("saturated: services: served 3100 of 5000"),
            "{note}"
        );
    }

    fn span(
        name: &str,
        kind: u8,
        id: &str,
        parent: Option<&str>,
        start: u64,
        end: u64,
    ) -> SpanLine {
        SpanLine {
            service: if kind == 2 && parent.is_some() {
                name.into()
            } else {
                "order".into()
            },
            name: name.into(),
            trace_id: "t".into(),
            span_id: id.into(),
            parent_id: parent.map(str::to_owned),
            kind,
            start_unix_ns: start,
            end_unix_ns: end,
            request_id: Some(7),
            events: Vec::new(),
        }
    }

    #[test]
    fn a_hop_splits_into_connect_request_handler_response() {
        const MS: u64 = 1_000_000;
        let mut client = span("payment", 3, "c1", Some("root"), 10 * MS, 20 * MS);
        client.events.push((11 * MS, "connected".into()));
        let spans = vec![
            span("POST /buy", 2, "root", None, 0, 30 * MS),
            client,
            span("payment", 2, "s1", Some("c1"), 13 * MS, 17 * MS),
        ];
        let b = breakdown(&spans);
        assert_eq!(b.len(), 1);
        let h = &b[0];
        assert_eq!(
            (
                h.connect_ms,
                h.request_ms,
                h.handler_ms,
                h.response_ms,
                h.call_ms
            ),
            (1.0, 2.0, 4.0, 3.0, 10.0)
        );
        let run = TopologyRun {
            topology: "services",
            traced: true,
            latencies: vec![(7, 30 * MS), (8, 5 * MS), (9, 100 * MS)],
            errors: 0,
            wall_s: 1.0,
            ..TopologyRun::default()
        };
        let w = waterfall(&run, &spans, "p50", 0.5).unwrap();
        assert_eq!(w.request_id, 7, "the only traced request");
        assert_eq!(w.spans.len(), 3);
        assert_eq!(w.spans[0].depth, 0);
        assert_eq!(w.spans.iter().map(|s| s.depth).max(), Some(2));
        let s = summarise(&run);
        assert_eq!(s.p50_ms, Some(30.0));
        let t = tax(
            &summarise(&TopologyRun {
                latencies: vec![(1, 10 * MS)],
                ..run
            }),
            &s,
        );
        assert_eq!(t[1].tax_ms, Some(20.0));
    }

    /// The bar and the table show one statistic: the median call, split into its own
    /// parts, which add up to it (the medians of the parts, each on its own, did not:
    /// 1.40 ms of parts beside a 1.537 ms median call).
    #[test]
    fn a_hop_breakdown_is_its_median_call_and_its_parts_add_up() {
        const US: u64 = 1_000;
        let mut spans = Vec::new();
        // Three payment calls of 1000, 1500 and 2000 µs, parts skewed differently.
        for (i, (connect, request, handler, response)) in [
            (100, 100, 700, 100),
            (50, 600, 800, 50),
            (300, 300, 1100, 300),
        ]
        .into_iter()
        .enumerate()
        {
            let t0 = 10_000 * US * i as u64;
            let (c, s) = (format!("c{i}"), format!("s{i}"));
            let start = t0 + (connect + request) * US;
            let mut client = span("payment", 3, &c, Some("root"), t0, 0);
            client.end_unix_ns = start + (handler + response) * US;
            client.events.push((t0 + connect * US, "connected".into()));
            spans.push(client);
            spans.push(span(
                "payment",
                2,
                &s,
                Some(&c),
                start,
                start + handler * US,
            ));
        }
        let b = &breakdown(&spans)[0];
        assert!(b.median_call);
        assert_eq!(
            (b.samples, b.call_ms),
            (3, 1.5),
            "the median of 1.0, 1.5, 2.0"
        );
        assert_eq!(
            (b.connect_ms, b.request_ms, b.handler_ms, b.response_ms),
            (0.05, 0.6, 0.8, 0.05),
            "the median call's own parts"
        );
        let parts = b.connect_ms + b.request_ms + b.handler_ms + b.response_ms;
        assert!((parts - b.call_ms).abs() < 1e-9, "{parts} vs {}", b.call_ms);
    }

    /// A 1,234 ms request whose spans cover 10 ms: the waterfall says that 1,224 ms lie
    /// outside any span, and where (before its first span, the generator's lateness
    /// part of it, and after its last).
    #[test]
    fn a_waterfall_says_how_much_of_the_request_no_span_covers() {
        const MS: u64 = 1_000_000;
        let t = 5_000 * MS;
        // Two overlapping spans and one inside: their union is 10 ms.
        let spans = vec![
            span("GET /buy", 2, "root", None, t, t + 8 * MS),
            span("payment", 3, "c", Some("root"), t + 2 * MS, t + 10 * MS),
            span("payment", 2, "s", Some("c"), t + 3 * MS, t + 4 * MS),
        ];
        let due = t - 1_223 * MS;
        let run = TopologyRun {
            topology: "monolith",
            traced: true,
            latencies: vec![(7, 1_234 * MS)],
            sends: [(7, (due, 2 * MS))].into_iter().collect(),
            ..TopologyRun::default()
        };
        let u = waterfall(&run, &spans, "p99", 0.99)
            .unwrap()
            .uncovered
            .unwrap();
        assert_eq!(u.outside_ms, 1_224.0);
        assert_eq!(
            (u.before_ms, u.send_late_ms, u.after_ms),
            (Some(1_223.0), Some(2.0), Some(1.0))
        );
        // Without the send's time, only the total is known.
        let run = TopologyRun {
            sends: HashMap::new(),
            ..run
        };
        let u = waterfall(&run, &spans, "p99", 0.99)
            .unwrap()
            .uncovered
            .unwrap();
        assert_eq!((u.outside_ms, u.before_ms), (1_224.0, None));
    }
}
