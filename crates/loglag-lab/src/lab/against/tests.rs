//! The comparison's rule on constructed findings: what grows, what is noise, what a
//! busy machine leaves undecided, what is refused; no run, no clock.

use super::*;
use crate::report::CpuWaitMs;

/// The params of a saved run on this fixture's machine and settings.
fn params() -> Params {
    let s: Summary =
        serde_json::from_str(include_str!("../../../tests/fixtures/lab/summary.json")).unwrap();
    s.params
}

fn pair(condition: &str) -> PairSummary {
    serde_json::from_value(serde_json::json!({
        "condition": condition, "sink": "fast", "runs": 1, "requests": 200,
        "p50_ms": 0.5, "p99_ms": 0.8, "max_ms": 1.0, "http_errors": 0, "timeouts": 0,
        "gen_us": null, "log_call_us": null, "max_backlog_kib": null, "drain_s": 0.0,
        "rps_api": 20.0, "rps_logs_read": 20.0, "cpu_cores": null, "dropped": null,
        "queue_full": null, "verified": true,
    }))
    .unwrap()
}

/// A cost of `cost_ms` over `none` (0.5 ms) with an interval `half_ms` either side.
fn finding(condition: &str, percentile: Percentile, cost_ms: f64, half_ms: f64) -> Finding {
    let base = 0.5;
    let interval = (cost_ms - half_ms, cost_ms + half_ms);
    Finding {
        condition: condition.into(),
        baseline: "none".into(),
        sink: "fast".into(),
        percentile,
        value_ms: base + cost_ms,
        baseline_ms: base,
        difference_ms: cost_ms,
        difference_interval_ms: interval,
        ratio: (base + cost_ms) / base,
        ratio_interval: ((base + interval.0) / base, (base + interval.1) / base),
        inconclusive: (interval.0 <= 0.0).then(|| "the 95% interval includes zero".into()),
        note: None,
    }
}

/// A run of `none` and `short1` on the fast sink whose short1 costs `cost_ms` at p50
/// and at p99.
fn run_costing(cost_ms: f64, half_ms: f64) -> Summary {
    Summary {
        schema: crate::report::SCHEMA,
        params: params(),
        runs: Vec::new(),
        pairs: vec![pair("none"), pair("short1")],
        findings: [Percentile::P50, Percentile::P99]
            .map(|p| finding("short1", p, cost_ms, half_ms))
            .to_vec(),
        requests: Vec::new(),
        timeseries: Vec::new(),
    }
}

fn saved(summary: Summary) -> Saved {
    Saved {
        path: PathBuf::from("base/summary.json"),
        summary,
    }
}

#[test]
fn a_cost_ten_times_the_baseline_s_that_holds_fails_and_is_named_with_both_figures() {
    let c = compare(
        &saved(run_costing(0.3, 0.05)),
        &run_costing(3.0, 0.2),
        Vec::new(),
    )
    .unwrap();
    assert!(c.regressed());
    assert_eq!(c.rows.len(), 2);
    for r in &c.rows {
        assert_eq!(r.verdict, Verdict::Grew(None), "{r:?}");
        assert!(r.growth_interval_ms.0 > 2.0, "{r:?}");
    }
    let md = c.markdown();
    assert!(md.contains("1 cost") || md.contains("2 costs grew"), "{md}");
    assert!(
        md.contains(
            "**short1 / fast, p99**: cost over none 0.300 → 3.00 ms (+2.70, 10.0× the baseline's)"
        ),
        "{md}"
    );
    assert!(
        md.contains("| short1 | fast | p50 | 0.300 | 3.00 |"),
        "{md}"
    );
    assert!(md.contains("**grew, holds**"), "{md}");
    assert!(
        c.summary_lines()[0].contains("2 costs grew"),
        "{:?}",
        c.summary_lines()
    );
}

