//! `loglag lab hops` (reference 004): the defaults, the sweep, traces, and network namespaces.
//! Short runs; assertions are on mechanisms, not on timing constants.
// The lab and torture run where unix does; elsewhere they say what they need
// (commands/linux_only.rs).
#![cfg(unix)]

use crate::support;
use support::*;

/// The accounting of a topology run and its measured interference, which hold on any
/// machine: every request sent is answered or counted as an error, the run's offered
/// rate and what the machine did meanwhile are recorded.
fn assert_accounted(t: &Value, offered: f64, sent: u64) {
    assert_eq!(t["offered_rps"], offered, "{t}");
    assert_eq!(t["sent"], sent, "{t}");
    assert_eq!(
        t["requests"].as_u64().unwrap() + t["errors"].as_u64().unwrap(),
        sent,
        "every request answered or counted as an error: {t}"
    );
    let i = &t["interference"];
    assert!(i["window_s"].as_f64().unwrap() > 0.0, "{t}");
    let busy = i["machine_busy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&busy), "{t}");
    if busy >= 0.9 {
        assert!(
            i.get("machine_warning").is_some(),
            "flagged by the lab's rule when 90% busy or more: {t}"
        );
    }
    for f in ["services_wait_ms", "generator_wait_ms"] {
        assert!(i[f].as_f64().is_none_or(|w| w >= 0.0), "{f}: {t}");
    }
    let late = &i["send_lateness"];
    assert!(
        late["p99_us"].as_f64().unwrap() <= late["max_us"].as_f64().unwrap(),
        "{t}"
    );
}

/// `dir`'s manifest names it a `lab hops` result and lists its files, every one there.
fn assert_hops_manifest(dir: &std::path::Path) {
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["kind"], "hops", "{m}");
    assert_eq!(m["summary"], "summary.json", "{m}");
    let files: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for f in ["summary.json", "hops.md", "report.html"] {
        assert!(files.contains(&f) && dir.join(f).is_file(), "{f}: {m}");
    }
}

/// Each judged tax row's verdict agrees with the figures it was judged on: it holds
/// only when every run was served at 97% of the offered rate, its interval excludes
/// zero, and (on a busy machine) it says so; a maximum never holds; and no negative
/// tax holds (sequential calls cannot make the services faster than one process).
fn assert_verdicts_consistent(hops: &Value) {
    let topologies = hops["topologies"].as_array().unwrap();
    let all_served = topologies
        .iter()
        .all(|t| t["rps"].as_f64().unwrap() >= 0.97 * t["offered_rps"].as_f64().unwrap_or(0.0));
    // The tax is the traced runs': their machine is the one a verdict speaks of.
    let busy = topologies
        .iter()
        .filter(|t| t["traced"] == true)
        .any(|t| t["interference"].get("machine_warning").is_some());
    let rule = hops["tax_rule"].as_str().unwrap();
    assert!(rule.contains("97%") && rule.contains("50%"), "{rule}");
    for row in hops["tax"].as_array().unwrap() {
        let v = &row["verdict"];
        let holds = v["holds"].as_bool().unwrap();
        assert_eq!(holds, v.get("inconclusive").is_none(), "{row}");
        if row["at"] == "max" {
            assert!(!holds, "{row}");
        }
        if !holds {
            continue;
        }
        assert!(all_served, "holds though a run was behind its rate: {row}");
        let (lo, hi) = (
            row["tax_ci_ms"][0].as_f64().unwrap(),
            row["tax_ci_ms"][1].as_f64().unwrap(),
        );
        assert!(lo > 0.0 || hi < 0.0, "{row}");
        assert!(
            row["tax_ms"].as_f64().unwrap() > 0.0,
            "a negative tax held: {row}"
        );
        if busy {
            assert!(
                v["note"].as_str().unwrap().contains("busy machine"),
                "{row}"
            );
        }
    }
}

