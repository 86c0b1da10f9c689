//! The contract between the lab and the processes it starts, above every role it
//! can start (so `sys/` stays plain OS code and no role imports another through it): one hidden subcommand,
//! `loglag child '<json>'`, whose argument is a [`ChildSpec`] serialised here and
//! parsed here. The lab never builds a child's command line from flag names, so
//! renaming a user-facing flag cannot break it, and a value keeps its type end to end
//! (the slow reader's rate is a `u64` from the plan to the read loop).

use std::net::SocketAddr;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::api::server::{self, ServeConfig};
use crate::load::Target;
use crate::reader;

/// The name of the hidden subcommand.
pub use crate::sys::child::SUBCOMMAND;

/// What a child process is asked to be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChildSpec {
    /// The sink reader under stdio control (`reader::client::CHILD_ROLE`).
    Reader(crate::reader::client::ReaderChild),
    /// The built-in API; prints its ready line on stdout once it listens
    /// (`api::launch::CHILD_ROLE`).
    Api(ServeConfig),
    /// The kill -9 torture's flooding process.
    Flood {
        spool: PathBuf,
        out: PathBuf,
        progress: PathBuf,
        /// Write through a rolling file sink rotating at this size, instead of one file.
        #[serde(default)]
        rotate_bytes: Option<u64>,
        #[serde(default)]
        policy: crate::report::FloodPolicy,
    },
    /// A `lab hops` service; prints its ready line once it listens
    /// (`hops::CHILD_ROLE`).
    Hop {
        hop: crate::hops::service::HopConfig,
    },
}

impl ChildSpec {
    /// The command that starts `exe` (the `loglag` binary) as this child.
    pub fn command(&self, exe: &Path) -> Command {
        let mut cmd = Command::new(exe);
        cmd.arg(SUBCOMMAND)
            .arg(serde_json::to_string(self).expect("a child spec serialises"));
        cmd
    }

    /// Parses the subcommand's argument.
    pub fn parse(json: &str) -> Result<ChildSpec, String> {
        serde_json::from_str(json).map_err(|e| {
            format!("`loglag {SUBCOMMAND}` is started by the lab, not by hand: invalid spec ({e})")
        })
    }

    /// Runs in the child: becomes what the spec says until told to stop or killed.
    pub fn run(self) -> std::io::Result<()> {
        match self {
            ChildSpec::Reader(r) => reader::control_stdio(&r.fifo, r.read, r.pipe_size),
            ChildSpec::Api(config) => {
                let condition = config.condition;
                server::serve(config, |listening| {
                    use std::io::Write;
                    println!("{}", server::ready_line(&listening, condition));
                    let _ = std::io::stdout().flush();
                })
            }
            ChildSpec::Flood {
                spool,
                out,
                progress,
                rotate_bytes,
                policy,
            } => crate::torture::flood(&spool, &out, &progress, rotate_bytes, policy),
            ChildSpec::Hop { hop } => crate::hops::service::serve(hop, |addr| {
                use std::io::Write;
                println!("{}", crate::hops::service::ready_line(addr));
                let _ = std::io::stdout().flush();
            }),
        }
    }
}

/// A null HTTP server (the built-in API, condition `none`, no hash work) in a child
/// process, for measuring the generator's own floor: whatever latency the load shows
/// against it is the instrument's, not an API's.
#[derive(Debug)]
pub struct NullServer {
    guard: crate::sys::child::ChildGuard,
    pub addr: SocketAddr,
}

