//! `loglag lab hops` (reference 004): the same `/buy` endpoint as one process and as
//! three, under the same load; the latency tax of the service boundary, where it goes
//! (from propagated traces), and what collecting the traces cost.

pub mod analyse;
pub mod netns;
pub mod service;
pub mod trace;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::lab::{LabError, Observer};
use crate::load::{self, Connection, LoadConfig, Outcome, Target};
use crate::plan_error::PlanError;
use crate::report::{HopsParams, HopsSummary};
use crate::sys::child::ChildGuard;
use analyse::TopologyRun;
use service::{Calls, Downstream, HopConfig, Role, Work};
use trace::SpanLine;

/// What `lab hops` is asked to do.
#[derive(Debug, Clone)]
pub struct HopsPlan {
    /// Closed loop with this many users, or open loop at `rate`.
    pub users: Option<usize>,
    pub rate: Option<f64>,
    pub duration: Duration,
    pub calls: Calls,
    pub connection: Connection,
    pub work: Work,
    pub work_time: Duration,
    pub body_bytes: usize,
    pub threads: usize,
    pub trace_every: u64,
    /// Also run each topology untraced, to report what tracing cost.
    pub overhead: bool,
    pub warmup: usize,
    pub exe: PathBuf,
    /// Each service in its own network namespace, linked by veth pairs (root only).
    pub netns: bool,
    /// `--sweep`: after the runs above, both topologies untraced at each of these
    /// offered rates (open loop), for this long each.
    pub sweep: Option<(Vec<f64>, Duration)>,
}

/// `lab hops`'s defaults, stated once: the CLI shows them in `--help`.
pub mod defaults {
    /// Open-loop requests per second when neither a rate nor users are given: well
    /// below both topologies' capacity on 2 cores, as the reference's unsaturated
    /// service was.
    pub const RATE: f64 = 200.0;
    /// How long each topology is loaded.
    pub const DURATION: &str = "10s";
    /// Work per step.
    pub const WORK_TIME: &str = "1ms";
    /// Bytes of each step's response body.
    pub const BODY_BYTES: usize = 256;
    /// One request in this many is traced.
    pub const TRACE_EVERY: u64 = 10;
    /// `--sweep`'s offered rates, requests/s, and its load per point.
    pub const SWEEP_RATES: &str = "100,200,500,1000,2000,5000,10000,20000";
    pub const SWEEP_DURATION: &str = "3s";
    /// Requests before the measured load.
    pub const WARMUP: usize = 5;
    /// The smallest response body: the JSON around the padding.
    pub const MIN_BODY_BYTES: usize = 64;
}

impl HopsPlan {
    /// Checks what the plan's own values must satisfy, whoever built it.
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err(PlanError::NotPositive(
                "--rate",
                "a positive number of requests per second",
            ));
        }
        if self.users == Some(0) {
            return Err(PlanError::AtLeastOne("--users", ""));
        }
        if self.duration.is_zero() {
            return Err(PlanError::NotPositive("--duration", "positive"));
        }
        if self.threads == 0 {
            return Err(PlanError::AtLeastOne("--threads", ""));
        }
        if self.body_bytes < defaults::MIN_BODY_BYTES {
            return Err(PlanError::OutOfRange(
                "--body-bytes",
                "at least 64 (the JSON around the padding)",
            ));
        }
        if let Some((rates, duration)) = &self.sweep {
            if rates.is_empty() || rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
                return Err(PlanError::NotPositive(
                    "--sweep-rates",
                    "positive numbers of requests per second",
                ));
            }
            if duration.is_zero() {
                return Err(PlanError::NotPositive("--sweep-duration", "positive"));
            }
        }
        Ok(())
    }
}

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
    let result = runtime.block_on(async {
        tokio::select! {
            r = load::run(&config) => Some(r),
            () = crate::lab::watch(cancel) => None,
        }
    });
    let Some(result) = result else {
        return Err(LabError::Cancelled);
    };
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
        },
        spans,
        body,
    ))
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
/// queue grows.
#[allow(clippy::too_many_arguments)]
fn sweep(
    plan: &HopsPlan,
    rates: &[f64],
    duration: Duration,
    dir: &Path,
    runtime: &tokio::runtime::Runtime,
    observer: &dyn Observer,
    cancel: &AtomicBool,
) -> Result<crate::report::HopsSweep, LabError> {
    let mut points = Vec::new();
    for (i, &rate) in rates.iter().enumerate() {
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
            let (run, _, _) = run_topology(&at_rate, index, topology, false, dir, runtime, cancel)?;
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
            });
        }
        if overwhelmed == 2 {
            break;
        }
    }
    let knees = analyse::knees(&points);
    for k in &knees {
        observer.progress(&match k.knee_rps {
            Some(r) => format!(
                "{}: knee at {r} requests/s offered, capacity {:.0} requests/s",
                k.topology, k.capacity_rps
            ),
            None => format!(
                "{}: kept up at every rate (up to {:.0} requests/s)",
                k.topology, k.capacity_rps
            ),
        });
    }
    Ok(crate::report::HopsSweep {
        duration_s: duration.as_secs_f64(),
        points,
        knees,
    })
}

