//! `loglag lab hops` (reference 004): the same `/buy` endpoint as one process and as
//! three, under the same load; the latency tax of the service boundary, where it goes
//! (from propagated traces), and what collecting the traces cost.

pub mod analyse;
pub mod findings;
pub mod netns;
mod plan;
pub mod service;
pub mod trace;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::lab::executor::GENERATOR_THREAD;
use crate::lab::{LabError, Observer};
use crate::load::{self, Connection, LoadConfig, Outcome, Target};
use crate::report::{HopsParams, HopsSummary, Lateness, RunInterference};
use crate::sys::child::cpu_seconds;
use crate::sys::child::ChildGuard;
use crate::sys::clock::mono_ns;
use crate::sys::procfs::{machine_cpu_ticks, CpuWait};
use analyse::TopologyRun;
pub use plan::{defaults, HopsPlan, HopsRequest};
use service::{Calls, Downstream, HopConfig, Role};
use trace::SpanLine;

/// What a run produced besides the summary: the spans, for the OTLP file.
#[derive(Debug)]
pub struct HopsOutput {
    pub summary: HopsSummary,
    pub spans: Vec<SpanLine>,
}

/// A running hop process.
struct HopProc {
    guard: ChildGuard,
    addr: SocketAddr,
}

/// The `child` role of a hop service (`child.rs` runs it).
pub const CHILD_ROLE: &str = "hop";

/// The command that starts `exe` as the hop service `config` describes (wrapped, since
/// a hop's own `role` is its place in the topology).
pub fn hop_command(exe: &Path, config: &HopConfig) -> std::process::Command {
    #[derive(serde::Serialize)]
    struct HopChild<'a> {
        hop: &'a HopConfig,
    }
    crate::sys::child::role_command(exe, CHILD_ROLE, &HopChild { hop: config })
}

fn start(
    plan: &HopsPlan,
    config: HopConfig,
    stderr: &Path,
    place: Option<&netns::Place>,
) -> Result<HopProc, LabError> {
    let role = config.role;
    let mut cmd = hop_command(&plan.exe, &config);
    if let Some(place) = place {
        place.enter(&mut cmd)?;
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(stderr)?);
    let mut guard = ChildGuard::spawn(cmd, "a hop service")?;
    let mut line = String::new();
    BufReader::new(guard.child.stdout.take().expect("piped")).read_line(&mut line)?;
    let addr = service::parse_ready_line(&line).ok_or_else(|| {
        let why = std::fs::read_to_string(stderr).unwrap_or_default();
        LabError::Failed(format!(
            "the {} service did not start: {}",
            role.as_str(),
            why.trim()
        ))
    })?;
    Ok(HopProc { guard, addr })
}

/// What the machine did around one topology run, read as the lab reads its runs: the
/// CPU wait of the topology's processes and of the load generator (`schedstat`), the
/// cores they used, and how busy the whole machine was. Taken just before the first
/// send and just after the last response.
struct Reading {
    at_ns: u64,
    /// The topology's processes, every thread.
    services_wait: Option<CpuWait>,
    /// This process's threads named [`GENERATOR_THREAD`]: the hops runtime's.
    generator_wait: Option<CpuWait>,
    services_cpu_s: Option<f64>,
    /// The whole lab process (the generator is what runs in it during a load).
    generator_cpu_s: Option<f64>,
    machine: Option<(u64, u64)>,
}

impl Reading {
    fn take(services: &[u32]) -> Reading {
        let own = std::process::id();
        let services_cpu_s = services
            .iter()
            .map(|&pid| cpu_seconds(pid))
            .sum::<Option<f64>>();
        Reading {
            at_ns: mono_ns(),
            services_wait: CpuWait::read(services, |_| true),
            generator_wait: CpuWait::read(&[own], |name| name == GENERATOR_THREAD),
            services_cpu_s,
            generator_cpu_s: cpu_seconds(own),
            machine: machine_cpu_ticks(),
        }
    }

