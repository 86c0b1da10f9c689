//! Stage one: syntax. Validation into plans happens in `commands`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use loglag_lab::api::condition::RecordShape;
use loglag_lab::lab::LabRequest;
use loglag_lab::load::Connection;
use loglag_lab::sys::units::parse_duration;

/// Measure what logging costs an HTTP API.
// The longer text (`loglag --help`) is written in `command`, where the counts it gives
// come from the lab's own lists.
#[derive(Debug, Parser)]
#[command(name = "loglag", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// What logging costs an API (the built-in one, or yours with --app): the answer,
    /// then the tables; results kept in loglag-results/.
    Lab(Box<LabArgs>),
    /// Open-loop (or closed-loop) HTTP load with latency from the scheduled send.
    Load(LoadArgs),
    /// Read a FIFO or TCP stream at a capped rate, counting bytes, lines and SHA-256.
    Sink(SinkArgs),
    /// Run the built-in API under test.
    Serve(ServeArgs),
    /// Render any command's --out directory (by its manifest.json) as one self-contained HTML page.
    Report(ReportArgs),
    /// Fault injection: kill -9 a flooding process at random moments and check recovery.
    Torture(TortureArgs),
    /// Deliver what a spool file still holds, without the application.
    Recover(RecoverArgs),
    /// Pump numbered test records (seq=0, 1, ...) through the pipeline into a sink and
    /// print the final metrics: a smoke test for a logging setup.
    Emit(EmitArgs),
    /// A process the lab starts (reader, API, flooder), configured by a JSON spec that
    /// only the lab writes. Not for use by hand.
    #[command(hide = true)]
    Child(ChildArgs),
}

#[derive(Debug, Args)]
pub struct ChildArgs {
    /// A `loglag_lab::child::ChildSpec` as JSON.
    pub spec: String,
}

/// `loglag torture`: what it runs is the lab's request type; here only where its
/// results go.
#[derive(Debug, Args)]
pub struct TortureArgs {
    #[command(flatten)]
    pub request: loglag_lab::torture::request::TortureRequest,
    /// Output format (md or json: its results are several tables).
    #[arg(long, value_enum, default_value_t = OutputFormat::Md)]
    pub format: OutputFormat,
    /// Also write summary.json, the table (Markdown) and manifest.json here;
    /// `loglag report DIR` draws them as a page.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `loglag emit`: what it emits is the lab's plan type; here only what becomes of
/// its summary.
#[derive(Debug, Args)]
pub struct EmitArgs {
    #[command(flatten)]
    pub plan: loglag_lab::emit::EmitPlan,
    /// Exit 0 even when records were dropped.
    #[arg(long)]
    pub allow_drops: bool,
    /// Format of the summary (on stderr when the sink is stdout).
    #[arg(long, value_enum, default_value_t = OutputFormat::Md)]
    pub format: OutputFormat,
    /// Also write summary.json, the table (Markdown and CSV) and manifest.json here;
    /// `loglag report DIR` draws them as a page.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
    loglag recover /var/spool/app.loglag -o recovered.log
    loglag recover /var/spool/app.loglag            # to stdout")]
pub struct RecoverArgs {
    /// The spool file given to NonBlockingBuilder::spool.
    pub spool: PathBuf,
    /// Append the records to this file ('-' or absent: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
    loglag report results -o report.html
    loglag lab --out results                 # writes results/report.html at the end
    loglag load http://127.0.0.1:8080/ --out load && loglag report load

Every --out directory holds a manifest.json naming the command that wrote it and its
files; the report reads it. A preset's steps get their own pages in their directories.")]
pub struct ReportArgs {
    /// A directory written by --out (lab, lab --preset, lab hops, load, sink, emit or
    /// torture).
    pub dir: PathBuf,
    /// Where to write the HTML ('-' for stdout) [default: DIR/report.html].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Output format on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Md,
    Json,
    Csv,
}

/// `loglag lab`: the flags that shape its runs are the lab's own request type; here
/// only where its results go.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LabArgs {
    #[command(subcommand)]
    pub sub: Option<LabCommand>,
    #[command(flatten)]
    pub request: LabRequest,
    /// Write summary.json, pairs.csv, runs.csv, requests.csv, timeseries.csv,
    /// report.html and manifest.json here (a preset: one subdirectory per step, and
    /// preset.md and preset.json) [default: a fresh loglag-results/<UTC time>/ in
    /// the current directory].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep nothing: only the headline and the tables on stdout. By default the
    /// results and their report.html are kept in loglag-results/<UTC time>/.
    #[arg(long, conflicts_with = "out")]
    pub no_keep: bool,
    /// Format of the table on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Md)]
    pub format: OutputFormat,
    /// The tables' columns on stdout (md): those the headline speaks of, or all of
    /// them (summary.json, the CSVs and pairs.md always have all).
    #[arg(long, value_enum, default_value_t = ColumnsArg::Headline)]
    pub columns: ColumnsArg,
    /// report.html is now written wherever the results are kept: this flag, which
    /// asked for it, changes nothing.
    #[arg(long, hide = true, conflicts_with = "no_keep")]
    pub report: bool,
    /// Compare each condition's cost with a saved run's (its summary.json, or its
    /// directory) by the findings' rule: exit 1 when a cost grew beyond its interval
    /// and the growth holds. Writes against.md beside the results.
    #[arg(long, value_name = "BASELINE/summary.json")]
    pub against: Option<PathBuf>,
    /// With --against: compare even with a baseline from another kind of machine or
    /// with other settings (the comparison lists each difference).
    #[arg(long, requires = "against")]
    pub force: bool,
}

/// `loglag lab --columns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColumnsArg {
    /// The columns the headline speaks of.
    Headline,
    /// Every column.
    All,
}

impl From<ColumnsArg> for loglag_lab::export::Columns {
    fn from(c: ColumnsArg) -> loglag_lab::export::Columns {
        match c {
            ColumnsArg::Headline => loglag_lab::export::Columns::Headline,
            ColumnsArg::All => loglag_lab::export::Columns::All,
        }
    }
}

/// Experiments other than logging's.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// The latency cost of a service boundary: one /buy endpoint as in-process calls
    /// and as three HTTP services, traced.
    Hops(HopsArgs),
}

