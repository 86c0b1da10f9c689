//! `loglag emit`: flags into an `EmitPlan`, the run, its table.

use super::*;

pub(crate) fn emit(a: EmitArgs) -> anyhow::Result<ExitCode> {
    use crate::args::CompressName;
    use loglag::SinkSpec;
    use loglag_lab::emit::{self, EmitPlan, Rotation};
    let plan = EmitPlan {
        sink: a.sink.clone(),
        count: a.count,
        size: a.size as usize,
        rate: a.rate,
        level: a.level,
        threads: a.threads,
        spool: a.spool.clone(),
        overflow: a.overflow,
        rotation: Rotation {
            max_bytes: a.rotate_bytes,
            every: a.rotate_every,
            keep: a.keep,
            gzip: a.compress == Some(CompressName::Gzip),
        },
        via_tracing_appender: a.via == crate::args::Via::TracingAppender,
    };
    plan.validate()?;
    let progress = std::sync::atomic::AtomicU64::new(0);
    // Ctrl-C stops emitting; what was emitted is drained and summarised. A second exits.
    let stop = cancel_flag()?;
    let summary = emit::emit(&plan, &progress, &stop)
        .with_context(|| format!("loglag emit into {}", a.sink))?;
    // The summary must not mix into the records.
    let mut out: Box<dyn Write> = if a.sink == SinkSpec::Stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let m = &summary.metrics;
    match a.format {
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &summary)?;
            writeln!(out)?;
        }
        OutputFormat::Csv => export::emit_table(&summary, true, &mut out)?,
        OutputFormat::Md => export::emit_table(&summary, false, &mut out)?,
    }
    out.flush()?;
    if summary.interrupted {
        eprintln!(
            "loglag emit: interrupted after {} of {} records; those are drained and summarised above",
            summary.records, a.count
        );
        return Ok(ExitCode::from(INTERRUPTED));
    }
    if m.dropped_records > 0 && !a.allow_drops {
        eprintln!(
            "loglag emit: {} of {} records dropped (use --overflow block to wait instead, or --allow-drops)",
            m.dropped_records, summary.records
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