    /// What happened from this reading to `later`, with the generator's lateness
    /// over the same load.
    fn until(&self, later: &Reading, send_lateness: Option<Lateness>) -> RunInterference {
        let window_s = later.at_ns.saturating_sub(self.at_ns) as f64 / 1e9;
        let wait = |a: &Option<CpuWait>, b: &Option<CpuWait>| {
            a.as_ref().zip(b.as_ref()).map(|(a, b)| b.ms_since(a))
        };
        let cores = |a: Option<f64>, b: Option<f64>| {
            a.zip(b)
                .filter(|_| window_s > 0.0)
                .map(|(a, b)| (b - a).max(0.0) / window_s)
        };
        let machine_busy = self
            .machine
            .zip(later.machine)
            .and_then(|((b0, a0), (b1, a1))| {
                (a1 > a0).then(|| b1.saturating_sub(b0) as f64 / (a1 - a0) as f64)
            });
        let services_cores = cores(self.services_cpu_s, later.services_cpu_s);
        let generator_cores = cores(self.generator_cpu_s, later.generator_cpu_s);
        let machine_cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        RunInterference {
            window_s,
            services_wait_ms: wait(&self.services_wait, &later.services_wait),
            generator_wait_ms: wait(&self.generator_wait, &later.generator_wait),
            services_cores,
            generator_cores,
            machine_busy,
            machine_warning: findings::machine_warning(
                services_cores,
                generator_cores,
                machine_cores,
                machine_busy,
            ),
            send_lateness,
        }
    }
}