/// Runs both topologies (traced, then untraced when `plan.overhead`) and analyses them.
pub fn run_hops(
    plan: &HopsPlan,
    observer: &dyn Observer,
    cancel: &AtomicBool,
) -> Result<HopsOutput, LabError> {
    plan.validate()
        .map_err(|e| LabError::Failed(e.to_string()))?;
    let (dir, stale) = crate::sys::scratch::create("hops")?;
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut order: Vec<(&'static str, bool)> = vec![("monolith", true), ("services", true)];
    if plan.overhead {
        order.extend([("monolith", false), ("services", false)]);
    }
    let mut runs = Vec::new();
    let mut all_spans = Vec::new();
    let mut first_body: Option<(&str, Vec<u8>)> = None;
    for (i, &(topology, traced)) in order.iter().enumerate() {
        let label = format!(
            "{topology} ({})",
            if traced { "traced" } else { "tracing off" }
        );
        observer.run_started(i, order.len(), &label);
        let (run, spans, body) = run_topology(
            plan,
            i as u8,
            topology,
            traced,
            dir.path(),
            &runtime,
            cancel,
        )?;
        match &first_body {
            None => first_body = Some((topology, body)),
            Some((first, expected)) if *expected != body => {
                return Err(LabError::Failed(format!(
                    "{first} and {topology} returned different bodies for request 0 ({} and {} bytes): the comparison would be meaningless",
                    expected.len(),
                    body.len()
                )))
            }
            Some(_) => {}
        }
        let s = analyse::summarise(&run);
        observer.progress(&format!(
            "{label}: p50 {:.2} ms, p99 {:.2} ms, {:.0} requests/s, {} errors, {} spans",
            s.p50_ms.unwrap_or(0.0),
            s.p99_ms.unwrap_or(0.0),
            s.rps,
            s.errors,
            spans.len()
        ));
        runs.push((run, spans.len()));
        all_spans.push(spans);
    }
    let summaries: Vec<_> = runs.iter().map(|(r, _)| analyse::summarise(r)).collect();
    let traced = |t: &str| summaries.iter().find(|s| s.topology == t && s.traced);
    let run_of = |t: &str, tr: bool| {
        runs.iter()
            .map(|(r, _)| r)
            .find(|r| r.topology == t && r.traced == tr)
    };
    let tax = match (traced("monolith"), traced("services")) {
        (Some(m), Some(s)) => {
            let rows = analyse::tax(m, s);
            match (run_of("monolith", true), run_of("services", true)) {
                (Some(mr), Some(sr)) => analyse::with_intervals(rows, mr, sr),
                _ => rows,
            }
        }
        _ => Vec::new(),
    };
    let tracing_cost: Vec<_> = ["monolith", "services"]
        .into_iter()
        .filter_map(|t| analyse::tracing_cost(run_of(t, true)?, run_of(t, false)?))
        .collect();
    let mut waterfalls = Vec::new();
    for ((run, _), spans) in runs.iter().zip(&all_spans) {
        if run.traced {
            waterfalls.extend(analyse::waterfall(run, spans, "p50", 0.50));
            waterfalls.extend(analyse::waterfall(run, spans, "p99", 0.99));
        }
    }
    let spans: Vec<SpanLine> = all_spans.into_iter().flatten().collect();
    let breakdown = analyse::breakdown(&spans);
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
    Ok(HopsOutput {
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
            topologies: summaries,
            tax,
            breakdown,
            waterfalls,
            spans_file: None,
            spans: spans.len(),
            identical_body_bytes: first_body.map_or(0, |(_, b)| b.len()),
            machine: crate::sys::procfs::machine(),
            saturation,
            tracing_cost,
            sweep: match &plan.sweep {
                Some((rates, duration)) => Some(sweep(
                    plan,
                    rates,
                    *duration,
                    dir.path(),
                    &runtime,
                    observer,
                    cancel,
                )?),
                None => None,
            },
        },
        spans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value the plan cannot run with is refused naming its flag, by the plan
    /// itself (the CLI only builds it); a good plan passes.
    #[test]
    fn a_plan_names_what_it_cannot_run_with() {
        let good = || HopsPlan {
            users: None,
            rate: Some(defaults::RATE),
            duration: Duration::from_secs(1),
            calls: Calls::default(),
            connection: Connection::New,
            work: Work::default(),
            work_time: Duration::from_millis(1),
            body_bytes: defaults::BODY_BYTES,
            threads: 1,
            trace_every: defaults::TRACE_EVERY,
            overhead: false,
            warmup: defaults::WARMUP,
            exe: PathBuf::from("loglag"),
            netns: false,
            sweep: Some((vec![100.0], Duration::from_secs(1))),
        };
        assert_eq!(good().validate(), Ok(()));
        let refused = |change: fn(&mut HopsPlan)| {
            let mut plan = good();
            change(&mut plan);
            plan.validate().unwrap_err().to_string()
        };
        assert!(refused(|p| p.rate = Some(0.0)).starts_with("--rate must be"));
        assert_eq!(
            refused(|p| p.duration = Duration::ZERO),
            "--duration must be positive"
        );
        assert_eq!(refused(|p| p.threads = 0), "--threads must be at least 1");
        assert!(refused(|p| p.body_bytes = 10).starts_with("--body-bytes must be at least 64"));
        assert!(
            refused(|p| p.sweep = Some((vec![100.0, -1.0], Duration::from_secs(1))))
                .starts_with("--sweep-rates must be")
        );
        assert_eq!(
            refused(|p| p.sweep = Some((vec![100.0], Duration::ZERO))),
            "--sweep-duration must be positive"
        );
    }
}
