//! The `/buy` endpoint two ways (reference 004): every step in one process
//! (`monolith`), or `order` calling `payment` and `inventory` over HTTP (`services`).
//! Each step does the same simulated work; both return byte-identical bodies.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use tokio::net::{TcpListener, TcpStream};
use tracing::{Instrument, Span};

use super::trace::{hex128, hex64, random_trace_id, random_u64, TraceContext};
use crate::load::Connection;

/// Which process this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Monolith,
    Order,
    Payment,
    Inventory,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Monolith => "monolith",
            Role::Order => "order",
            Role::Payment => "payment",
            Role::Inventory => "inventory",
        }
    }
}

/// `order`'s two downstream calls: one after the other (the reference), or both at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Calls {
    #[default]
    Sequential,
    Concurrent,
}

impl Calls {
    /// Its name, as flags and reports (serde) spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Calls::Sequential => "sequential",
            Calls::Concurrent => "concurrent",
        }
    }
}

impl std::str::FromStr for Calls {
    type Err = String;
    fn from_str(s: &str) -> Result<Calls, String> {
        match s.trim() {
            "sequential" => Ok(Calls::Sequential),
            "concurrent" => Ok(Calls::Concurrent),
            other => Err(format!(
                "unknown --calls {other:?}: expected sequential or concurrent"
            )),
        }
    }
}

/// How a step spends its simulated work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Work {
    /// An async sleep: the thread is free meanwhile (waiting on a database, say).
    #[default]
    Sleep,
    /// A busy loop: the thread is held (computing).
    Spin,
}

impl Work {
    /// Its name, as flags and reports (serde) spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Work::Sleep => "sleep",
            Work::Spin => "spin",
        }
    }
}

impl std::str::FromStr for Work {
    type Err = String;
    fn from_str(s: &str) -> Result<Work, String> {
        match s.trim() {
            "sleep" => Ok(Work::Sleep),
            "spin" => Ok(Work::Spin),
            other => Err(format!("unknown --work {other:?}: expected sleep or spin")),
        }
    }
}

/// Where `order` finds the other two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Downstream {
    pub payment: SocketAddr,
    pub inventory: SocketAddr,
}

/// One hop process's settings; the lab passes it through the child contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HopConfig {
    pub role: Role,
    /// Address to listen on (port 0 picks one).
    pub listen: SocketAddr,
    pub downstream: Option<Downstream>,
    pub calls: Calls,
    /// `order`'s outgoing connections.
    pub connection: Connection,
    pub work: Work,
    /// Simulated work per step (1 ms in the reference).
    pub work_time: Duration,
    pub body_bytes: usize,
    pub threads: usize,
    /// Span lines go here (through a loglag pipeline) when tracing is on.
    pub spans: Option<PathBuf>,
    /// Trace one request in this many (by X-Request-Id).
    pub trace_every: u64,
}

/// The line a hop process prints once it listens.
pub fn ready_line(addr: SocketAddr) -> String {
    format!("listening http://{addr} pid={}", std::process::id())
}

/// Parses [`ready_line`].
pub fn parse_ready_line(line: &str) -> Option<SocketAddr> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))?
        .parse()
        .ok()
}

type Pool = Mutex<Vec<SendRequest<Full<Bytes>>>>;

struct Hop {
    config: HopConfig,
    payment_pool: Pool,
    inventory_pool: Pool,
}

/// A step's response body: deterministic in the request id, padded to `body_bytes`.
pub fn step_body(step: &str, id: u64, body_bytes: usize) -> String {
    let head = format!("{{\"step\":\"{step}\",\"id\":{id},\"ok\":true,\"pad\":\"");
    let pad = body_bytes.saturating_sub(head.len() + 2);
    let mut body = head;
    body.extend(std::iter::repeat_n('x', pad));
    body.push_str("\"}");
    body
}

/// `/buy`'s body, from its own step and the two others' bodies: the same bytes in both
/// topologies.
pub fn buy_body(id: u64, body_bytes: usize, payment: &[u8], inventory: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(3 * body_bytes + 64);
    body.extend_from_slice(b"{\"order\":");
    body.extend_from_slice(step_body("order", id, body_bytes).as_bytes());
    body.extend_from_slice(b",\"payment\":");
    body.extend_from_slice(payment);
    body.extend_from_slice(b",\"inventory\":");
    body.extend_from_slice(inventory);
    body.extend_from_slice(b"}");
    body
}

/// A server-side span (or none, when this request is not traced).
fn server_span(name: &'static str, ctx: Option<TraceContext>, span_id: u64, id: u64) -> Span {
    match ctx {
        Some(c) if c.sampled => tracing::info_span!(
            "server",
            otel.name = name,
            trace_id = %hex128(c.trace_id),
            span_id = %hex64(span_id),
            parent_id = %if c.parent_id == 0 { String::new() } else { hex64(c.parent_id) },
            kind = 2u64,
            request_id = id
        ),
        _ => Span::none(),
    }
}