/// Runs one topology: starts its processes, warms up, loads `/buy`, stops them with
/// SIGTERM (they write their spans) and reads the spans back.
#[allow(clippy::too_many_arguments)]
fn run_topology(
    plan: &HopsPlan,
    run_index: u8,
    topology: &'static str,
    traced: bool,
    dir: &Path,
    runtime: &tokio::runtime::Runtime,
    cancel: &AtomicBool,
) -> Result<(TopologyRun, Vec<SpanLine>, Vec<u8>), LabError> {
    let tag = format!("{topology}-{}", if traced { "traced" } else { "untraced" });
    let downstream_count = if topology == "monolith" { 0 } else { 2 };
    // Dropped at the end of this function, on every path: the namespaces go with it.
    let network = if plan.netns {
        Some(netns::Namespaces::create(run_index, downstream_count)?)
    } else {
        None
    };
    let place = |i: Option<usize>| {
        network.as_ref().map(|(_, front, rest)| match i {
            None => front.clone(),
            Some(i) => rest[i].clone(),
        })
    };
    let listen = |p: &Option<netns::Place>| -> SocketAddr {
        match p {
            Some(p) => (p.addr, 0).into(),
            None => ([127, 0, 0, 1], 0).into(),
        }
    };
    let config = |role: Role, listen: SocketAddr, downstream: Option<Downstream>| HopConfig {
        role,
        listen,
        downstream,
        calls: plan.calls,
        connection: plan.connection,
        work: plan.work,
        work_time: plan.work_time,
        body_bytes: plan.body_bytes,
        threads: plan.threads,
        spans: traced.then(|| dir.join(format!("{tag}-{}.jsonl", role.as_str()))),
        trace_every: plan.trace_every,
    };
    let stderr = |role: Role| dir.join(format!("{tag}-{}.stderr", role.as_str()));
    let mut procs = Vec::new();
    let front_place = place(None);
    let front = if topology == "monolith" {
        let p = start(
            plan,
            config(Role::Monolith, listen(&front_place), None),
            &stderr(Role::Monolith),
            front_place.as_ref(),
        )?;
        let addr = p.addr;
        procs.push(p);
        addr
    } else {
        let (payment_place, inventory_place) = (place(Some(0)), place(Some(1)));
        let payment = start(
            plan,
            config(Role::Payment, listen(&payment_place), None),
            &stderr(Role::Payment),
            payment_place.as_ref(),
        )?;
        let inventory = start(
            plan,
            config(Role::Inventory, listen(&inventory_place), None),
            &stderr(Role::Inventory),
            inventory_place.as_ref(),
        )?;
        let downstream = Downstream {
            payment: payment.addr,
            inventory: inventory.addr,
        };
        procs.push(payment);
        procs.push(inventory);
        let order = start(
            plan,
            config(Role::Order, listen(&front_place), Some(downstream)),
            &stderr(Role::Order),
            front_place.as_ref(),
        )?;
        let addr = order.addr;
        procs.push(order);
        addr
    };
    let target = Target {
        addr: front,
        host: front.to_string(),
        path: "/buy".into(),
    };
    for id in 0..plan.warmup {
        let one = LoadConfig::single(target.clone(), Connection::Keepalive, id as u64);
        let r = runtime.block_on(load::run(&one));
        if let Some(s) = r.samples.iter().find(|s| s.outcome != Outcome::Ok) {
            return Err(LabError::Failed(format!(
                "{topology}: warm-up request failed ({:?}, status {:?}): {}",
                s.outcome,
                s.status,
                std::fs::read_to_string(stderr(Role::Order)).unwrap_or_default()
            )));
        }
    }
    let body = fetch_body(front, "/buy", 0)?;
    let config = LoadConfig {
        target,
        rate: plan.rate.unwrap_or(1.0),
        duration: plan.duration,
        connection: Connection::Keepalive,
        closed: plan.users,
        grace: Duration::from_secs(30),
        first_id: plan.warmup as u64,
    };
    // What the machine did meanwhile, read as the lab reads its runs: just before the
    // first send and just after the last response.
    let pids: Vec<u32> = procs.iter().map(|p| p.guard.pid()).collect();
    let before = Reading::take(&pids);
    let result = runtime.block_on(async {
        tokio::select! {
            r = load::run(&config) => Some(r),
            () = crate::lab::watch(cancel) => None,
        }
    });
    let after = Reading::take(&pids);
    let Some(result) = result else {
        return Err(LabError::Cancelled);
    };
    // Lateness only has a meaning against a schedule: an open loop's.
    let lateness_ns: Vec<u64> = result.samples.iter().map(|s| s.send_lateness_ns).collect();
    let send_lateness = plan
        .users
        .is_none()
        .then(|| Lateness::of(&lateness_ns))
        .flatten();
    let interference = before.until(&after, send_lateness);
    // Spans carry CLOCK_REALTIME; a request's due time is CLOCK_MONOTONIC.
    let realtime_ahead_ns = realtime_ns() as i128 - mono_ns() as i128;
    let sends = result
        .samples
        .iter()
        .map(|s| {
            let due = (result.t0_mono_ns + s.scheduled_ns) as i128 + realtime_ahead_ns;
            (
                config.first_id + s.index,
                (due.max(0) as u64, s.send_lateness_ns),
            )
        })
        .collect();
    // SIGTERM: each process writes the spans it still holds, then exits.
    for p in procs.iter_mut().rev() {
        p.guard.stop_with(
            crate::sys::signal::Signal::Term,
            false,
            Duration::from_secs(10),
        );
    }
    let mut spans = Vec::new();
    if traced {
        for role in [Role::Monolith, Role::Order, Role::Payment, Role::Inventory] {
            let path = dir.join(format!("{tag}-{}.jsonl", role.as_str()));
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for line in text.lines().filter(|l| !l.is_empty()) {
                let span: SpanLine = serde_json::from_str(line).map_err(|e| {
                    LabError::Failed(format!(
                        "{}: a span line does not parse: {e}",
                        path.display()
                    ))
                })?;
                spans.push(span);
            }
        }
    }
    let errors = result
        .samples
        .iter()
        .filter(|s| s.outcome != Outcome::Ok)
        .count() as u64;
    let latencies = result
        .samples
        .iter()
        .filter(|s| s.outcome == Outcome::Ok)
        .filter_map(|s| s.latency_ns.map(|l| (config.first_id + s.index, l)))
        .collect();
    let wall_s = if plan.users.is_some() {
        plan.duration.as_secs_f64()
    } else {
        result
            .last_response_mono_ns()
            .map_or(plan.duration.as_secs_f64(), |t| {
                t.saturating_sub(result.t0_mono_ns) as f64 / 1e9
            })
            .max(plan.duration.as_secs_f64())
    };
    Ok((
        TopologyRun {
            topology,
            traced,
            latencies,
            errors,
            wall_s,
            offered_rps: plan.users.is_none().then_some(config.rate),
            sent: result.samples.len() as u64,
            interference: Some(interference),
            sends,
        },
        spans,
        body,
    ))
}

