//! `loglag torture`: the fault-injection parts and their table.

use super::*;

pub(crate) fn torture(a: TortureArgs) -> anyhow::Result<ExitCode> {
    let outputs = ExportManager::torture(a.format.into())?;
    if let Some(out) = &a.out {
        check_out_dir(out)?;
    }
    let exe = std::env::current_exe().context("cannot find the loglag executable")?;
    let summary = a.request.run(exe, |step| say!("loglag torture: {step}"))?;
    show_and_write_out(&outputs, &summary, a.out.as_deref(), "torture")?;
    Ok(if summary.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
