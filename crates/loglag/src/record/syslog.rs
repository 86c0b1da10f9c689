//! The parts of an RFC 5424 header that do not change per record, and parameter names.

use std::sync::OnceLock;

/// The structured-data ID of loglag's parameters. 32473 is the enterprise number
/// RFC 5612 reserves for documentation; collectors keep it as an opaque name.
pub(crate) const SD_ID: &str = "loglag@32473";

/// `HOSTNAME APP-NAME`, each printable ASCII without spaces (RFC 5424 §6.2.4, §6.2.5),
/// or `-` when unknown. Read once: neither changes while the process runs.
pub(crate) fn host_and_app() -> &'static str {
    static HEADER: OnceLock<String> = OnceLock::new();
    HEADER.get_or_init(|| {
        #[cfg(windows)]
        let host = crate::sys::windows::host_name();
        #[cfg(unix)]
        let mut host = [0u8; 256];
        #[cfg(unix)]
        // SAFETY: the buffer and its length are valid; gethostname NUL-terminates
        // within it on success.
        let ok = unsafe { libc::gethostname(host.as_mut_ptr().cast(), host.len()) } == 0;
        #[cfg(unix)]
        let host = if ok {
            let end = host.iter().position(|&b| b == 0).unwrap_or(host.len());
            String::from_utf8_lossy(&host[..end]).into_owned()
        } else {
            String::new()
        };
        #[cfg(unix)]
        let app = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
        // No /proc: the executable's name, without `.exe`.
        #[cfg(windows)]
        let app = std::env::current_exe()
            .ok()
            .and_then(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
            .unwrap_or_default();
        format!("{} {}", printable(&host, 255), printable(app.trim(), 48))
    })
}

/// `s` as PRINTUSASCII (33–126), at most `max` characters, or `-` if nothing is left.
fn printable(s: &str, max: usize) -> String {
    let kept: String = s
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(max)
        .collect();
    if kept.is_empty() {
        "-".into()
    } else {
        kept
    }
}

/// Appends a field name as an SD PARAM-NAME: printable ASCII except `=`, space, `]`
/// and `"`, at most 32 characters; anything else becomes `_`.
pub(crate) fn param_name(out: &mut Vec<u8>, name: &str) {
    for c in name.chars().take(32) {
        let ok = c.is_ascii_graphic() && !matches!(c, '=' | ']' | '"');
        out.push(if ok { c as u8 } else { b'_' });
    }
    if name.is_empty() {
        out.push(b'_');
    }
}