/// Now, as `CLOCK_REALTIME` ns (the spans' clock).
fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// One GET with `X-Request-Id: id`, returning the body: what the topologies are
/// compared on.
fn fetch_body(addr: SocketAddr, path: &str, id: u64) -> Result<Vec<u8>, LabError> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nX-Request-Id: {id}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let at = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| LabError::Failed(format!("{addr}{path}: no HTTP response")))?;
    if !response.starts_with(b"HTTP/1.1 200") {
        return Err(LabError::Failed(format!(
            "{addr}{path} answered {}",
            String::from_utf8_lossy(&response[..at])
        )));
    }
    Ok(response[at + 4..].to_vec())
}

/// `--sweep`: both topologies, untraced, at each offered rate in turn. A rate that
/// both topologies served at under half the offer ends the sweep: past it, only the
/// queue grows. Returns the points measured, and the error that stopped it, if any.
#[allow(clippy::too_many_arguments)]
fn sweep(
    plan: &HopsPlan,
    rates: &[f64],
    duration: Duration,
    dir: &Path,
    runtime: &tokio::runtime::Runtime,
    observer: &dyn Observer,
    cancel: &AtomicBool,
) -> (crate::report::HopsSweep, Option<LabError>) {
    let mut points = Vec::new();
    let mut error = None;
    'rates: for (i, &rate) in rates.iter().enumerate() {
        let at_rate = HopsPlan {
            users: None,
            rate: Some(rate),
            duration,
            ..plan.clone()
        };
        let mut overwhelmed = 0;
        for topology in ["monolith", "services"] {
            observer.progress(&format!(
                "sweep {}/{}: {topology} at {rate} requests/s",
                i + 1,
                rates.len()
            ));
            let index = (4 + 2 * i + usize::from(topology == "services")) as u8;
            let run = match run_topology(&at_rate, index, topology, false, dir, runtime, cancel) {
                Ok((run, _, _)) => run,
                Err(e) => {
                    error = Some(e);
                    break 'rates;
                }
            };
            let s = analyse::summarise(&run);
            if s.rps < 0.5 * rate {
                overwhelmed += 1;
            }
            points.push(crate::report::SweepPoint {
                offered_rps: rate,
                topology: topology.to_owned(),
                rps: s.rps,
                errors: s.errors,
                mean_ms: s.mean_ms,
                p50_ms: s.p50_ms,
                p99_ms: s.p99_ms,
                requests: Some(s.requests),
                interference: s.interference.clone(),
            });
        }
        if overwhelmed == 2 {
            break;
        }
    }
    let knees: Vec<_> = analyse::knees(&points)
        .into_iter()
        .map(|k| findings::judge_knee(k, &points, duration.as_secs_f64()))
        .collect();
    for k in &knees {
        observer.progress(&match k.knee_rps {
            Some(r) => format!(
                "{}: knee at {r} requests/s offered, capacity {:.0} requests/s{}",
                k.topology,
                k.capacity_rps,
                k.inconclusive
                    .as_ref()
                    .map_or(String::new(), |why| format!(" (inconclusive: {why})"))
            ),
            None => format!(
                "{}: kept up at every rate (up to {:.0} requests/s)",
                k.topology, k.capacity_rps
            ),
        });
    }
    let sweep = crate::report::HopsSweep {
        duration_s: duration.as_secs_f64(),
        points,
        knees,
    };
    (sweep, error)
}

