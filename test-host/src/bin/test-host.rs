//! `test-host run`: the subset of `kwctl run` this policy's e2e tests use, with a real registry
//! (or a kwctl replay file) behind the `kubewarden/oci/*` host capabilities.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde_json::Value;
use test_host::{
    Host, InMemorySource, ManifestFidelity, ManifestSource, RegistrySource, RunOutcome, Sources,
};

#[derive(Parser)]
#[command(
    name = "test-host",
    version,
    about = "Dev-only Kubewarden host (kwctl run subset)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate one request, like `kwctl run`; prints one AdmissionResponse line on stdout.
    Run(RunArgs),
    /// Evaluate the same request repeatedly (like `kwctl bench`); prints timing JSON on stdout.
    Bench {
        #[command(flatten)]
        run: RunArgs,
        /// Number of timed evaluations.
        #[arg(long, default_value_t = 50)]
        iterations: u32,
    },
}

#[derive(Args)]
struct RunArgs {
    /// AdmissionRequest or AdmissionReview JSON file.
    #[arg(short = 'r', long = "request-path")]
    request_path: PathBuf,
    /// Settings as a JSON string.
    #[arg(long = "settings-json", conflicts_with = "settings_path")]
    settings_json: Option<String>,
    /// Settings file (YAML or JSON).
    #[arg(long = "settings-path")]
    settings_path: Option<PathBuf>,
    /// sources.yml: `insecure_sources` are reached over plain HTTP.
    #[arg(long = "sources-path")]
    sources_path: Option<PathBuf>,
    /// Answer host calls from a kwctl replay file instead of a registry.
    #[arg(long = "replay-host-capabilities-interactions")]
    replay: Option<PathBuf>,
    /// Write the host-call report (JSON) here. Also: env TEST_HOST_CALLS_REPORT.
    #[arg(long = "host-calls-report", env = "TEST_HOST_CALLS_REPORT")]
    host_calls_report: Option<PathBuf>,
    /// Serve v1/oci_manifest through oci-client's types, as policy-evaluator really does
    /// (unknown fields dropped; an index entry without os/architecture fails the lookup).
    /// Also: env TEST_HOST_RESERIALIZE_MANIFESTS=1.
    #[arg(
        long = "reserialize-manifests",
        env = "TEST_HOST_RESERIALIZE_MANIFESTS"
    )]
    reserialize_manifests: bool,
    /// Turn off the host's 60 s lookup cache.
    #[arg(long = "no-host-cache")]
    no_host_cache: bool,
    /// Print guest logs and a host-call summary on stderr. Also: env TEST_HOST_VERBOSE=1.
    #[arg(short = 'v', long = "verbose", env = "TEST_HOST_VERBOSE")]
    verbose: bool,
    /// Accepted for kwctl compatibility; no effect.
    #[arg(long = "allow-context-aware")]
    allow_context_aware: bool,
    /// Abort an evaluation that runs longer than this many seconds (decimals allowed), as
    /// policy-server does (`--policy-timeout`, `timeoutEvalSeconds`): allowed false, code 500,
    /// "internal server error: Guest call failure: guest code interrupted, execution deadline
    /// exceeded". Off by default, like kwctl (which has no such option).
    /// Also: env TEST_HOST_TIMEOUT_EVAL_SECONDS.
    #[arg(
        long = "timeout-eval-seconds",
        env = "TEST_HOST_TIMEOUT_EVAL_SECONDS",
        value_parser = positive_seconds
    )]
    timeout_eval_seconds: Option<f64>,
    /// Period of the epoch ticker behind --timeout-eval-seconds, in milliseconds (policy-server
    /// ticks every 1000 ms: its limit strikes up to one tick early).
    #[arg(long = "timeout-tick-millis", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_tick_millis: u64,
    /// The policy module (a path, or file://path).
    policy: String,
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(s),
        _ => Err(format!("{text:?} is not a number of seconds in (0, 86400]")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => report(run(args)),
        Command::Bench { run, iterations } => report(bench(run, iterations)),
    }
}

fn report(result: Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {}", test_host::source::anyhow_debug(&e));
            ExitCode::from(1)
        }
    }
}

fn read_settings(args: &RunArgs) -> Result<Value> {
    if let Some(json) = &args.settings_json {
        return serde_json::from_str(json).context("--settings-json is not valid JSON");
    }
    if let Some(path) = &args.settings_path {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read settings file {}", path.display()))?;
        let yaml: serde_yaml::Value = serde_yaml::from_str(&text)
            .with_context(|| format!("cannot parse settings file {}", path.display()))?;
        let value: Value = serde_json::to_value(yaml)?;
        return Ok(if value.is_null() {
            Value::Object(Default::default())
        } else {
            value
        });
    }
    Ok(Value::Object(Default::default()))
}

