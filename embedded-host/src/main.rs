//! The embedded host: the policy's compiled module run the way `kwctl run` runs it, for
//! `make run` and the tests on machines where kwctl is not installed (kwctl and policy-server
//! are not on crates.io). Its command line is the part of `kwctl run` they use, with kwctl's flag
//! names; it prints what kwctl prints (the AdmissionResponse, one line on stdout, exit code 0
//! whatever the verdict; `Error: ...` on stderr and exit code 1 when the policy cannot be run,
//! its settings are invalid included). `conformance/` holds the cases recorded with kwctl 1.35.0
//! that hold it to kwctl's behaviour (`tests/conformance.rs`).

mod capabilities;
mod evaluation;
mod policy;
mod registry;
mod session;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser};
use serde_json::Value;

use capabilities::{Grants, Host};
use evaluation::{AdmissionRequest, Module};
use policy::Policy;
use registry::Registry;
use session::Session;

#[derive(Parser)]
#[command(
    name = "embedded-host",
    version,
    about = "Runs a Kubewarden policy module as `kwctl run` does"
)]
enum Cli {
    /// Evaluates a request with a policy (a module path, `file://` URI, or policy manifest)
    Run(Run),
}

#[derive(Args)]
struct Run {
    /// The AdmissionRequest or AdmissionReview to evaluate (JSON), `-` for stdin
    #[arg(short = 'r', long = "request-path")]
    request_path: String,
    /// The policy's settings, a YAML file
    #[arg(long = "settings-path", conflicts_with = "settings_json")]
    settings_path: Option<PathBuf>,
    /// The policy's settings, JSON
    #[arg(long = "settings-json")]
    settings_json: Option<String>,
    /// kwctl's sources.yml (`insecure_sources`: registries spoken to over plain HTTP)
    #[arg(long = "sources-path")]
    sources_path: Option<PathBuf>,
    /// Lets the policy read the Kubernetes resources its metadata lists
    #[arg(long = "allow-context-aware")]
    allow_context_aware: bool,
    /// Host capabilities the policy may use: `*`, `oci/*`, `oci/v1/oci_manifest`, ...
    #[arg(long = "allowed-host-capabilities", num_args = 0.., default_values = ["*"])]
    allowed_host_capabilities: Vec<String>,
    /// Writes the host calls and their answers to this session file
    #[arg(long = "record-host-capabilities-interactions")]
    record: Option<PathBuf>,
    /// Answers the host calls from this session file, in order
    #[arg(long = "replay-host-capabilities-interactions")]
    replay: Option<PathBuf>,
    /// The module (a path or `file://` URI), or a ClusterAdmissionPolicy manifest (.yaml, .yml)
    policy: String,
}

fn settings(run: &Run) -> Result<Value> {
    if let Some(path) = &run.settings_path {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow!("Cannot open settings file {}: {e}", path.display()))?;
        return serde_yaml::from_str(&text)
            .map_err(|e| anyhow!("Cannot parse settings file {}: {e}", path.display()));
    }
    match &run.settings_json {
        Some(json) => {
            serde_json::from_str(json).map_err(|e| anyhow!("Cannot parse settings JSON: {e}"))
        }
        None => Ok(Value::Null),
    }
}

fn run(run: Run) -> Result<()> {
    let policy = if run.policy.ends_with(".yaml") || run.policy.ends_with(".yml") {
        Policy::from_manifest(run.policy.as_ref())?
    } else {
        Policy::from_cli(&run.policy, settings(&run)?, run.allow_context_aware)?
    };
    let request = match run.request_path.as_str() {
        "-" => {
            std::io::read_to_string(std::io::stdin()).context("Error reading request from stdin")?
        }
        path => std::fs::read_to_string(path)
            .map_err(|e| anyhow!("Error opening request file {path}; {e}"))?,
    };
    let request = AdmissionRequest::read(&request)?;
    let session = match (&run.replay, &run.record) {
        (Some(path), _) => Session::replay(path)?,
        (None, record) => {
            if !policy.resources.is_empty() {
                bail!("the embedded host reads no cluster: a context-aware policy needs --replay-host-capabilities-interactions");
            }
            Session::Live(record.as_ref().map(|_| Vec::new()))
        }
    };
    let host = Arc::new(Mutex::new(Host {
        grants: Grants::new(&run.allowed_host_capabilities),
        resources: policy.resources.clone(),
        session,
        registry: Registry::new(run.sources_path.as_deref())?,
    }));
    let module = Module::load(&policy, host.clone())?;
    let settings = module.validate_settings(&policy.settings);
    let response = settings.valid.then(|| module.validate(&request, &policy));
    let host = host
        .lock()
        .map_err(|_| anyhow!("the host's state is poisoned"))?;
    if let Some(path) = &run.record {
        host.session.save(path)?;
    }
    if host.session.leftovers() > 0 {
        eprintln!(
            "embedded-host: {} of the recorded exchanges have not been replayed",
            host.session.leftovers()
        );
    }
    let Some(response) = response else {
        bail!(
            "Provided settings are not valid: {}",
            settings.message.unwrap_or_default()
        );
    };
    println!("{}", serde_json::to_string(&response)?);
    Ok(())
}

fn main() -> Result<()> {
    let Cli::Run(args) = Cli::parse();
    run(args)
}