/// The runs `run_hops` completed: each with its spans, and the body of request 0.
#[derive(Default)]
struct Completed {
    runs: Vec<TopologyRun>,
    spans: Vec<Vec<SpanLine>>,
    first_body: Option<(&'static str, Vec<u8>)>,
}

/// Runs both topologies (traced, then untraced when `plan.overhead`) and analyses them.
/// Returns what finished, and the error that stopped the runs, if any (Ctrl-C is
/// [`LabError::Cancelled`]): the analysis of the completed runs is always returned
/// when there is one, with [`HopsSummary::interrupted`] saying what is missing.
pub fn run_hops(
    plan: &HopsPlan,
    observer: &dyn Observer,
    cancel: &AtomicBool,
) -> (Option<HopsOutput>, Option<LabError>) {
    if let Err(e) = plan.validate() {
        return (None, Some(LabError::Failed(e.to_string())));
    }
    let (dir, stale) = match crate::sys::scratch::create("hops") {
        Ok(d) => d,
        Err(e) => return (None, Some(e.into())),
    };
    if let Some(warning) = stale {
        observer.warn(&warning);
    }
    if plan.netns {
        let stale = netns::remove_stale();
        if stale.namespaces > 0 || stale.veths > 0 {
            observer.warn(&format!(
                "removed {} network namespace(s) and {} veth pair(s) left by an earlier lab that was killed",
                stale.namespaces, stale.veths
            ));
        }
    }
    // Its threads are the load generator's: named so that their CPU wait is read.
    // An open loop on one worker, a closed one (--users) on a worker per core.
    let runtime = match load::runtime(plan.users.is_some(), GENERATOR_THREAD) {
        Ok(r) => r,
        Err(e) => return (None, Some(e.into())),
    };
    let mut order: Vec<(&'static str, bool)> = vec![("monolith", true), ("services", true)];
    if plan.overhead {
        order.extend([("monolith", false), ("services", false)]);
    }
    let mut done = Completed::default();
    let mut error = None;
    for (i, &(topology, traced)) in order.iter().enumerate() {
        if cancel.load(std::sync::atomic::Ordering::SeqCst) {
            error = Some(LabError::Cancelled);
            break;
        }
        let label = format!(
            "{topology} ({})",
            if traced { "traced" } else { "tracing off" }
        );
        observer.run_started(i, order.len(), &label);
        let (run, spans, body) = match run_topology(
            plan,
            i as u8,
            topology,
            traced,
            dir.path(),
            &runtime,
            cancel,
        ) {
            Ok(r) => r,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        match &done.first_body {
            None => done.first_body = Some((topology, body)),
            Some((first, expected)) if *expected != body => {
                // Not kept: the topologies would not be compared on the same answer.
                error = Some(LabError::Failed(format!(
                    "{first} and {topology} returned different bodies for request 0 ({} and {} bytes): the comparison would be meaningless",
                    expected.len(),
                    body.len()
                )));
                break;
            }
            Some(_) => {}
        }
        let s = analyse::summarise(&run);
        observer.progress(&format!(
            "{label}: p50 {:.2} ms, p99 {:.2} ms, {:.0} requests/s, {} errors, {} spans{}",
            s.p50_ms.unwrap_or(0.0),
            s.p99_ms.unwrap_or(0.0),
            s.rps,
            s.errors,
            spans.len(),
            s.interference.as_ref().map_or(String::new(), |i| format!(
                "; CPU wait {:.0} ms, machine {:.0}% busy",
                i.wait_ms().unwrap_or(0.0),
                i.machine_busy.unwrap_or(0.0) * 100.0
            ))
        ));
        done.runs.push(run);
        done.spans.push(spans);
    }
    if done.runs.is_empty() {
        return (None, error);
    }
    let sweep = match (&plan.sweep, &error) {
        (Some((rates, duration)), None) => {
            let (s, e) = sweep(
                plan,
                rates,
                *duration,
                dir.path(),
                &runtime,
                observer,
                cancel,
            );
            error = e;
            Some(s)
        }
        _ => None,
    };
    let mut output = analyse_runs(plan, done, sweep, observer);
    if let Some(e) = &error {
        output.summary.interrupted = Some(interrupted_note(e, &output.summary, order.len()));
    }
    (Some(output), error)
}

/// What a stopped lab leaves out, in words.
fn interrupted_note(e: &LabError, s: &HopsSummary, planned: usize) -> String {
    let why = match e {
        LabError::Cancelled => "interrupted (Ctrl-C)".to_owned(),
        LabError::Failed(m) => format!("stopped by a failure ({m})"),
    };
    let runs: Vec<String> = s
        .topologies
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                t.topology,
                if t.traced { "traced" } else { "untraced" }
            )
        })
        .collect();
    let missing = if s.tax.is_empty() {
        "; the tax needs both traced runs"
    } else if planned > s.topologies.len() {
        "; drift between runs is measured only where a topology has both runs"
    } else {
        ""
    };
    format!(
        "{why} after {} of {planned} runs ({}){missing}",
        s.topologies.len(),
        runs.join(", ")
    )
}

