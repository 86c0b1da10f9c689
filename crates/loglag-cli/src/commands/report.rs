//! `loglag report`: a result directory back into its pages, by its manifest.

use super::*;

pub(crate) fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let pages = loglag_lab::outputs::render_dir(&a.dir)?;
    for (i, (path, page)) in pages.iter().enumerate() {
        // The directory's own page goes where --output says; its parts' stay in theirs.
        // A page inside the directory is written through a new file renamed over the
        // old: a symbolic link named report.html there (the directory is untrusted
        // input) is replaced, never written through.
        let path = match (&a.output, i) {
            (Some(output), 0) => {
                write_to(output, page.as_bytes())?;
                output.clone()
            }
            _ => {
                loglag_lab::outputs::write_page(path, page)?;
                path.clone()
            }
        };
        if i == 0 && path.as_os_str() != "-" {
            say!("loglag report: wrote {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
