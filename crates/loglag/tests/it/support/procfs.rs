//! This process's threads and memory as /proc tells them (Linux): shared by the tests
//! (through `support`) and the latency bench (`#[path]`), so both read them alike.
#![allow(dead_code)]

/// The fields of `/proc/self/task/*/stat` after the command name (state first), of
/// the thread of this process called `name`.
pub fn thread_stat(name: &str) -> Option<Vec<String>> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 2..];
            return Some(rest.split_whitespace().map(str::to_owned).collect());
        }
    }
    None
}

/// CPU seconds one thread of this process has used, found by name.
pub fn thread_cpu_seconds(name: &str) -> Option<f64> {
    let f = thread_stat(name)?;
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// This process's resident memory (`VmRSS`), in KiB.
pub fn vm_rss_kib() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The state of this machine's TCP connection from `local_port` to `remote_port` on
/// loopback, as `/proc/net/tcp{,6}` gives it (`0x08`: CLOSE_WAIT, the peer's FIN has
/// arrived). `None` where there is no such file or no such connection. Under Wine the
/// sockets are Linux's, and its `Z:` drive is `/`.
pub fn tcp_state(local_port: u16, remote_port: u16) -> Option<u8> {
    let tables: &[&str] = if cfg!(windows) {
        &[r"Z:\proc\net\tcp", r"Z:\proc\net\tcp6"]
    } else {
        &["/proc/net/tcp", "/proc/net/tcp6"]
    };
    tables.iter().find_map(|table| {
        let text = std::fs::read_to_string(table).ok()?;
        text.lines().skip(1).find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let port = |addr: &str| u16::from_str_radix(addr.rsplit(':').next()?, 16).ok();
            (port(fields.get(1)?)? == local_port && port(fields.get(2)?)? == remote_port)
                .then(|| u8::from_str_radix(fields.get(3)?, 16).ok())
                .flatten()
        })
    })
}
