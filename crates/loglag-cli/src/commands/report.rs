//! `loglag report`: an output directory back into a report page.

use super::*;

pub(crate) fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let output = a
        .output
        .clone()
        .unwrap_or_else(|| a.dir.join("report.html"));
    // `lab hops` writes its own summary.json, with a `hops` section.
    if let Ok(text) = std::fs::read_to_string(a.dir.join("summary.json")) {
        if let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) {
            if let Some(hops) = doc.get("hops") {
                let summary: loglag_lab::report::HopsSummary = serde_json::from_value(hops.clone())
                    .with_context(|| {
                        format!("{} has a hops section that does not parse", a.dir.display())
                    })?;
                write_to(&output, loglag_lab::html::render_hops(&summary).as_bytes())?;
                if output.as_os_str() != "-" {
                    eprintln!("loglag report: wrote {}", output.display());
                }
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    match loglag_lab::html::load_preset(&a.dir)? {
        // A preset's directory: its table here, each step's charts in its own.
        Some(preset) => {
            for step in &preset.steps {
                let dir = a.dir.join(step);
                let summary = loglag_lab::html::load_dir(&dir)?;
                write_to(
                    &dir.join("report.html"),
                    loglag_lab::html::render(&summary).as_bytes(),
                )?;
            }
            write_to(&output, loglag_lab::html::render_preset(&preset).as_bytes())?;
        }
        None => {
            let summary = loglag_lab::html::load_dir(&a.dir)?;
            write_to(&output, loglag_lab::html::render(&summary).as_bytes())?;
        }
    }
    if output.as_os_str() != "-" {
        eprintln!("loglag report: wrote {}", output.display());
    }
    Ok(ExitCode::SUCCESS)
}