#[test]
fn the_same_figures_are_within_noise_and_pass() {
    let c = compare(
        &saved(run_costing(0.3, 0.05)),
        &run_costing(0.3, 0.05),
        Vec::new(),
    )
    .unwrap();
    assert!(!c.regressed());
    assert!(
        c.rows.iter().all(|r| r.verdict == Verdict::WithinNoise),
        "{c:?}"
    );
    let md = c.markdown();
    assert!(md.contains("No cost grew: 2 within noise"), "{md}");
    assert!(md.contains("| within noise |"), "{md}");
    // A cost within the noise of its own run: its growth is noise too, not a failure.
    let c = compare(
        &saved(run_costing(0.0, 0.1)),
        &run_costing(0.05, 0.1),
        Vec::new(),
    )
    .unwrap();
    assert!(!c.regressed(), "{c:?}");
}

/// The current run's machine was busy: its runs waited 400 ms for a CPU, 200 ms a
/// request at p99's scale (two requests beyond it), against a 2.7 ms growth.
#[test]
fn a_growth_a_busy_machine_could_explain_is_inconclusive_with_the_reason_and_passes() {
    let mut now = run_costing(3.0, 0.2);
    for p in &mut now.pairs {
        p.metrics.machine_warning = Some("the machine was saturated (99% busy)".into());
        p.metrics.cpu_wait_ms = Some(CpuWaitMs {
            api: Some(400.0),
            reader: Some(10.0),
            generator: Some(10.0),
        });
    }
    let c = compare(&saved(run_costing(0.3, 0.05)), &now, Vec::new()).unwrap();
    assert!(!c.regressed(), "{c:?}");
    let p99 = c
        .rows
        .iter()
        .find(|r| r.percentile == Percentile::P99)
        .unwrap();
    let Verdict::Inconclusive(why) = &p99.verdict else {
        panic!("{p99:?}")
    };
    assert!(
        why.starts_with("the machine was busy and the runs waited") && why.contains("p99's scale"),
        "{why}"
    );
    let md = c.markdown();
    assert!(md.contains("inconclusive: the machine was busy"), "{md}");
    assert!(
        c.summary_lines()[1]
            .contains("p99 inconclusive (cost 0.300 → 3.00 ms): the machine was busy"),
        "{:?}",
        c.summary_lines()
    );
    // The same growth on a quiet machine holds: the wait decided, not the figures.
    for p in &mut now.pairs {
        p.metrics.machine_warning = None;
    }
    assert!(compare(&saved(run_costing(0.3, 0.05)), &now, Vec::new())
        .unwrap()
        .regressed());
}

#[test]
fn a_late_generator_in_either_run_can_leave_a_growth_inconclusive() {
    let mut then = run_costing(0.3, 0.05);
    then.pairs[1].metrics.send_lateness = Some(crate::report::Lateness {
        mean_us: 500.0,
        p50_us: Some(400.0),
        p99_us: 5_000.0,
        max_us: 9_000.0,
    });
    let c = compare(&saved(then), &run_costing(3.0, 0.2), Vec::new()).unwrap();
    let p99 = c
        .rows
        .iter()
        .find(|r| r.percentile == Percentile::P99)
        .unwrap();
    assert!(
        matches!(&p99.verdict, Verdict::Inconclusive(why) if why.contains("5.00 ms late at p99")),
        "{p99:?}"
    );
}

#[test]
fn a_saturated_baseline_condition_in_the_saved_run_makes_every_growth_inconclusive() {
    let mut then = run_costing(0.3, 0.05);
    then.pairs[0].metrics.saturation_warning = Some("served 10 of 20".into());
    let c = compare(&saved(then), &run_costing(3.0, 0.2), Vec::new()).unwrap();
    assert!(!c.regressed());
    assert!(c.rows.iter().all(|r| matches!(&r.verdict,
        Verdict::Inconclusive(why) if why == "in the baseline run, none / fast was saturated, so its latency is queueing")), "{c:?}");
}

#[test]
fn the_growth_interval_combines_both_runs_sides_in_quadrature() {
    let mut then = finding("short1", Percentile::P50, 1.0, 0.0);
    then.difference_interval_ms = (0.8, 1.3);
    let mut now = finding("short1", Percentile::P50, 2.0, 0.0);
    now.difference_interval_ms = (1.9, 2.4);
    let (lo, hi) = growth_interval(&then, &now);
    assert!((lo - (1.0 - 0.1f64.hypot(0.3))).abs() < 1e-9, "{lo}");
    assert!((hi - (1.0 + 0.4f64.hypot(0.2))).abs() < 1e-9, "{hi}");
}