impl NullServer {
    /// Starts `exe` as the null server; it dies with us.
    pub fn start(exe: &std::path::Path) -> std::io::Result<NullServer> {
        use std::io::BufRead;
        let mut cmd = crate::api::launch::builtin_command(
            exe,
            &crate::api::server::ServeConfig {
                hash_rounds: 0,
                ..crate::api::server::ServeConfig::new(crate::api::condition::Condition::None)
            },
        );
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit());
        let mut guard = crate::sys::child::ChildGuard::spawn(cmd, "the calibration server")?;
        let mut line = String::new();
        let stdout = guard.child.stdout.take().expect("piped");
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        let listening = crate::api::server::parse_ready_line(&line).ok_or_else(|| {
            std::io::Error::other(format!(
                "the calibration server did not start (it printed {line:?})"
            ))
        })?;
        Ok(NullServer {
            guard,
            addr: listening.http,
        })
    }

    pub fn target(&self) -> Target {
        Target {
            addr: self.addr,
            host: self.addr.to_string(),
            path: "/".into(),
        }
    }
}

impl Drop for NullServer {
    fn drop(&mut self) {
        self.guard.stop(std::time::Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::condition::Condition;
    use crate::reader::ReadConfig;

    fn parsed(cmd: &Command) -> ChildSpec {
        let args: Vec<_> = cmd.get_args().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(args[0], SUBCOMMAND);
        ChildSpec::parse(args[1]).unwrap()
    }

    /// Each role builds its own command (so that no role imports this list); what it
    /// builds is what this file parses, with every value and its type.
    #[test]
    fn every_role_starts_itself_as_the_spec_this_file_runs() {
        let exe = Path::new("/bin/loglag");
        let serve = ServeConfig {
            log_path: Some("/tmp/x.fifo".into()),
            ..ServeConfig::new(Condition::LoglagSpool)
        };
        assert_eq!(
            parsed(&crate::api::launch::builtin_command(exe, &serve)),
            ChildSpec::Api(serve)
        );
        let reader = crate::reader::client::ReaderChild {
            fifo: "/tmp/x.fifo".into(),
            read: ReadConfig {
                read_size: 512,
                rate: Some(1),
                inspect: Default::default(),
            },
            pipe_size: None,
        };
        assert_eq!(
            parsed(&crate::reader::client::reader_command(exe, &reader)),
            ChildSpec::Reader(reader)
        );
        use crate::hops::service::{Calls, HopConfig, Role, Work};
        let hop = HopConfig {
            role: Role::Monolith,
            listen: "127.0.0.1:0".parse().unwrap(),
            downstream: None,
            calls: Calls::Concurrent,
            connection: crate::load::Connection::Keepalive,
            work: Work::Spin,
            work_time: std::time::Duration::from_micros(750),
            body_bytes: 512,
            threads: 2,
            spans: Some("/tmp/spans.jsonl".into()),
            trace_every: 3,
        };
        assert_eq!(
            parsed(&crate::hops::hop_command(exe, &hop)),
            ChildSpec::Hop { hop }
        );
    }

    #[test]
    fn specs_round_trip_with_their_types() {
        for spec in [
            ChildSpec::Reader(crate::reader::client::ReaderChild {
                fifo: "/tmp/x.fifo".into(),
                read: ReadConfig {
                    read_size: 4096,
                    rate: Some(262_144),
                    inspect: Default::default(),
                },
                pipe_size: Some(1 << 20),
            }),
            ChildSpec::Api(ServeConfig {
                log_path: Some("/tmp/x.fifo".into()),
                write_delay: Some(std::time::Duration::from_micros(250)),
                ..ServeConfig::new(Condition::JsonQueue)
            }),
            ChildSpec::Flood {
                spool: "s".into(),
                out: "o".into(),
                progress: "p".into(),
                rotate_bytes: Some(300 << 10),
                policy: crate::report::FloodPolicy::Default,
            },
        ] {
            let cmd = spec.command(Path::new("/bin/loglag"));
            let args: Vec<_> = cmd.get_args().map(|a| a.to_str().unwrap()).collect();
            assert_eq!(args[0], SUBCOMMAND);
            assert_eq!(ChildSpec::parse(args[1]).unwrap(), spec);
        }
        let err = ChildSpec::parse("{\"role\":\"reader\"}").unwrap_err();
        assert!(err.contains("started by the lab"), "{err}");
    }
}
