//! The contract between the lab and the processes it starts: one hidden subcommand,
//! `loglag child '<json>'`, whose argument is a [`ChildSpec`] serialised here and
//! parsed here. The lab never builds a child's command line from flag names, so
//! renaming a user-facing flag cannot break it, and a value keeps its type end to end
//! (the slow reader's rate is a `u64` from the plan to the read loop).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::api::server::{self, ServeConfig};
use crate::reader::{self, ReadConfig};

/// The name of the hidden subcommand.
pub const SUBCOMMAND: &str = "child";

/// What a child process is asked to be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChildSpec {
    /// The sink reader under stdio control: reads `fifo`, answers `stats`, `reset`
    /// and `exit` on stdin/stdout.
    Reader {
        fifo: PathBuf,
        read: ReadConfig,
        /// F_SETPIPE_SZ for the FIFO.
        pipe_size: Option<usize>,
    },
    /// The built-in API; prints its ready line on stdout once it listens.
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
        policy: crate::torture::FloodPolicy,
    },
    /// A `lab hops` service; prints its ready line once it listens.
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
            ChildSpec::Reader {
                fifo,
                read,
                pipe_size,
            } => reader::control_stdio(&fifo, read, pipe_size),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::condition::Condition;

    #[test]
    fn specs_round_trip_with_their_types() {
        for spec in [
            ChildSpec::Reader {
                fifo: "/tmp/x.fifo".into(),
                read: ReadConfig {
                    read_size: 4096,
                    rate: Some(262_144),
                    inspect: Default::default(),
                },
                pipe_size: Some(1 << 20),
            },
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
                policy: crate::torture::FloodPolicy::Default,
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
