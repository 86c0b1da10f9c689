//! `loglag lab hops`: its request into a `HopsPlan`, the runs, the outputs.

use super::*;

pub(crate) fn hops(a: HopsArgs) -> anyhow::Result<ExitCode> {
    use loglag_lab::hops;
    let exe = std::env::current_exe().context("cannot find the loglag executable")?;
    let plan = a.request.plan(exe)?;
    // Only once the plan is good, so that a refused one leaves nothing behind.
    if let Some(out) = &a.out {
        check_out_dir(out)?;
    }
    if let Some((rates, _)) = &plan.sweep {
        // An open loop past a topology's capacity opens connections as fast as it sends.
        let top = rates.iter().copied().fold(0.0, f64::max);
        loglag_lab::sys::procfs::raise_open_files((top as u64).clamp(1024, 65_536))
            .map_err(|e| anyhow::anyhow!("--sweep: {e}"))?;
    }
    if let Some(n) = plan.users {
        // The generator's sockets, order's accepted ones and its pooled calls.
        loglag_lab::sys::procfs::raise_open_files(4 * n as u64 + 256)
            .map_err(|e| anyhow::anyhow!("--users {n}: {e}"))?;
    }
    let runs = if plan.overhead { 4 } else { 2 };
    say!(
        "loglag lab hops: {runs} runs (monolith, services{}), about {:.0} s of load; {}, {} connection per outgoing call",
        if plan.overhead {
            ", each traced and untraced"
        } else {
            ", traced"
        },
        runs as f64 * plan.duration.as_secs_f64(),
        match (plan.users, plan.rate) {
            (Some(n), _) => format!("closed loop of {n} users"),
            (None, Some(r)) if a.request.rate.is_none() => format!(
                "open loop at {r} requests/s (the default: below both topologies' capacity, as the reference's service was)"
            ),
            (None, Some(r)) => format!("open loop at {r} requests/s"),
            (None, None) => String::new(),
        },
        match plan.connection {
            loglag_lab::load::Connection::New => "a new",
            _ => "a pooled",
        }
    );
    let cancel = cancel_flag()?;
    let progress = Progress::new(runs);
    let (output, error) = hops::run_hops(&plan, &progress, &cancel);
    progress.finish();
    // What finished is shown and written whatever stopped the runs: the tables, and
    // with --out the files and the manifest through hops' one output path.
    if let Some(mut output) = output {
        let outputs = ExportManager::hops(a.report);
        if let Some(out) = &a.out {
            let spans = hops::trace::otlp_document(&output.spans);
            write_to(
                &out.join("spans.otlp.json"),
                serde_json::to_string(&spans)?.as_bytes(),
            )?;
            output.summary.spans_file = Some("spans.otlp.json".into());
        }
        show_and_write_out(&outputs, &output.summary, a.out.as_deref(), "lab hops")?;
        if let Some(note) = &output.summary.interrupted {
            say!("loglag lab hops: {note}; the completed runs are reported");
        }
    } else if matches!(error, Some(LabError::Cancelled)) {
        let whither = a
            .out
            .as_ref()
            .map_or(String::new(), |o| format!(" to {}", o.display()));
        say!("loglag lab hops: interrupted before any run completed; nothing written{whither}");
    }
    match error {
        None => Ok(ExitCode::SUCCESS),
        Some(LabError::Cancelled) => Ok(ExitCode::from(INTERRUPTED)),
        Some(e) => Err(anyhow::Error::new(e).context("lab hops failed")),
    }
}
