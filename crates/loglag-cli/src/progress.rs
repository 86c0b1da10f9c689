//! Progress on stderr: a bar with an ETA on a terminal, one line per run otherwise.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use loglag_lab::lab::Observer;
use loglag_lab::report::RunSummary;

pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs, ETA {eta}  {msg}",
                )
                .expect("valid template"),
            );
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            bar
        });
        Progress { bar }
    }

    fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => say!("{text}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Observer for Progress {
    fn run_started(&self, index: usize, total: usize, label: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(index as u64);
                bar.set_message(label.to_owned());
            }
            None => say!("loglag lab: run {}/{total}: {label}", index + 1),
        }
    }

    fn run_finished(&self, r: &RunSummary) {
        let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        self.line(&format!(
            "  {} / {}: p50 {} ms, p99 {} ms, drain {:.2} s, rps {:.1}/{:.1}, {}",
            r.condition,
            r.sink,
            ms(r.metrics.p50_ms),
            ms(r.metrics.p99_ms),
            r.metrics.drain_s,
            r.metrics.rps_api,
            r.metrics.rps_logs_read,
            if r.metrics.verified {
                "verified".to_owned()
            } else {
                format!("NOT verified ({})", r.verify_note)
            }
        ));
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    fn warn(&self, message: &str) {
        self.line(&format!("loglag lab: warning: {message}"));
    }

    fn progress(&self, message: &str) {
        self.line(&format!("loglag lab: {message}"));
    }
}

/// `loglag load`'s progress on a terminal: sent and finished requests, refreshed by a
/// thread until [`LoadDisplay::finish`]. Nothing when stderr is not a terminal.
pub struct LoadDisplay {
    bar: Option<ProgressBar>,
    updater: Option<std::thread::JoinHandle<()>>,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl LoadDisplay {
    pub fn start(
        progress: std::sync::Arc<loglag_lab::load::LoadProgress>,
        expected: Option<u64>,
    ) -> LoadDisplay {
        use std::sync::atomic::Ordering;
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return LoadDisplay {
                bar: None,
                updater: None,
                done,
            };
        }
        let bar = match expected {
            Some(n) => ProgressBar::new(n),
            None => ProgressBar::new_spinner(),
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} sent  {msg}  (Ctrl-C: stop and summarise)",
            )
            .expect("valid template"),
        );
        let updater = {
            let bar = bar.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    bar.set_position(progress.sent.load(Ordering::Relaxed));
                    bar.set_message(format!(
                        "{} finished",
                        progress.finished.load(Ordering::Relaxed)
                    ));
                    bar.tick();
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            })
        };
        LoadDisplay {
            bar: Some(bar),
            updater: Some(updater),
            done,
        }
    }

    pub fn finish(mut self) {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(u) = self.updater.take() {
            let _ = u.join();
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
