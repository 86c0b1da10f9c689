//! `loglag load` and `loglag sink`: the load generator and the sink reader on their own.

use super::*;
use loglag_lab::load::summarize;

pub(crate) fn load(a: LoadArgs) -> anyhow::Result<ExitCode> {
    // Before anything starts (the --calibrate server, the runtime).
    LoadConfig::check(a.rate, a.duration, a.closed.map(|n| n as usize))?;
    let Some(url) = a.url.as_deref().or(a.calibrate.then_some("")) else {
        bail!("give a URL to load, or --calibrate to measure only the generator's floor");
    };
    let connection = a.connection;
    let lateness_limit_us = a.lateness_limit.as_secs_f64() * 1e6;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Ctrl-C stops the load and prints what was measured so far; a second one exits.
    let stop = cancel_flag()?;
    let config = |target: Target| LoadConfig {
        target,
        rate: a.rate,
        duration: a.duration,
        connection,
        closed: a.closed.map(|n| n as usize),
        grace: a.grace,
        first_id: 0,
    };
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
        eprintln!("calibrating: the same load against a null server ({label})");
        let config = config(server.target());
        let result = run(&config);
        Some(summarize(&label, &config, &result, lateness_limit_us))
    } else {
        None
    };
    let floor = match floor {
        // Interrupted while calibrating: report the floor alone.
        Some(f) if f.interrupted.is_some() => {
            stdout_exporter(a.format).export_load(&f, &mut std::io::stdout().lock())?;
            eprintln!(
                "loglag load: {}",
                f.interrupted.as_deref().unwrap_or_default()
            );
            return Ok(ExitCode::from(INTERRUPTED));
        }
        other => other,
    };
    let mut summary = if url.is_empty() {
        floor.expect("--calibrate without a URL")
    } else {
        let config = config(Target::parse(url).map_err(anyhow::Error::msg)?);
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
    };
    summary.schema = SCHEMA;
    stdout_exporter(a.format).export_load(&summary, &mut std::io::stdout().lock())?;
    if let Some(note) = &summary.interrupted {
        eprintln!("loglag load: {note}");
        return Ok(ExitCode::from(INTERRUPTED));
    }
    for s in summary.with_floor() {
        if let Some(w) = &s.lateness_warning {
            eprintln!("warning: {}: {w}", s.url);
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
    let config = ReadConfig {
        read_size: a.read_size,
        rate: a.rate,
        inspect: Default::default(),
    };
    let pipe_size = a.pipe_size.map(|v| v as usize);
    let state = SharedState::default();
    let started = Instant::now();
    let started_mono = loglag_lab::sys::clock::mono_ns();
    reader::spawn_sampler(&state)?;
    let source = match (&a.fifo, &a.listen) {
        (Some(fifo), _) => {
            let created = reader::ensure_fifo(fifo)?;
            eprintln!(
                "loglag sink: reading {} (waiting for a writer)",
                fifo.display()
            );
            let file = reader::open_fifo(fifo, false)?;
            if let Some(size) = pipe_size {
                loglag::sink::set_pipe_size(&file, size)?;
            }
            let result = reader::read_to_end(file, &config, &state);
            if created {
                let _ = std::fs::remove_file(fifo);
            }
            result?;
            fifo.display().to_string()
        }
        (None, Some(addr)) => {
            let listener = std::net::TcpListener::bind(addr)
                .with_context(|| format!("cannot listen on {addr}"))?;
            eprintln!("loglag sink: listening on {}", listener.local_addr()?);
            let (stream, peer) = listener.accept()?;
            eprintln!("loglag sink: reading from {peer}");
            reader::read_to_end(stream, &config, &state)?;
            format!("tcp://{addr}")
        }
        (None, None) => bail!("give --fifo PATH or --listen ADDR"),
    };
    let (stats, samples) = {
        let s = state.lock().unwrap_or_else(|e| e.into_inner());
        (s.stats(), s.samples.clone())
    };
    if let Some(path) = &a.samples {
        let mut csv = String::from("t_s,bytes\n");
        for (t, bytes) in samples {
            csv.push_str(&format!(
                "{:.3},{bytes}\n",
                t.saturating_sub(started_mono) as f64 / 1e9
            ));
        }
        write_to(path, csv.as_bytes())?;
    }
    let summary = SinkSummary {
        schema: SCHEMA,
        source,
        bytes: stats.bytes,
        newlines: stats.newlines,
        reads: stats.reads,
        sha256: stats.sha256,
        seconds: started.elapsed().as_secs_f64(),
        last_byte_s: stats
            .last_byte_mono_ns
            .map(|t| t.saturating_sub(started_mono) as f64 / 1e9),
        rate_cap_bytes_per_s: config.rate,
    };
    stdout_exporter(a.format).export_sink(&summary, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}