#[test]
fn a_baseline_measured_otherwise_is_refused_naming_each_difference_and_accepted_with_force() {
    let base = saved(run_costing(0.3, 0.05));
    let mut plan = base.summary.params.plan.clone();
    let machine = base.summary.params.machine.clone();
    // More rounds narrow the intervals; they do not make the runs incomparable.
    plan.rounds = 3;
    assert_eq!(
        check(&base, &plan, &machine, false).unwrap(),
        Vec::<String>::new()
    );
    plan.rate = 40.0;
    plan.app = Some("python3 api.py --port {port}".into());
    let mut other = machine.clone();
    other.cores = 4;
    let refused = check(&base, &plan, &other, false).unwrap_err();
    let words = refused.to_string();
    assert!(
        words.starts_with("--against base/summary.json: "),
        "{words}"
    );
    for d in [
        "cores: 2 in the baseline, 4 here",
        "--rate: 20.0 in the baseline, 40.0 here",
        "--app command: not set in the baseline, `python3 api.py --port {port}` here",
    ] {
        assert!(words.contains(&format!("\n  - {d}")), "{d} in {words}");
    }
    assert!(words.contains("--force"), "{words}");
    let forced = check(&base, &plan, &other, true).unwrap();
    assert_eq!(forced.len(), 3, "{forced:?}");
    let md = compare(&base, &run_costing(0.3, 0.05), forced)
        .unwrap()
        .markdown();
    assert!(
        md.contains("Compared with `--force` although:**\n\n- cores: 2 in the baseline, 4 here"),
        "{md}"
    );
}

#[test]
fn another_os_or_architecture_is_another_machine_kind_and_an_unrecorded_one_is_not_compared() {
    let base = saved(run_costing(0.3, 0.05));
    let plan = base.summary.params.plan.clone();
    let mut here = base.summary.params.machine.clone();
    here.os = "linux".into();
    here.arch = "aarch64".into();
    // The fixture predates the fields: nothing to hold it to.
    assert!(differences(&base.summary.params, &plan, &here).is_empty());
    let mut then = base.summary.params.clone();
    then.machine.os = "linux".into();
    then.machine.arch = "x86_64".into();
    assert_eq!(
        differences(&then, &plan, &here),
        ["architecture: x86_64 in the baseline, aarch64 here"]
    );
}

#[test]
fn a_run_without_a_baseline_condition_has_nothing_to_compare() {
    let base = saved(run_costing(0.3, 0.05));
    let mut plan = base.summary.params.plan.clone();
    plan.conditions = vec!["json-sync".into(), "json-queue".into()];
    plan.baseline = None;
    let e = check(&base, &plan, &base.summary.params.machine, true).unwrap_err();
    assert!(e.to_string().contains("add `none` to --conditions"), "{e}");
}

#[test]
fn a_baseline_file_missing_not_json_or_of_another_schema_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere/summary.json");
    let e = load(&missing).unwrap_err().to_string();
    assert!(
        e.contains(&missing.display().to_string()) && e.contains("not found"),
        "{e}"
    );

    let text = dir.path().join("baseline.json");
    std::fs::write(&text, "<html>not a summary</html>").unwrap();
    let e = load(&text).unwrap_err().to_string();
    assert!(
        e.contains(&text.display().to_string()) && e.contains("not JSON"),
        "{e}"
    );

    let future = dir.path().join("future.json");
    std::fs::write(&future, r#"{"schema": 99, "params": {}}"#).unwrap();
    let e = load(&future).unwrap_err().to_string();
    assert!(
        e.contains(&future.display().to_string()) && e.contains("schema 99"),
        "{e}"
    );

    // A result directory, and its summary.json by name, read as `loglag report` does.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lab");
    let by_dir = load(&fixture).unwrap();
    let by_file = load(&fixture.join("summary.json")).unwrap();
    assert_eq!(by_dir.path, by_file.path);
    assert!(
        !by_file.summary.findings.is_empty(),
        "derived from requests.csv"
    );
}
