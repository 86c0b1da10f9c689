//! The reference presets: 002 buffers, 003 blocking and the sweep, and an ERROR flushing its context.
//! Short runs; assertions are on mechanisms, not on timing constants.
// The lab and torture run where unix does; elsewhere they say what they need
// (commands/linux_only.rs).
#![cfg(unix)]

use crate::support;
use support::*;

/// Reference 002 on the built-in API: a 100-record buffer writes far less often than a
/// write per record, a SIGTERM loses nothing, and a SIGKILL loses exactly what the
/// buffer held (the warm-up was flushed, so that is the records since, modulo 100).
#[test]
fn the_buffers_preset_counts_writes_and_what_a_kill_loses() {
    within(
        "the_buffers_preset_counts_writes_and_what_a_kill_loses",
        || {
            let (p, dir) = preset(&[
                "--preset",
                "buffers",
                "--conditions",
                "file-sync,memory-buffer-100,loglag,loglag-spool",
                "--closed",
                "20",
                "--duration",
                "1s",
            ]);
            assert_eq!(p["steps"], serde_json::json!(["term", "kill"]));
            for step in ["term", "kill"] {
                let sync = &preset_row(&p, step, "file-sync")["pair"];
                let buffered = &preset_row(&p, step, "memory-buffer-100")["pair"];
                let w = |r: &Value| r["log_writes_per_min"].as_f64().unwrap();
                assert!(
                    w(sync) >= 20.0 * w(buffered),
                    "{step}: file-sync {} writes/min against memory-buffer-100 {}",
                    w(sync),
                    w(buffered)
                );
                assert!(sync["syscw_per_min"].as_f64().unwrap() > 0.0);
                assert_eq!(sync["lost_records"], 0, "{step}: {sync}");
                assert_eq!(sync["out_of_order"], 0);
                assert_eq!(sync["http_errors"], 0);
            }
            for c in ["file-sync", "memory-buffer-100", "loglag"] {
                let r = &preset_row(&p, "term", c)["pair"];
                assert_eq!(r["lost_records"], 0, "SIGTERM flushes {c}: {r}");
                assert_eq!(r["verified"], true, "{r}");
            }
            // What the buffer held at the SIGKILL: the records logged since the warm-up
            // (which was flushed), modulo its capacity.
            let kill = summary(&dir.path().join("kill"));
            let killed = run(&kill, "memory-buffer-100", "fast");
            let logged = killed["expected_records"].as_i64().unwrap();
            assert!(logged > 100, "{killed}");
            assert_eq!(
                killed["lost_records"].as_i64().unwrap(),
                logged % 100,
                "{killed}"
            );
            assert!(
                killed["app_exit"].as_str().unwrap().contains("SIGKILL"),
                "{killed}"
            );
            if logged % 100 > 0 {
                assert!(killed["verify_note"]
                    .as_str()
                    .unwrap()
                    .contains("lost at the stop"));
            }
            assert_eq!(run(&kill, "file-sync", "fast")["lost_records"], 0);
            // The headline states the loss the summary counted.
            let md = std::fs::read_to_string(dir.path().join("preset.md")).unwrap();
            let said = headline_text(&md);
            let lost = logged % 100;
            if lost > 0 {
                assert!(
                    said.contains(&format!("memory-buffer-100 lost {lost}")),
                    "{said}"
                );
            } else {
                assert!(said.contains("memory-buffer-100"), "{said}");
            }
            assert!(said.contains("at SIGKILL:"), "{said}");
            // 002's SIGKILL row, answered: with a spool the kill loses nothing; the lab
            // delivers the spool into the pipe after the stop, as the next start would.
            for step in ["term", "kill"] {
                let spooled = &preset_row(&p, step, "loglag-spool")["pair"];
                assert_eq!(spooled["lost_records"], 0, "{step}: {spooled}");
                assert_eq!(spooled["verified"], true, "{step}: {spooled}");
                assert!(spooled["duplicate_records"].as_u64().is_some(), "{spooled}");
            }
        },
    )
}

