//! `loglag torture`: the fault-injection parts and their table.

use super::*;

pub(crate) fn torture(a: TortureArgs) -> anyhow::Result<ExitCode> {
    use loglag::Overflow;
    use loglag_lab::torture::{self, Part};
    if a.format == OutputFormat::Csv {
        bail!("--format csv: torture's results are several tables; use md or json");
    }
    let wants = |part: Part| a.only.is_none_or(|o| o == part);
    let mut summary = TortureSummary {
        schema: SCHEMA,
        ..TortureSummary::default()
    };
    if wants(Part::Kill9) {
        let exe = std::env::current_exe().context("cannot find the loglag executable")?;
        let seed = a.seed.unwrap_or_else(loglag_lab::sys::clock::mono_ns);
        let policy = match a.kill9_policy {
            crate::args::Kill9Policy::Block => torture::FloodPolicy::Block,
            crate::args::Kill9Policy::Default => torture::FloodPolicy::Default,
        };
        eprintln!(
            "loglag torture: {} kill -9 trials (seed {seed}, policy {policy:?})",
            a.trials
        );
        summary.kill9 = Some(torture::kill9(
            a.trials,
            seed,
            a.rotate_bytes,
            policy,
            |spool, out, progress| {
                ChildSpec::Flood {
                    spool: spool.to_owned(),
                    out: out.to_owned(),
                    progress: progress.to_owned(),
                    rotate_bytes: a.rotate_bytes,
                    policy,
                }
                .command(&exe)
            },
            |i, t| {
                eprintln!(
                    "  trial {}: returned {}, present {}, announced dropped {}, difference {}, duplicates {}, from spool {}, torn {}, files {}",
                    i + 1,
                    t.expected,
                    t.recovered,
                    t.announced,
                    t.expected as i64 - t.recovered as i64 - t.announced as i64,
                    t.duplicates,
                    t.from_spool,
                    t.torn,
                    t.files
                )
            },
        )?);
    }
    let policies = [
        Overflow::Block,
        Overflow::BlockFor(Duration::from_millis(1)),
        Overflow::DropNewest,
        Overflow::DropOldest,
        Overflow::ShedByLevel,
    ];
    if wants(Part::Soak) {
        let rate = a.sink_rate.max(1024);
        let baseline = torture::rss_bytes();
        for policy in policies {
            eprintln!("loglag torture: soak {policy:?} for {:?}", a.soak);
            summary
                .soak
                .push(torture::soak(policy, a.soak, rate, baseline));
        }
        eprintln!("loglag torture: soak tracing-appender for {:?}", a.soak);
        summary.soak_tracing_appender =
            Some(torture::soak_tracing_appender(a.soak, rate, baseline));
    }
    if wants(Part::Hung) {
        for policy in &policies[1..] {
            summary.hung.push(torture::hung_sink(*policy, 10_000));
        }
    }
    if wants(Part::Faults) {
        summary.faults = torture::sink_faults(100_000)?;
    }
    stdout_exporter(a.format).export_torture(&summary, &mut std::io::stdout().lock())?;
    Ok(if summary.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