/// `lab hops` on its defaults is the reference's unsaturated service: an open loop,
/// new connections; every request is accounted for, what the machine did is measured,
/// and each tax row is judged by it. `--sweep` adds both topologies at each offered
/// rate, their knees, and the chart.
#[test]
fn lab_hops_defaults_are_unsaturated_and_the_sweep_reports_each_topology() {
    within(
        "lab_hops_defaults_are_unsaturated_and_the_sweep_reports_each_topology",
        || {
            let dir = tempfile::tempdir().unwrap();
            let out = loglag()
                .args(["lab", "hops", "--duration", "1s", "--no-overhead"])
                .args([
                    "--sweep",
                    "--sweep-rates",
                    "100,50",
                    "--sweep-duration",
                    "1s",
                ])
                .args(["--report", "--out"])
                .arg(dir.path())
                .output()
                .unwrap();
            assert_success(&out);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("open loop at 200 requests/s (the default"),
                "{stderr}"
            );
            assert!(
                stderr.contains("a new connection per outgoing call"),
                "{stderr}"
            );
            let hops = &summary(dir.path())["hops"];
            assert_eq!(hops["params"]["rate"], 200.0);
            assert_eq!(hops["params"]["connection"], "new");
            let topologies = hops["topologies"].as_array().unwrap();
            assert_eq!(topologies.len(), 2, "--no-overhead: the traced runs");
            for t in topologies {
                assert_accounted(t, 200.0, 200);
            }
            assert_eq!(hops["tax"].as_array().unwrap().len(), 5);
            assert_verdicts_consistent(hops);
            let md = String::from_utf8_lossy(&out.stdout);
            assert!(
                md.contains("| verdict |") && md.contains("A tax holds when"),
                "{md}"
            );
            // The answer first: the tax at p50 and p99 with their verdicts, and each
            // topology's knee, within 12 lines of 80 columns.
            let headline = headline_of(&md);
            assert_eq!(
                headline.first().copied(),
                Some("the hop (three services against one process, same work):"),
                "{md}"
            );
            assert!(headline.len() <= 12, "{md}");
            assert!(headline.iter().all(|l| l.chars().count() <= 80), "{md}");
            for at in ["p50", "p99"] {
                let verdict = &hops["tax"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["at"] == at)
                    .unwrap()["verdict"];
                let line = headline
                    .iter()
                    .find(|l| l.starts_with(&format!("  {at}: ")))
                    .unwrap_or_else(|| panic!("no {at} line: {md}"));
                let holds = verdict["holds"].as_bool().unwrap();
                assert_eq!(line.ends_with("— holds"), holds, "{line} / {verdict}");
            }
            let said = headline_text(&md);
            for topology in ["monolith", "services"] {
                assert!(said.contains(&format!("{topology} ")), "{said}");
            }
            let sweep = &hops["sweep"];
            let points = sweep["points"].as_array().unwrap();
            let offered: Vec<(f64, &str)> = points
                .iter()
                .map(|p| {
                    (
                        p["offered_rps"].as_f64().unwrap(),
                        p["topology"].as_str().unwrap(),
                    )
                })
                .collect();
            assert_eq!(
                offered,
                [
                    (50.0, "monolith"),
                    (50.0, "services"),
                    (100.0, "monolith"),
                    (100.0, "services")
                ],
                "rates in order, both topologies each"
            );
            for p in points {
                assert!(p["rps"].as_f64().unwrap() > 0.0, "{p}");
                assert!(p["p99_ms"].as_f64().unwrap() > 0.0, "{p}");
                // Each point carries what the machine may have added to it.
                let i = &p["interference"];
                assert!(i["window_s"].as_f64().unwrap() > 0.0, "{p}");
                assert!(i["send_lateness"]["p99_us"].as_f64().is_some(), "{p}");
                assert!(p["requests"].as_u64().unwrap() > 0, "{p}");
            }
            assert_eq!(sweep["knees"].as_array().unwrap().len(), 2);
            let md = std::fs::read_to_string(dir.path().join("hops.md")).unwrap();
            assert!(md.contains("**Sweep**") && md.contains("| 100 |"), "{md}");
            assert_hops_manifest(dir.path());
            let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
            assert!(
                html.contains("Latency against load"),
                "the sweep has its chart"
            );
            assert!(
                html.contains("A tax holds when") && html.contains("<th class=\"l\">verdict</th>")
            );
        },
    )
}