/// `--error-every`: the ERROR makes the memory buffer write what it holds, and what
/// arrives is in the order it was logged, with every ERROR there.
#[test]
fn an_error_flushes_the_buffered_context_in_order() {
    within("an_error_flushes_the_buffered_context_in_order", || {
        let (p, dir) = preset(&[
            "--preset",
            "buffers",
            "--conditions",
            "memory-buffer-200,queue-memory-100",
            "--stop-signal",
            "term",
            "--error-every",
            "7",
            "--closed",
            "4",
            "--duration",
            "1s",
        ]);
        let s = summary(&dir.path().join("term"));
        for c in ["memory-buffer-200", "queue-memory-100"] {
            let r = run(&s, c, "fast");
            // Ids 0..N were served (the warm-up's included); every seventh logged an ERROR.
            let served = r["completed"].as_u64().unwrap() + 2;
            // queue-memory-100's channel drops when full (counted as queue_full, and
            // an ERROR is not spared): on a busy machine every missing ERROR must be
            // one of those counted drops.
            let errors = r["error_lines"].as_u64().unwrap();
            let dropped = r["dropped"].as_u64().unwrap();
            assert!(
                errors <= served / 7 && errors + dropped >= served / 7,
                "{c}: {errors} ERROR lines, {dropped} dropped, {} logged: {r}",
                served / 7
            );
            assert_eq!(r["out_of_order"], 0, "{c}: {r}");
            assert_eq!(r["lost_records"], 0, "{c}: {r}");
            // Each ERROR that reached the buffer made it write: at least one write
            // call per ERROR line written (the channel's drops never reach it).
            let writes = r["log_writes"].as_u64().unwrap();
            assert!(writes >= errors, "{c}: {writes} writes for {errors} ERRORs");
            assert_eq!(preset_row(&p, "term", c)["pair"]["out_of_order"], 0);
        }
    })
}

/// Reference 003: every way of logging completes under 200 concurrent clients on a
/// multi-threaded server, and the figures the article reported are there.
#[test]
fn the_blocking_preset_runs_every_condition_under_200_clients() {
    within(
        "the_blocking_preset_runs_every_condition_under_200_clients",
        || {
            let (p, dir) = preset(&[
                "--preset",
                "blocking",
                "--closed",
                "200",
                "--duration",
                "1s",
                "--report",
            ]);
            // The preset's page links each step's report; `loglag report` renders both.
            let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
            assert!(page.contains("loglag lab --preset blocking"), "{page}");
            assert!(page.contains("closed-200/report.html"));
            assert!(dir.path().join("closed-200/report.html").exists());
            let out = loglag()
                .arg("report")
                .arg(dir.path())
                .args(["-o", "-"])
                .output()
                .unwrap();
            assert_success(&out);
            assert!(String::from_utf8_lossy(&out.stdout).contains("sync-writeln"));
            assert_eq!(p["steps"], serde_json::json!(["closed-200"]));
            let rows = p["rows"].as_array().unwrap();
            assert_eq!(rows.len(), 5, "{p}");
            for r in rows {
                let pair = &r["pair"];
                assert_eq!(pair["http_errors"], 0, "{pair}");
                assert_eq!(pair["timeouts"], 0, "{pair}");
                assert_eq!(pair["verified"], true, "{pair}");
                assert!(pair["rps_api"].as_f64().unwrap() > 0.0);
                assert!(pair["ctx_voluntary_per_s"].as_f64().is_some(), "{pair}");
                assert!(pair["ctx_involuntary_per_s"].as_f64().is_some(), "{pair}");
                assert!(pair["cpu_cores"].as_f64().is_some(), "{pair}");
            }
        },
    )
}

/// Reference 003's tuning table: at a fixed rate and a long interval, bigger batches
/// mean fewer writes; and the output says which setting it favours.
#[test]
fn the_sweep_writes_less_as_batches_grow() {
    within("the_sweep_writes_less_as_batches_grow", || {
        let (p, _dir) = preset(&[
            "--preset",
            "sweep",
            "--batch-bytes",
            "4KiB,32KiB,128KiB",
            "--flush-interval",
            "2s",
            "--duration",
            "2s",
        ]);
        let writes: Vec<f64> = p["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["pair"]["log_writes_per_min"].as_f64().unwrap())
            .collect();
        assert_eq!(writes.len(), 3, "{p}");
        assert!(writes[0] > writes[1] && writes[1] > writes[2], "{writes:?}");
        // A clean run names a favourite; a run the machine disturbed (a late generator,
        // a saturated API or machine, failed requests) must say it is inconclusive
        // instead, and why.
        let flagged = p["rows"].as_array().unwrap().iter().any(|r| {
            !r["pair"]["lateness_warning"].is_null()
                || !r["pair"]["saturation_warning"].is_null()
                || !r["pair"]["machine_warning"].is_null()
                || r["pair"]["http_errors"].as_u64() != Some(0)
                || r["pair"]["timeouts"].as_u64() != Some(0)
                || r["pair"]["verified"] != true
        });
        let verdict = p["verdict"].as_str().unwrap();
        if flagged {
            assert!(verdict.starts_with("Inconclusive"), "{p}");
        } else {
            assert!(verdict.starts_with("The numbers favour"), "{p}");
        }
        for r in p["rows"].as_array().unwrap() {
            assert!(r["pair"]["oldest_queued_ms"].as_f64().is_some(), "{r}");
            assert!(r["pair"]["rss_peak_kib"].as_u64().unwrap() > 0, "{r}");
        }
    })
}