/// The host, request and settings `args` describe.
fn load(args: &RunArgs) -> Result<(Host, Value, Value)> {
    let policy = args.policy.strip_prefix("file://").unwrap_or(&args.policy);
    let wasm = std::fs::read(policy).with_context(|| format!("cannot read policy {policy}"))?;
    let request_text = std::fs::read_to_string(&args.request_path)
        .with_context(|| format!("cannot read request {}", args.request_path.display()))?;
    let request: Value = serde_json::from_str(&request_text)
        .with_context(|| format!("cannot parse request {}", args.request_path.display()))?;
    let settings = read_settings(args)?;

    let source: Arc<dyn ManifestSource> = match &args.replay {
        Some(path) => Arc::new(InMemorySource::from_kwctl_replay_file(path)?),
        None => {
            let sources = match &args.sources_path {
                Some(p) => Sources::from_file(p)?,
                None => Sources::default(),
            };
            let fidelity = if args.reserialize_manifests {
                ManifestFidelity::Reserialized
            } else {
                ManifestFidelity::Raw
            };
            Arc::new(RegistrySource::with_fidelity(&sources, fidelity)?)
        }
    };
    let mut host = Host::new(&wasm, source)?;
    host.set_cache(!args.no_host_cache);
    host.set_echo_logs(args.verbose);
    if let Some(seconds) = args.timeout_eval_seconds {
        host.set_eval_timeout_with_tick(
            Some(std::time::Duration::from_secs_f64(seconds)),
            std::time::Duration::from_millis(args.timeout_tick_millis),
        )?;
    }
    Ok((host, request, settings))
}

fn run(args: RunArgs) -> Result<ExitCode> {
    let (host, request, settings) = load(&args)?;
    match host.run(&request, &settings)? {
        RunOutcome::InvalidSettings(validation) => {
            println!("{}", serde_json::to_string(&validation)?);
            eprintln!(
                "Error: Provided settings are not valid: {:?}",
                validation.message
            );
            // kwctl prints the message Debug-escaped; repeat it verbatim when that differs.
            if let Some(m) = &validation.message {
                if format!("{m:?}") != format!("\"{m}\"") {
                    eprintln!("{m}");
                }
            }
            Ok(ExitCode::from(1))
        }
        RunOutcome::Evaluated(eval) => {
            // Before the response, so the response stays the last line of a merged output.
            if eval.timed_out() {
                eprintln!(
                    "test-host: evaluation aborted by the time limit ({}s) after {:?}",
                    args.timeout_eval_seconds.unwrap_or_default(),
                    eval.elapsed
                );
            }
            println!("{}", eval.response_line());
            if let Some(path) = &args.host_calls_report {
                let mut text = serde_json::to_string_pretty(&eval.host_calls.report())?;
                text.push('\n');
                std::fs::write(path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            if args.verbose {
                eprintln!(
                    "test-host: host calls {} images {} in {:?}",
                    serde_json::to_string(&eval.host_calls.counts())?,
                    serde_json::to_string(&eval.host_calls.images())?,
                    eval.elapsed
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
    .map_err(|e: anyhow::Error| anyhow!(e))
}

fn bench(args: RunArgs, iterations: u32) -> Result<ExitCode> {
    let (host, request, settings) = load(&args)?;
    let validation = host.validate_settings(&settings)?;
    if !validation.valid {
        return Err(anyhow!(
            "Provided settings are not valid: {:?}",
            validation.message
        ));
    }
    // Warm-up evaluation (fills the host cache unless --no-host-cache).
    let first = host.evaluate(&request, &settings)?;
    let mut times = Vec::with_capacity(iterations as usize);
    let mut host_calls = 0;
    for _ in 0..iterations.max(1) {
        let started = std::time::Instant::now();
        let eval = host.evaluate(&request, &settings)?;
        times.push(started.elapsed().as_secs_f64() * 1e6);
        host_calls = eval.host_calls.total();
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    let out = serde_json::json!({
        "iterations": times.len(),
        "first_micros": first.elapsed.as_secs_f64() * 1e6,
        "first_host_calls": first.host_calls.counts(),
        "host_calls_per_evaluation": host_calls,
        "min_micros": times[0],
        "median_micros": pct(0.5),
        "p90_micros": pct(0.9),
        "max_micros": times[times.len() - 1],
        "mean_micros": times.iter().sum::<f64>() / times.len() as f64,
        "response": first.response,
    });
    println!("{}", serde_json::to_string(&out)?);
    Ok(ExitCode::SUCCESS)
}