/// Reference 004 on loopback: a short run completes, the service boundary costs
/// latency, the bodies match, and the spans form correct traces in one OTLP/JSON file.
#[test]
fn lab_hops_measures_the_boundary_and_writes_connected_traces() {
    within(
        "lab_hops_measures_the_boundary_and_writes_connected_traces",
        || {
            let dir = tempfile::tempdir().unwrap();
            let out = loglag()
                .args(["lab", "hops", "--users", "20", "--duration", "2s"])
                .args(["--trace-every", "5", "--no-overhead", "--report", "--out"])
                .arg(dir.path())
                .output()
                .unwrap();
            assert_success(&out);
            let s = summary(dir.path());
            let hops = &s["hops"];
            let topology = |name: &str| {
                hops["topologies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["topology"] == name && t["traced"] == true)
                    .unwrap_or_else(|| panic!("no {name} in {hops}"))
                    .clone()
            };
            let (m, sv) = (topology("monolith"), topology("services"));
            for t in [&m, &sv] {
                assert_eq!(t["errors"], 0, "{t}");
                for f in ["p50_ms", "p95_ms", "p99_ms", "mean_ms"] {
                    assert!(t[f].as_f64().unwrap() > 0.0, "{f}: {t}");
                }
            }
            // A closed loop: nothing offered, no lateness; each tax judged all the same.
            for t in [&m, &sv] {
                assert_eq!(t.get("offered_rps"), None, "{t}");
                assert_eq!(t["interference"].get("send_lateness"), None, "{t}");
                assert_eq!(
                    t["sent"].as_u64().unwrap(),
                    t["requests"].as_u64().unwrap(),
                    "{t}"
                );
            }
            for row in hops["tax"].as_array().unwrap() {
                let v = &row["verdict"];
                assert_eq!(
                    v["holds"].as_bool().unwrap(),
                    v.get("inconclusive").is_none()
                );
                if v["holds"] == true {
                    assert!(
                        row["tax_ms"].as_f64().unwrap() > 0.0,
                        "a negative tax held: {row}"
                    );
                }
            }
            assert!(hops["identical_body_bytes"].as_u64().unwrap() > 3 * 256);
            assert_eq!(hops["tax"][1]["at"], "p50");
            assert_eq!(hops["spans_file"], "spans.otlp.json");

            // The spans: one OTLP/JSON document, a resource per service.
            let doc: Value = serde_json::from_str(
                &std::fs::read_to_string(dir.path().join("spans.otlp.json")).unwrap(),
            )
            .unwrap();
            let mut spans = Vec::new();
            let mut services = Vec::new();
            for rs in doc["resourceSpans"].as_array().unwrap() {
                let attr = &rs["resource"]["attributes"][0];
                assert_eq!(attr["key"], "service.name");
                let service = attr["value"]["stringValue"].as_str().unwrap().to_owned();
                services.push(service.clone());
                for ss in rs["scopeSpans"].as_array().unwrap() {
                    for span in ss["spans"].as_array().unwrap() {
                        spans.push((service.clone(), span.clone()));
                    }
                }
            }
            services.sort();
            assert_eq!(services, ["inventory", "monolith", "order", "payment"]);
            let hex = |v: &Value, len: usize| {
                let s = v.as_str().unwrap();
                s.len() == len
                    && s.chars()
                        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            };
            let by_id: std::collections::HashMap<String, &Value> = spans
                .iter()
                .map(|(_, s)| (s["spanId"].as_str().unwrap().to_owned(), s))
                .collect();
            let mut remote_children = 0;
            for (service, span) in &spans {
                assert!(
                    hex(&span["traceId"], 32) && hex(&span["spanId"], 16),
                    "{span}"
                );
                let start: u64 = span["startTimeUnixNano"].as_str().unwrap().parse().unwrap();
                let end: u64 = span["endTimeUnixNano"].as_str().unwrap().parse().unwrap();
                assert!(start > 1_600_000_000_000_000_000 && end >= start, "{span}");
                if let Some(parent) = span.get("parentSpanId") {
                    let parent = by_id
                        .get(parent.as_str().unwrap())
                        .unwrap_or_else(|| panic!("{service}'s parent is missing: {span}"));
                    assert_eq!(
                        parent["traceId"], span["traceId"],
                        "a child shares its trace"
                    );
                    if service == "payment" || service == "inventory" {
                        // The callee's server span hangs under order's client span.
                        assert_eq!(parent["kind"], 3, "{parent}");
                        assert_eq!(span["kind"], 2);
                        remote_children += 1;
                    }
                } else {
                    assert!(service == "order" || service == "monolith", "{span}");
                }
            }
            assert!(
                remote_children > 0,
                "traceparent crossed the process boundary"
            );
            let breakdown = hops["breakdown"].as_array().unwrap();
            assert_eq!(breakdown.len(), 2, "{hops}");
            for b in breakdown {
                // The median call's own parts: they add up to the call the bar shows.
                assert_eq!(b["median_call"], true);
                let parts: f64 = ["connect_ms", "request_ms", "handler_ms", "response_ms"]
                    .iter()
                    .map(|p| b[p].as_f64().unwrap())
                    .sum();
                assert!((parts - b["call_ms"].as_f64().unwrap()).abs() < 1e-6, "{b}");
            }
            let waterfalls = hops["waterfalls"].as_array().unwrap();
            assert_eq!(waterfalls.len(), 4);
            for w in waterfalls {
                // Spans cover at most the request's latency; what they do not is said.
                let u = &w["uncovered"];
                let outside = u["outside_ms"].as_f64().unwrap();
                assert!(
                    (0.0..=w["latency_ms"].as_f64().unwrap()).contains(&outside),
                    "{w}"
                );
            }
            let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
            assert!(page.contains("Waterfalls") && page.contains("<svg"));
            assert!(
                page.contains("ms outside any span"),
                "the waterfalls say it"
            );
        },
    )
}

/// Ctrl-C once the first topology has finished: the lab stops the second, writes what
/// finished (the tables, summary.json, report.html, the spans) with a note saying what
/// is missing, says so, exits 130, and leaves no process or scratch directory.
#[test]
fn ctrl_c_during_lab_hops_writes_what_finished() {
    within("ctrl_c_during_lab_hops_writes_what_finished", || {
        use std::io::{BufRead, BufReader, Read};
        let dir = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let mut child = loglag()
            .args(["lab", "hops", "--duration", "2s", "--report", "--out"])
            .arg(dir.path())
            .env("TMPDIR", tmp.path())
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        let mut line = String::new();
        // The first topology is done once the second has started.
        while !line.contains("run 2/4") {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "ended early: {seen}"
            );
            seen.push_str(&line);
        }
        assert!(seen.contains("monolith (traced): p50"), "{seen}");
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).unwrap();
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{rest}");
        assert!(
            rest.contains("the completed runs are reported") && rest.contains("interrupted"),
            "{rest}"
        );
        let hops = summary(dir.path())["hops"].clone();
        let topologies = hops["topologies"].as_array().unwrap();
        let done = topologies.len();
        assert!((1..4).contains(&done), "{hops}");
        assert_eq!(topologies[0]["topology"], "monolith");
        assert_eq!(topologies[0]["traced"], true);
        assert_accounted(&topologies[0], 200.0, 400);
        let note = hops["interrupted"].as_str().unwrap();
        assert!(
            note.starts_with(&format!("interrupted (Ctrl-C) after {done} of 4 runs")),
            "{note}"
        );
        assert!(stdout.contains("**Incomplete**") && stdout.contains("| monolith | yes |"));
        let md = std::fs::read_to_string(dir.path().join("hops.md")).unwrap();
        assert_eq!(md, stdout, "the same tables on stdout and in hops.md");
        let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
        assert!(
            html.contains("Incomplete: interrupted (Ctrl-C)"),
            "report.html says so"
        );
        assert!(dir.path().join("spans.otlp.json").is_file());
        assert_hops_manifest(dir.path());
        assert_nothing_left(tmp.path(), "after Ctrl-C in lab hops");
    })
}

