//! `loglag load` and `loglag sink`: the load generator and the sink reader on their own.

use super::*;
use loglag_lab::load::summarize;

pub(crate) fn load(a: LoadArgs) -> anyhow::Result<ExitCode> {
    let outputs = ExportManager::load(a.format.into());
    if let Some(out) = &a.out {
        check_out_dir(out)?;
    }
    let Some(url) = a.url.as_deref().or(a.calibrate.then_some("")) else {
        bail!("give a URL to load, or --calibrate to measure only the generator's floor");
    };
    let connection = a.connection;
    let lateness_limit_us = a.lateness_limit.as_secs_f64() * 1e6;
    let config = |target: Target| -> anyhow::Result<LoadConfig> {
        let config = LoadConfig {
            target,
            rate: a.rate,
            duration: a.duration,
            connection,
            closed: a.closed.map(|n| n as usize),
            grace: a.grace,
            first_id: 0,
        };
        config.validate()?;
        Ok(config)
    };
    // The URL's load is checked before anything starts (the --calibrate server, the
    // runtime's threads).
    let url_config = (!url.is_empty())
        .then(|| config(Target::parse(url).map_err(anyhow::Error::msg)?))
        .transpose()?;
    let runtime = loglag_lab::load::runtime(a.closed.is_some(), "load-generator")?;
    // Ctrl-C stops the load and prints what was measured so far; a second one exits.
    let stop = cancel_flag()?;
    let run = |config: &LoadConfig| {
        let progress = loglag_lab::load::LoadProgress::stopped_by(stop.clone());
        let expected = config
            .closed
            .is_none()
            .then(|| (config.rate * config.duration.as_secs_f64()).round() as u64);
        let display = crate::progress::LoadDisplay::start(progress.clone(), expected);
        let result = runtime.block_on(loglag_lab::load::run_observed(config, progress));
        display.finish();
        result
    };
    let floor = if a.calibrate {
        let exe = std::env::current_exe().context("cannot find the loglag executable")?;
        let server = loglag_lab::child::NullServer::start(&exe).context("--calibrate")?;
        let label = format!("floor: null server at http://{}/", server.addr);
        say!("calibrating: the same load against a null server ({label})");
        let config = config(server.target())?;
        let result = run(&config);
        Some(summarize(&label, &config, &result, lateness_limit_us))
    } else {
        None
    };
    let floor = match floor {
        // Interrupted while calibrating: report the floor alone.
        Some(f) if f.interrupted.is_some() => {
            show_and_write_out(&outputs, &f, a.out.as_deref(), "load")?;
            say!(
                "loglag load: {}",
                f.interrupted.as_deref().unwrap_or_default()
            );
            return Ok(ExitCode::from(INTERRUPTED));
        }
        other => other,
    };
    let mut summary = if let Some(config) = url_config {
        let target = &config.target;
        // Fail fast with a clear message if nothing listens there.
        std::net::TcpStream::connect_timeout(&target.addr, Duration::from_secs(5))
            .with_context(|| format!("cannot connect to {url} ({})", target.addr))?;
        let result = run(&config);
        if let Some(path) = &a.requests_csv {
            let mut csv = Vec::new();
            export::load_requests_csv(&result.samples, &mut csv)?;
            write_to(path, &csv)?;
        }
        let mut summary = summarize(url, &config, &result, lateness_limit_us);
        summary.floor = floor.map(Box::new);
        summary
    } else {
        floor.expect("--calibrate without a URL")
    };
    summary.schema = SCHEMA;
    show_and_write_out(&outputs, &summary, a.out.as_deref(), "load")?;
    if let Some(note) = &summary.interrupted {
        say!("loglag load: {note}");
        return Ok(ExitCode::from(INTERRUPTED));
    }
    for s in summary.with_floor() {
        if let Some(w) = &s.lateness_warning {
            say!("warning: {}: {w}", s.url);
        }
    }
    let all_ok = summary.with_floor().all(|s| s.ok == s.requests);
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub(crate) fn sink(a: SinkArgs) -> anyhow::Result<ExitCode> {
    let outputs = ExportManager::sink(a.format.into());
    if let Some(out) = &a.out {
        check_out_dir(out)?;
    }
    let summary = a.request.run(|what| say!("loglag sink: {what}"))?;
    show_and_write_out(&outputs, &summary, a.out.as_deref(), "sink")?;
    Ok(ExitCode::SUCCESS)
}
