//! `loglag torture`: kill -9 during a flood (with and without rotation), and the overload soak.
//! Short runs; assertions are on mechanisms, not on timing constants.
// The lab and torture run where unix does; elsewhere they say what they need
// (commands/linux_only.rs).
#![cfg(unix)]

use crate::support;
use support::*;

#[test]
fn kill_9_during_a_flood_loses_and_duplicates_nothing() {
    within("kill_9_during_a_flood_loses_and_duplicates_nothing", || {
        let trials: usize = std::env::var("LOGLAG_TORTURE_TRIALS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20);
        let out = loglag()
            .args([
                "torture",
                "--only",
                "kill9",
                "--trials",
                &trials.to_string(),
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        assert_success(&out);
        let all: Value = serde_json::from_slice(&out.stdout).unwrap();
        let r = &all["kill9"];
        assert_eq!(r["trials"], trials);
        assert!(r["expected"].as_u64().unwrap() >= 1000 * trials as u64);
        assert_eq!(r["recovered"], r["expected"]);
        assert_eq!(r["duplicates"], 0);
        assert_eq!(r["out_of_order"], 0);
        assert_eq!(r["corrupt"], 0);
        assert!(
            r["from_spool"].as_u64().unwrap() > 0,
            "recovery delivered records the killed process had queued"
        );
    })
}

/// The default policy drops under the flood: every record whose call returned is in
/// the sink or counted in an in-band report, the one recovery writes for the killed
/// process included. A call in progress at the kill may be dropped and counted without
/// having returned: at most one per producer (two).
#[test]
fn kill_9_with_the_default_policy_announces_every_drop() {
    within(
        "kill_9_with_the_default_policy_announces_every_drop",
        || {
            let trials = 10u64;
            let out = loglag()
                .args([
                    "torture",
                    "--only",
                    "kill9",
                    "--kill9-policy",
                    "default",
                    "--trials",
                    &trials.to_string(),
                    "--format",
                    "json",
                ])
                .output()
                .unwrap();
            assert_success(&out);
            let all: Value = serde_json::from_slice(&out.stdout).unwrap();
            let r = &all["kill9"];
            assert_eq!(r["policy"], "default");
            let (returned, present, announced) = (
                r["expected"].as_u64().unwrap(),
                r["recovered"].as_u64().unwrap(),
                r["announced"].as_u64().unwrap(),
            );
            assert!(announced > 0, "the flood dropped: {r}");
            assert!(
            present + announced >= returned && present + announced <= returned + 2 * trials,
            "returned {returned} = present {present} + announced {announced} (within the calls in flight): {r}"
        );
            assert_eq!(r["duplicates"], 0);
            assert_eq!(r["out_of_order"], 0);
            assert_eq!(r["corrupt"], 0);
            assert_eq!(r["passed"], true);
        },
    )
}

#[test]
fn overload_soak_stays_in_budget_and_accounts_for_every_record() {
    within(
        "overload_soak_stays_in_budget_and_accounts_for_every_record",
        || {
            let secs: u64 = std::env::var("LOGLAG_SOAK_SECS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(10);
            let out = loglag()
                .args([
                    "torture",
                    "--only",
                    "soak",
                    "--soak",
                    &format!("{secs}s"),
                    "--format",
                    "json",
                ])
                .output()
                .unwrap();
            assert_success(&out);
            let r: Value = serde_json::from_slice(&out.stdout).unwrap();
            let rows = r["soak"].as_array().unwrap();
            assert_eq!(rows.len(), 5, "every policy");
            for row in rows {
                assert_eq!(row["accounted"], true, "{row}");
                let budget = row["budget_bytes"].as_u64().unwrap();
                // The ring, plus a fixed overhead: the writer's batch buffer, thread stacks,
                // allocator slack.
                assert!(
                    row["max_rss_growth_bytes"].as_u64().unwrap() <= budget + (24 << 20),
                    "{row}"
                );
                assert!(
                    row["dropped_queue_full"].as_u64().unwrap() > 0 || row["policy"] == "Block",
                    "10x overload must shed: {row}"
                );
            }
        },
    )
}

/// kill -9 during a flood through `.spool()` into rolling files that rotate every
/// 300 KiB, then recovery: every record whose call returned is there exactly once,
/// in order, across all the files, rotations included.
#[test]
fn kill_9_with_rotating_files_loses_and_duplicates_nothing() {
    within(
        "kill_9_with_rotating_files_loses_and_duplicates_nothing",
        || {
            let out = loglag()
                .args(["torture", "--only", "kill9", "--trials", "20"])
                .args(["--rotate-bytes", "300KiB", "--format", "json"])
                .output()
                .unwrap();
            assert_success(&out);
            let all: Value = serde_json::from_slice(&out.stdout).unwrap();
            let r = &all["kill9"];
            assert_eq!(r["trials"], 20);
            assert_eq!(r["recovered"], r["expected"], "{r}");
            assert_eq!(r["duplicates"], 0, "{r}");
            assert_eq!(r["out_of_order"], 0, "{r}");
            assert_eq!(r["corrupt"], 0, "{r}");
            assert_eq!(r["rotate_bytes"], 300 << 10);
            assert!(
                r["max_files"].as_u64().unwrap() >= 3,
                "the records really spread over rotated files: {r}"
            );
        },
    )
}