/// `--netns`: each service in its own namespace, hops over veth pairs; the namespaces
/// are gone after a run, and those of a lab killed with SIGKILL are removed by the next.
#[test]
fn lab_hops_netns_runs_across_namespaces_and_leaves_none_behind() {
    within(
        "lab_hops_netns_runs_across_namespaces_and_leaves_none_behind",
        || {
            // SAFETY: geteuid has no preconditions.
            let root = unsafe { libc::geteuid() } == 0;
            let has_ip = std::process::Command::new("ip").arg("-V").output().is_ok();
            if !(root && has_ip) {
                assert!(
                    std::env::var_os("LOGLAG_REQUIRE_NETNS").is_none(),
                    "LOGLAG_REQUIRE_NETNS is set but this is not root with iproute2"
                );
                skip_note!("SKIPPED: --netns needs root and iproute2");
                return;
            }
            let dir = tempfile::tempdir().unwrap();
            let child = loglag()
                .args(["lab", "hops", "--netns", "--users", "5", "--duration", "1s"])
                .args(["--no-overhead", "--out"])
                .arg(dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let s = summary(dir.path());
            assert_eq!(s["hops"]["params"]["netns"], true);
            assert_eq!(s["hops"]["topologies"][1]["errors"], 0, "{s}");
            assert!(s["hops"]["breakdown"].as_array().unwrap().len() == 2);
            assert_eq!(namespaces_of(pid), Vec::<String>::new());

            // Killed mid-run: its namespaces and scratch directory stay until the next
            // lab removes them.
            let tmp = tempfile::tempdir().unwrap();
            let mut killed = loglag()
                .env("TMPDIR", tmp.path())
                .args([
                    "lab",
                    "hops",
                    "--netns",
                    "--users",
                    "5",
                    "--duration",
                    "60s",
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let killed_pid = killed.id();
            // Waiting for another process to create something: polling is all there is.
            while namespaces_of(killed_pid).is_empty() {
                assert!(killed.try_wait().unwrap().is_none(), "the lab ended early");
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            killed.kill().unwrap();
            killed.wait().unwrap();
            assert!(!namespaces_of(killed_pid).is_empty());
            // A kill between `ip link add` and moving an end into its namespace leaves
            // a veth pair in the root namespace: plant one for a lab pid that is not
            // running.
            let running = |n: u32| {
                std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
                    p.file_name()
                        .to_str()
                        .and_then(|s| s.parse::<u32>().ok())
                        .is_some_and(|pid| pid % 100_000 == n)
                })
            };
            let dead = (90_000..100_000).find(|&n| !running(n)).unwrap();
            let veth = format!("lh{dead}r0a");
            let planted = std::process::Command::new("ip")
                .args(["link", "add", &veth, "type", "veth", "peer", "name"])
                .arg(format!("lh{dead}r0b"))
                .status()
                .unwrap();
            assert!(planted.success());
            let out = loglag()
                .env("TMPDIR", tmp.path())
                .args([
                    "lab",
                    "hops",
                    "--netns",
                    "--users",
                    "2",
                    "--duration",
                    "200ms",
                ])
                .arg("--no-overhead")
                .output()
                .unwrap();
            assert_success(&out);
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("left by an earlier lab"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(namespaces_of(killed_pid), Vec::<String>::new());
            let left = std::process::Command::new("ip")
                .args(["link", "show", &veth])
                .output()
                .unwrap();
            assert!(!left.status.success(), "the stale veth pair {veth} is gone");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("veth pair(s)"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("1 scratch directory(ies)"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_nothing_left(tmp.path(), "after the lab that followed a killed one");
        },
    )
}
