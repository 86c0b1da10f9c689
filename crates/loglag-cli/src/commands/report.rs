//! `loglag report`: a result directory back into its pages, by its manifest.

use super::*;

pub(crate) fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let pages = loglag_lab::outputs::render_dir(&a.dir)?;
    for (i, (path, page)) in pages.iter().enumerate() {
        // The directory's own page goes where --output says; its parts' stay in theirs.
        let path = match (&a.output, i) {
            (Some(output), 0) => output.clone(),
            _ => path.clone(),
        };
        write_to(&path, page.as_bytes())?;
        if i == 0 && path.as_os_str() != "-" {
            eprintln!("loglag report: wrote {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