impl Hop {
    async fn work(&self) {
        match self.config.work {
            // tokio's timer rounds up to whole milliseconds, which would turn 1 ms of
            // work into about 2 and hide a sub-millisecond hop inside the rounding: a
            // timerfd on an absolute deadline, with no spin, sleeps to a few µs.
            Work::Sleep => {
                let due = crate::sys::clock::mono_ns() + self.config.work_time.as_nanos() as u64;
                match crate::load::Pacer::new() {
                    Ok(p) => {
                        let p = p.for_interval(Duration::ZERO);
                        if p.until(due).await.is_err() {
                            tokio::time::sleep(self.config.work_time).await;
                        }
                    }
                    Err(_) => tokio::time::sleep(self.config.work_time).await,
                }
            }
            Work::Spin => {
                let until = Instant::now() + self.config.work_time;
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
        }
    }

    /// One step done in-process (monolith): an internal span under `parent`.
    async fn local_step(&self, step: &'static str, id: u64, trace: Option<(u128, u64)>) -> Vec<u8> {
        let span = match trace {
            Some((t, parent)) => tracing::info_span!(
                "internal",
                otel.name = step,
                trace_id = %hex128(t),
                span_id = %hex64(random_u64()),
                parent_id = %hex64(parent),
                kind = 1u64,
                request_id = id
            ),
            None => Span::none(),
        };
        async {
            self.work().await;
            step_body(step, id, self.config.body_bytes).into_bytes()
        }
        .instrument(span)
        .await
    }

    /// One step called over HTTP (services): a client span, `traceparent` naming it.
    async fn remote_step(
        &self,
        step: &'static str,
        id: u64,
        trace: Option<(u128, u64)>,
    ) -> io::Result<Vec<u8>> {
        let downstream = self
            .config
            .downstream
            .ok_or_else(|| io::Error::other("order has no downstream"))?;
        let (addr, path, pool) = match step {
            "payment" => (downstream.payment, "/pay", &self.payment_pool),
            _ => (downstream.inventory, "/reserve", &self.inventory_pool),
        };
        let client_id = random_u64();
        let span = match trace {
            Some((t, parent)) => tracing::info_span!(
                "client",
                otel.name = step,
                trace_id = %hex128(t),
                span_id = %hex64(client_id),
                parent_id = %hex64(parent),
                kind = 3u64,
                request_id = id
            ),
            None => Span::none(),
        };
        let keepalive = self.config.connection == Connection::Keepalive;
        async {
            let pooled = if keepalive {
                pool.lock().unwrap_or_else(|e| e.into_inner()).pop()
            } else {
                None
            };
            let mut sender = match pooled {
                Some(s) => s,
                None => {
                    let stream = TcpStream::connect(addr).await?;
                    let _ = stream.set_nodelay(true);
                    let (sender, conn) =
                        hyper::client::conn::http1::handshake(TokioIo::new(stream))
                            .await
                            .map_err(io::Error::other)?;
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                    tracing::info!("connected");
                    sender
                }
            };
            let traceparent = TraceContext {
                trace_id: trace.map_or(0, |(t, _)| t),
                parent_id: client_id,
                sampled: trace.is_some(),
            };
            let mut request = Request::get(path)
                .header(hyper::header::HOST, addr.to_string())
                .header("x-request-id", id);
            if trace.is_some() {
                request = request.header("traceparent", traceparent.header());
            }
            if !keepalive {
                request = request.header(hyper::header::CONNECTION, "close");
            }
            let request = request
                .body(Full::new(Bytes::new()))
                .map_err(io::Error::other)?;
            sender.ready().await.map_err(io::Error::other)?;
            let response = sender
                .send_request(request)
                .await
                .map_err(io::Error::other)?;
            tracing::info!("response_headers");
            if !response.status().is_success() {
                return Err(io::Error::other(format!(
                    "{step} answered {}",
                    response.status()
                )));
            }
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(io::Error::other)?
                .to_bytes();
            if keepalive && !sender.is_closed() {
                pool.lock().unwrap_or_else(|e| e.into_inner()).push(sender);
            }
            Ok(body.to_vec())
        }
        .instrument(span)
        .await
    }

    async fn buy(&self, id: u64, incoming: Option<TraceContext>) -> io::Result<Vec<u8>> {
        // The root of the trace: this request is traced when the id says so, or when a
        // caller already traces it.
        let ctx = incoming.or_else(|| {
            (id % self.config.trace_every.max(1) == 0).then(|| TraceContext {
                trace_id: random_trace_id(),
                parent_id: 0,
                sampled: true,
            })
        });
        let span_id = random_u64();
        let span = server_span("POST /buy", ctx, span_id, id);
        let trace = ctx.filter(|c| c.sampled).map(|c| (c.trace_id, span_id));
        async {
            self.work().await;
            let remote = self.config.role == Role::Order;
            let step = |name: &'static str| async move {
                if remote {
                    self.remote_step(name, id, trace).await
                } else {
                    Ok(self.local_step(name, id, trace).await)
                }
            };
            let (payment, inventory) = match self.config.calls {
                Calls::Sequential => (step("payment").await?, step("inventory").await?),
                Calls::Concurrent => {
                    let (p, i) = tokio::join!(step("payment"), step("inventory"));
                    (p?, i?)
                }
            };
            Ok(buy_body(id, self.config.body_bytes, &payment, &inventory))
        }
        .instrument(span)
        .await
    }

