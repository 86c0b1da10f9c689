//! `loglag emit`: flags into an `EmitPlan`, the run, its table.

use super::*;

pub(crate) fn emit(a: EmitArgs) -> anyhow::Result<ExitCode> {
    use loglag::sink::SinkSpec;
    use loglag_lab::emit;
    let plan = &a.plan;
    plan.validate()?;
    let outputs = ExportManager::emit(a.format.into());
    if let Some(out) = &a.out {
        check_out_dir(out)?;
    }
    let progress = std::sync::atomic::AtomicU64::new(0);
    // Ctrl-C stops emitting; what was emitted is drained and summarised. A second exits.
    let stop = cancel_flag()?;
    let summary = emit::emit(plan, &progress, &stop)
        .with_context(|| format!("loglag emit into {}", a.plan.sink))?;
    // The summary must not mix into the records.
    let mut out: Box<dyn Write> = if a.plan.sink == SinkSpec::Stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let shown = outputs.show(&summary, &mut out);
    write_out(&outputs, &summary, a.out.as_deref(), "emit")?;
    stdout_outcome(shown)?;
    let m = &summary.metrics;
    if summary.interrupted {
        say!(
            "loglag emit: interrupted after {} of {} records; those are drained and summarised above",
            summary.records, a.plan.count
        );
        return Ok(ExitCode::from(INTERRUPTED));
    }
    if m.dropped_records > 0 && !a.allow_drops {
        say!(
            "loglag emit: {} of {} records dropped (use --overflow block to wait instead, or --allow-drops)",
            m.dropped_records, summary.records
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
