//! `loglag load` and `loglag sink`: the load generator and the sink reader on their own.

use super::*;

pub(crate) fn load(a: LoadArgs) -> anyhow::Result<ExitCode> {
    if a.closed.is_none() && !(a.rate > 0.0 && a.rate.is_finite()) {
        bail!("--rate must be a positive number of requests per second");
    }
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
    let run = |target: Target| {
        let progress = loglag_lab::load::LoadProgress::stopped_by(stop.clone());
        let expected = a
            .closed
            .is_none()
            .then(|| (a.rate * a.duration.as_secs_f64()).round() as u64);
        let display = crate::progress::LoadDisplay::start(progress.clone(), expected);
        let result = runtime.block_on(loglag_lab::load::run_observed(
            &LoadConfig {
                target,
                rate: a.rate,
                duration: a.duration,
                connection,
                closed: a.closed.map(|n| n as usize),
                grace: a.grace,
                first_id: 0,
            },
            progress,
        ));
        display.finish();
        result
    };
    let floor = if a.calibrate {
        let exe = std::env::current_exe().context("cannot find the loglag executable")?;
        let server = loglag_lab::child::NullServer::start(&exe).context("--calibrate")?;
        let label = format!("floor: null server at http://{}/", server.addr);
        eprintln!("calibrating: the same load against a null server ({label})");
        let result = run(server.target());
        Some(summarize(&a, &label, &result, lateness_limit_us))
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
        let target = Target::parse(url).map_err(anyhow::Error::msg)?;
        // Fail fast with a clear message if nothing listens there.
        std::net::TcpStream::connect_timeout(&target.addr, Duration::from_secs(5))
            .with_context(|| format!("cannot connect to {url} ({})", target.addr))?;
        let result = run(target);
        if let Some(path) = &a.requests_csv {
            write_to(path, requests_csv(&result).as_bytes())?;
        }
        let mut summary = summarize(&a, url, &result, lateness_limit_us);
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

pub(crate) fn summarize(
    a: &LoadArgs,
    url: &str,
    result: &loglag_lab::load::LoadResult,
    limit_us: f64,
) -> LoadSummary {
    let count = |o: Outcome| result.samples.iter().filter(|s| s.outcome == o).count() as u64;
    let mut latencies: Vec<u64> = result.samples.iter().filter_map(|s| s.latency_ns).collect();
    let ms = |v: Option<u64>| v.map(|ns| ns as f64 / 1e6);
    let lateness_ns: Vec<u64> = result.samples.iter().map(|s| s.send_lateness_ns).collect();
    // A closed loop has no schedule, so nothing can be late.
    let send_lateness = a
        .closed
        .is_none()
        .then(|| Lateness::of(&lateness_ns))
        .flatten();
    let ok = count(Outcome::Ok);
    LoadSummary {
        schema: SCHEMA,
        url: url.to_owned(),
        mode: if a.closed.is_some() {
            "closed".into()
        } else {
            "open".into()
        },
        rate: a.closed.is_none().then_some(a.rate),
        connections: a.closed.map(|n| n as usize),
        // An interrupted run lasted as long as it ran, not as planned.
        duration_s: if result.interrupted {
            result.wall.as_secs_f64()
        } else {
            a.duration.as_secs_f64()
        },
        requests: result.samples.len() as u64,
        ok,
        http_errors: count(Outcome::HttpError),
        io_errors: count(Outcome::IoError),
        timeouts: count(Outcome::Timeout),
        achieved_rps: ok as f64
            / if result.interrupted {
                result.wall.as_secs_f64().max(1e-9)
            } else {
                result.wall.as_secs_f64().max(a.duration.as_secs_f64())
            },
        p50_ms: ms(quantile(&mut latencies, 0.5)),
        p90_ms: ms(quantile(&mut latencies, 0.9)),
        p99_ms: ms(quantile(&mut latencies, 0.99)),
        p999_ms: ms(quantile(&mut latencies, 0.999)),
        max_ms: ms(quantile(&mut latencies, 1.0)),
        send_lateness,
        lateness_warning: send_lateness.and_then(|l| l.warning(limit_us)),
        interrupted: result.interrupted.then(|| {
            format!(
                "interrupted: {} requests finished before Ctrl-C are summarised; requests still in flight are not",
                result.samples.len()
            )
        }),
        floor: None,
    }
}

pub(crate) fn requests_csv(result: &loglag_lab::load::LoadResult) -> String {
    let mut rows =
        String::from("index,scheduled_ms,send_lateness_ms,connect_ms,latency_ms,status,outcome\n");
    for s in &result.samples {
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| format!("{:.3}", v as f64 / 1e6));
        let outcome = serde_json::to_value(s.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        rows.push_str(&format!(
            "{},{:.3},{:.3},{},{},{},{}\n",
            s.index,
            s.scheduled_ns as f64 / 1e6,
            s.send_lateness_ns as f64 / 1e6,
            opt(s.connect_ns),
            opt(s.latency_ns),
            s.status.map_or(String::new(), |s| s.to_string()),
            outcome
        ));
    }
    rows
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