    async fn serve_step(&self, step: &'static str, id: u64, ctx: Option<TraceContext>) -> Vec<u8> {
        let span = server_span(
            if step == "payment" {
                "GET /pay"
            } else {
                "GET /reserve"
            },
            ctx,
            random_u64(),
            id,
        );
        async {
            self.work().await;
            step_body(step, id, self.config.body_bytes).into_bytes()
        }
        .instrument(span)
        .await
    }

    async fn handle(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
        let id = header("x-request-id")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        let ctx = header("traceparent").and_then(TraceContext::parse);
        let result = match (self.config.role, req.uri().path()) {
            (Role::Monolith | Role::Order, "/buy") => self.buy(id, ctx).await,
            (Role::Payment, "/pay") => Ok(self.serve_step("payment", id, ctx).await),
            (Role::Inventory, "/reserve") => Ok(self.serve_step("inventory", id, ctx).await),
            (role, path) => {
                let mut r = Response::new(Full::new(Bytes::from(format!(
                    "{} serves no {path}\n",
                    role.as_str()
                ))));
                *r.status_mut() = hyper::StatusCode::NOT_FOUND;
                return r;
            }
        };
        match result {
            Ok(body) => Response::new(Full::new(Bytes::from(body))),
            Err(e) => {
                let mut r = Response::new(Full::new(Bytes::from(format!(
                    "{{\"error\":\"{}\"}}",
                    e.to_string().replace('"', "'")
                ))));
                *r.status_mut() = hyper::StatusCode::BAD_GATEWAY;
                r
            }
        }
    }
}

/// Runs a hop process until SIGTERM or SIGINT, then writes the spans it still holds
/// and returns. `ready` is called once it listens.
pub fn serve(config: HopConfig, ready: impl FnOnce(SocketAddr)) -> io::Result<()> {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = match &config.spans {
        Some(path) => {
            let file = std::fs::File::create(path).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
            })?;
            // Spans leave the request path through loglag itself.
            let (nb, guard) = loglag::NonBlockingBuilder::default()
                .thread_name("span-writer")
                .build(file)?;
            let subscriber = tracing_subscriber::registry().with(super::trace::SpanExporter::new(
                config.role.as_str(),
                nb.clone(),
            ));
            tracing::subscriber::set_global_default(subscriber)
                .map_err(|e| io::Error::other(format!("cannot install the span layer: {e}")))?;
            Some((nb, guard))
        }
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads.max(1))
        .enable_all()
        .build()?;
    let hop = Arc::new(Hop {
        config: config.clone(),
        payment_pool: Mutex::default(),
        inventory_pool: Mutex::default(),
    });
    let result = runtime.block_on(async move {
        let listener = TcpListener::bind(config.listen).await.map_err(|e| {
            io::Error::new(e.kind(), format!("cannot listen on {}: {e}", config.listen))
        })?;
        ready(listener.local_addr()?);
        let accept = async {
            loop {
                let (stream, _) = listener.accept().await?;
                let _ = stream.set_nodelay(true);
                let hop = hop.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let hop = hop.clone();
                        async move { Ok::<_, Infallible>(hop.handle(req).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            #[allow(unreachable_code)]
            Ok::<(), io::Error>(())
        };
        crate::sys::stop::serve_until_stopped(accept)
            .await
            .map(drop)
    });
    runtime.shutdown_background();
    if let Some((nb, guard)) = spans {
        let _ = nb.flush(Duration::from_secs(10));
        drop(guard);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are their serde names, which reports carry.
    #[test]
    fn names_are_their_serde_names() {
        for c in [Calls::Sequential, Calls::Concurrent] {
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
        for w in [Work::Sleep, Work::Spin] {
            assert_eq!(serde_json::to_value(w).unwrap(), w.as_str());
        }
    }

    #[test]
    fn bodies_have_their_size_and_are_the_same_both_ways() {
        let body = step_body("payment", 42, 256);
        assert_eq!(body.len(), 256);
        serde_json::from_str::<serde_json::Value>(&body).unwrap();
        let buy = buy_body(
            42,
            256,
            body.as_bytes(),
            step_body("inventory", 42, 256).as_bytes(),
        );
        let v: serde_json::Value = serde_json::from_slice(&buy).unwrap();
        assert_eq!(v["payment"]["id"], 42);
        assert_eq!(v["inventory"]["step"], "inventory");
    }
}