/// `loglag lab hops`: what it runs is the lab's request type; here only where its
/// results go.
#[derive(Debug, Args)]
pub struct HopsArgs {
    #[command(flatten)]
    pub request: loglag_lab::hops::HopsRequest,
    /// Write summary.json (its `hops` section), hops.md and spans.otlp.json here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write DIR/report.html: percentiles, the tax, a stacked bar per hop and
    /// waterfalls (needs --out).
    #[arg(long, requires = "out")]
    pub report: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
    loglag load http://127.0.0.1:8080/ --rate 20 --duration 8s
    loglag load http://127.0.0.1:8080/ --rate 20000 --duration 5s --connection keepalive
    loglag load http://127.0.0.1:8080/ --closed 64 --duration 5s --connection keepalive
    loglag load --calibrate --rate 500 --connection keepalive     # the generator's own floor
    loglag load http://127.0.0.1:8080/ --calibrate                # the floor, then your API

TIMING:
    Request i is due at i/rate after the start and is timed from then, not from when it
    was sent, so a slow server cannot hide behind a slow client. The generator's own
    lateness (actual send - due time) is reported; a p99 over --lateness-limit is
    flagged, because every latency includes it. --calibrate measures the same load
    against a null server, so your API's latency can be told from the instrument's.")]
pub struct LoadArgs {
    /// The URL to GET (http:// only). May be left out with --calibrate.
    pub url: Option<String>,
    /// First run the same load against a null server (a child `loglag serve` doing no
    /// work) and print its latency as the floor, next to the URL's.
    #[arg(long)]
    pub calibrate: bool,
    /// Flag the run when the generator's p99 send lateness exceeds this.
    #[arg(long, default_value = "100us", value_parser = parse_duration)]
    pub lateness_limit: Duration,
    /// Requests per second, on a fixed schedule.
    #[arg(short = 'r', long, default_value_t = 20.0)]
    pub rate: f64,
    /// How long to send.
    #[arg(short = 'd', long, default_value = "8s", value_parser = parse_duration)]
    pub duration: Duration,
    /// keepalive (reuse connections, as oha, wrk and vegeta do) or new (a connection
    /// per request, as `loglag lab` does on its defaults).
    #[arg(short = 'c', long, default_value = "keepalive")]
    pub connection: Connection,
    /// Closed loop with N connections instead of a schedule (for throughput).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub closed: Option<u64>,
    /// How long unfinished requests may take after the schedule ends before they
    /// count as timeouts.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub grace: Duration,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = OutputFormat::Md)]
    pub format: OutputFormat,
    /// Also write one row per request as CSV here ('-' for stdout).
    #[arg(long)]
    pub requests_csv: Option<PathBuf>,
    /// Also write summary.json, the table (Markdown and CSV) and manifest.json here;
    /// `loglag report DIR` draws them as a page.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `loglag sink`: what it reads is the lab's request type; here only the format.
#[derive(Debug, Args)]
pub struct SinkArgs {
    #[command(flatten)]
    pub request: loglag_lab::reader::standalone::SinkRequest,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Md)]
    pub format: OutputFormat,
    /// Also write summary.json, the table (Markdown and CSV) and manifest.json here;
    /// `loglag report DIR` draws them as a page.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Port on 127.0.0.1; 0 picks a free one and prints it.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// How to log each request.
    #[arg(long, default_value = "none")]
    pub condition: String,
    /// Worker threads (1 = a single-threaded event loop).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Write logs to this FIFO or file [default: stdout].
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// SHA-256 rounds of fixed work per request; 0 makes a trivial server.
    #[arg(long, default_value_t = loglag_lab::api::server::DEFAULT_HASH_ROUNDS)]
    pub hash_rounds: u32,
    /// What each request logs: json16k (one 16 KiB JSON record), three (three 128-byte
    /// lines, INFO/DEBUG/INFO) or line120 (one 120-byte line).
    #[arg(long, default_value = "json16k")]
    pub record: RecordShape,
}

