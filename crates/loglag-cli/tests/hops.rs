//! `loglag lab hops` (reference 004): the defaults, the sweep, traces, and network namespaces.
//! Short runs; assertions are on mechanisms, not on timing constants.

#[macro_use]
mod support;
use support::*;

/// `lab hops` on its defaults is the reference's unsaturated service: an open loop that
/// both topologies keep up with, new connections, no saturation verdict. `--sweep`
/// adds both topologies at each offered rate, their knees, and the chart.
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
            for t in hops["topologies"].as_array().unwrap() {
                assert_eq!(t["errors"], 0, "{t}");
                assert!(t["rps"].as_f64().unwrap() > 150.0, "{t}");
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
            }
            assert_eq!(sweep["knees"].as_array().unwrap().len(), 2);
            let md = std::fs::read_to_string(dir.path().join("hops.md")).unwrap();
            assert!(md.contains("**Sweep**") && md.contains("| 100 |"), "{md}");
            let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
            assert!(
                html.contains("Latency against load"),
                "the sweep has its chart"
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
            assert!(
                sv["p50_ms"].as_f64().unwrap() > m["p50_ms"].as_f64().unwrap(),
                "the boundary costs latency: services {sv} against monolith {m}"
            );
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
            assert_eq!(hops["waterfalls"].as_array().unwrap().len(), 4);
            let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
            assert!(page.contains("Waterfalls") && page.contains("<svg"));
        },
    )
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