/// The summary of the completed runs: percentiles, the tax and its verdicts, what
/// tracing cost, the hop breakdown and the waterfalls.
fn analyse_runs(
    plan: &HopsPlan,
    done: Completed,
    sweep: Option<crate::report::HopsSweep>,
    observer: &dyn Observer,
) -> HopsOutput {
    let runs = &done.runs;
    let summaries: Vec<_> = runs.iter().map(analyse::summarise).collect();
    let traced = |t: &str| summaries.iter().find(|s| s.topology == t && s.traced);
    let run_of = |t: &str, tr: bool| runs.iter().find(|r| r.topology == t && r.traced == tr);
    let steps = match plan.calls {
        Calls::Sequential => 3.0,
        Calls::Concurrent => 2.0,
    };
    let saturation = analyse::saturation(
        plan.users,
        plan.rate,
        steps * plan.work_time.as_secs_f64() * 1e3,
        &summaries,
    );
    if let Some(s) = &saturation {
        observer.warn(s);
    }
    let mut waterfalls = Vec::new();
    for (run, spans) in runs.iter().zip(&done.spans) {
        if run.traced {
            waterfalls.extend(analyse::waterfall(run, spans, "p50", 0.50));
            waterfalls.extend(analyse::waterfall(run, spans, "p99", 0.99));
        }
    }
    let tax = match (traced("monolith"), traced("services")) {
        (Some(m), Some(s)) => {
            let rows = analyse::tax(m, s);
            let rows = match (run_of("monolith", true), run_of("services", true)) {
                (Some(mr), Some(sr)) => analyse::with_intervals(rows, mr, sr),
                _ => rows,
            };
            let evidence = findings::Evidence {
                runs: &summaries,
                waterfalls: &waterfalls,
                saturation: saturation.as_deref(),
            };
            findings::judge(&rows, &evidence)
        }
        _ => Vec::new(),
    };
    let tracing_cost: Vec<_> = ["monolith", "services"]
        .into_iter()
        .filter_map(|t| analyse::tracing_cost(run_of(t, true)?, run_of(t, false)?))
        .collect();
    let spans: Vec<SpanLine> = done.spans.into_iter().flatten().collect();
    let breakdown = analyse::breakdown(&spans);
    HopsOutput {
        summary: HopsSummary {
            params: HopsParams {
                users: plan.users,
                rate: plan.rate,
                duration_s: plan.duration.as_secs_f64(),
                calls: plan.calls.as_str().to_owned(),
                connection: plan.connection.as_str().to_owned(),
                work: plan.work.as_str().to_owned(),
                work_ms: plan.work_time.as_secs_f64() * 1e3,
                body_bytes: plan.body_bytes,
                threads: plan.threads,
                trace_every: plan.trace_every,
                netns: plan.netns,
            },
            tax_rule: (!tax.is_empty()).then(|| {
                findings::rule(
                    plan.users.is_none().then_some(plan.rate).flatten(),
                    plan.duration.as_secs_f64(),
                )
            }),
            topologies: summaries,
            tax,
            breakdown,
            waterfalls,
            spans_file: None,
            spans: spans.len(),
            identical_body_bytes: done.first_body.map_or(0, |(_, b)| b.len()),
            machine: crate::sys::procfs::machine(),
            saturation,
            tracing_cost,
            sweep,
            interrupted: None,
        },
        spans,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reading of this process and of nothing else: the generator's wait is read
    /// (when the kernel keeps schedstat), the window is positive, the machine's busy
    /// share a fraction.
    #[test]
    fn a_reading_measures_this_process_and_the_machine() {
        let before = Reading::take(&[]);
        let mut x = 0u64;
        for i in 0..200_000u64 {
            x = x.wrapping_add(i * i);
        }
        assert!(x > 0);
        let after = Reading::take(&[]);
        let i = before.until(&after, None);
        assert!(i.window_s > 0.0);
        assert!(
            i.machine_busy.is_none_or(|b| (0.0..=1.0).contains(&b)),
            "{i:?}"
        );
        assert!(i.generator_cores.is_some_and(|c| c >= 0.0), "{i:?}");
    }
}