/// The flags `loglag lab --help` shows: those most runs use. `--help-all` shows every
/// one, with the conditions, presets and columns.
const LAB_FLAGS_SHOWN: [&str; 5] = ["app", "conditions", "rounds", "out", "against"];

/// The command line as clap parses it, with the texts that are generated: the counts
/// come from the lab's lists, so no text can say "twelve" when there are 22. `help_all`
/// (the user typed `--help-all`) keeps every flag of `loglag lab` in its help; without
/// it, `loglag lab --help` is one screen.
pub fn command(help_all: bool) -> clap::Command {
    use clap::CommandFactory;
    use loglag_lab::api::condition::Condition;
    use loglag_lab::lab::plan::defaults;
    let all = Condition::ALL.len();
    let default = Condition::REFERENCE.len();
    let about = format!(
        "Measure what logging costs an HTTP API.

`loglag lab` runs a small API once per way of logging (a condition), its log read by a \
fast reader and by one capped at {slow}/s (a slow disk or collector), under an \
open-loop load of {rate} requests/s for {duration}, and says what logging costs at p50 and \
p99 against no logging, which condition removes the cost, and what that leaves behind. \
It runs {default} conditions on its defaults and knows {all} (`loglag lab --help-all` \
lists them). Latency is timed from each request's scheduled send; the generator's own \
lateness is reported next to it. Point it at your own API with `--app`.",
        slow = defaults::SLOW_RATE,
        rate = defaults::RATE,
        duration = defaults::DURATION,
    );
    Cli::command()
        .long_about(about)
        .mut_subcommand("lab", |lab| {
            let flags = lab
                .get_arguments()
                .filter(|a| !a.is_hide_set() && a.get_long().is_some())
                .count();
            let lab = lab
                .long_about(format!(
                    "What logging costs an HTTP API: the built-in one with {default} ways of \
logging on its defaults, or yours with --app. The first lines say, per sink, what logging \
costs at p50 and p99, which condition removes it, and what it leaves behind; the tables \
follow. Results and report.html are kept in loglag-results/<UTC time>/ (--out chooses, \
--no-keep keeps nothing)."
                ))
                .arg(
                    clap::Arg::new("help_all")
                        .long("help-all")
                        .action(clap::ArgAction::HelpLong)
                        .help("Print every flag, the conditions, presets and columns"),
                );
            if help_all {
                return lab;
            }
            let short = format!(
                "EXAMPLES:
    loglag lab                                # {default} conditions x {{fast, slow}} sink
    loglag lab --conditions none,json-sync,loglag --rounds 3
    loglag lab --app 'python3 examples/python/seed_api.py --port {{port}} --log {{log_path}} --condition {{condition}}'

All {flags} flags and the {all} conditions: loglag lab --help-all
How to read the results, and every experiment: docs/lab.md"
            );
            lab.mut_args(|a| {
                if LAB_FLAGS_SHOWN.contains(&a.get_id().as_str()) || a.get_id() == "help_all" {
                    a
                } else {
                    a.hide(true)
                }
            })
            .after_help(short.clone())
            .after_long_help(short)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        command(false).debug_assert();
        command(true).debug_assert();
    }

    fn lab_help(help_all: bool) -> String {
        let mut cli = command(help_all);
        cli.build();
        let mut lab = cli.find_subcommand("lab").unwrap().clone();
        lab.render_long_help().to_string()
    }

    /// `loglag lab --help` is one screen: what it does, the flags most runs use and
    /// three examples; everything else is one flag away.
    #[test]
    fn lab_help_is_short_and_help_all_has_every_flag_and_condition() {
        let short = lab_help(false);
        assert!(
            short.lines().count() <= 50,
            "{} lines:\n{short}",
            short.lines().count()
        );
        for flag in LAB_FLAGS_SHOWN {
            assert!(
                short.contains(&format!("--{}", flag.replace('_', "-"))),
                "--{flag}:\n{short}"
            );
        }
        assert!(
            short.contains("--help-all") && short.contains("docs/lab.md"),
            "{short}"
        );
        assert!(
            !short.contains("--slow-rate"),
            "a flag most runs leave alone is not shown"
        );
        let all = lab_help(true);
        for flag in [
            "--slow-rate",
            "--expect-lines",
            "--cpu-limit",
            "--columns",
            "--preset",
        ] {
            assert!(all.contains(flag), "{flag} in --help-all");
        }
        for c in loglag_lab::api::condition::Condition::ALL {
            assert!(all.contains(c.as_str()), "{} in --help-all", c.as_str());
        }
    }

    /// One count of conditions everywhere, generated from the list.
    #[test]
    fn the_count_of_conditions_is_the_lists() {
        let n = loglag_lab::api::condition::Condition::ALL.len();
        let mut cli = command(false);
        let top = cli.render_long_help().to_string();
        assert!(top.contains(&format!("knows {n}")), "{top}");
        let short = lab_help(false);
        assert!(short.contains(&format!("the {n} conditions")), "{short}");
        for text in [&top, &short, &lab_help(true)] {
            for word in ["twelve", "reference 00", "ref. 00", "issue "] {
                assert!(!text.contains(word), "{word:?} in help:\n{text}");
            }
        }
    }

    /// Words of a shell line as `sh` splits the simple ones `--help` shows: single
    /// quotes kept together, a `#` comment and a trailing `\` dropped.
    fn words(line: &str) -> Vec<String> {
        let (mut words, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
        for c in line.chars() {
            match c {
                '\'' => (quoted, any) = (!quoted, true),
                '#' if !quoted && word.is_empty() => break,
                c if c.is_whitespace() && !quoted => {
                    if any {
                        words.push(std::mem::take(&mut word));
                    }
                    any = false;
                }
                c => (word, any) = (word + &c.to_string(), true),
            }
        }
        if any {
            words.push(word);
        }
        words.retain(|w| w != "\\");
        words
    }

    /// Every example every `--help` prints parses: a flag renamed, a value the
    /// grammar no longer reads (`--rotate-every 1h`) fails here, not in a user's shell.
    #[test]
    fn every_example_in_help_parses() {
        let mut checked = 0;
        let mut commands: Vec<clap::Command> = [false, true]
            .into_iter()
            .map(|help_all| {
                let mut cli = command(help_all);
                cli.build();
                cli
            })
            .collect();
        while let Some(mut command) = commands.pop() {
            commands.extend(command.get_subcommands().cloned());
            let help = command.render_long_help().to_string();
            // The lines of its EXAMPLES: section, to the next blank line.
            let mut lines = help
                .lines()
                .skip_while(|l| l.trim() != "EXAMPLES:")
                .skip(1)
                .take_while(|l| !l.trim().is_empty())
                .peekable();
            while let Some(line) = lines.next() {
                let mut line = line.trim().to_owned();
                // A continued line: the next one is the same command.
                while line.ends_with('\\') {
                    line.pop();
                    line.push(' ');
                    line.push_str(lines.next().unwrap_or_default().trim());
                }
                if !line.starts_with("loglag ") {
                    continue;
                }
                for example in line.split("&&") {
                    let args = words(example);
                    if let Err(e) = Cli::try_parse_from(&args) {
                        panic!("`{}` from --help does not parse: {e}", example.trim());
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked >= 25, "only {checked} examples found");
    }
}
