//! The embedded host: the policy's compiled module run the way `kwctl run` runs it, for
//! `make run` and the tests on machines where kwctl is not installed (kwctl and policy-server
//! are not on crates.io). Its command line is the part of `kwctl run` they use, with kwctl's flag
//! names; it prints what kwctl prints (the AdmissionResponse, one line on stdout, exit code 0
//! whatever the verdict; `Error: ...` on stderr and exit code 1 when the policy cannot be run,
//! its settings are invalid included). `conformance/` holds the cases recorded with kwctl 1.35.0
//! that hold it to kwctl's behaviour (`tests/conformance.rs`).

mod capabilities;
mod cluster;
mod evaluation;
mod policy;
mod push;
mod registry;
mod serve;
mod session;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context, Result};
use clap::{Args, Parser};
use serde_json::Value;

use capabilities::{Grants, Host};
use cluster::Cluster;
use evaluation::{AdmissionRequest, Compiled};
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
    /// Evaluates requests read from stdin, one JSON line each, with the module compiled once
    /// (the Go test harness's adapter: k8s-judge/)
    Serve(Serve),
    /// Pushes a module to an OCI registry as `kwctl push` does (the release's dry run where kwctl
    /// is not installed: scripts/release.sh)
    Push(Push),
}

#[derive(Args)]
struct Push {
    /// kwctl's sources.yml (`insecure_sources`: registries spoken to over plain HTTP)
    #[arg(long = "sources-path")]
    sources_path: Option<PathBuf>,
    /// Push a module that is not annotated (without annotations)
    #[arg(short = 'f', long = "force")]
    force: bool,
    /// `json`: print `{"immutable_ref":...}`
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
    /// The module
    policy: PathBuf,
    /// Where: `registry://REGISTRY/REPOSITORY:TAG`
    uri: String,
}

/// What `run` and `serve` share: the policy and how its host calls are answered.
#[derive(Args)]
struct Common {
    /// The policy's settings, a YAML file
    #[arg(long = "settings-path", conflicts_with = "settings_json")]
    settings_path: Option<PathBuf>,
    /// The policy's settings, JSON
    #[arg(long = "settings-json")]
    settings_json: Option<String>,
    /// kwctl's sources.yml (`insecure_sources`: registries spoken to over plain HTTP)
    #[arg(long = "sources-path")]
    sources_path: Option<PathBuf>,
    /// Lets the policy read the Kubernetes resources its metadata lists (from the cluster of the
    /// kubeconfig, unless a session is replayed)
    #[arg(long = "allow-context-aware")]
    allow_context_aware: bool,
    /// Host capabilities the policy may use: `*`, `oci/*`, `oci/v1/oci_manifest`, ...
    #[arg(long = "allowed-host-capabilities", num_args = 0.., default_values = ["*"])]
    allowed_host_capabilities: Vec<String>,
    /// The module (a path or `file://` URI), or a ClusterAdmissionPolicy manifest (.yaml, .yml)
    policy: String,
}

#[derive(Args)]
struct Run {
    /// The AdmissionRequest or AdmissionReview to evaluate (JSON), `-` for stdin
    #[arg(short = 'r', long = "request-path")]
    request_path: String,
    /// Writes the host calls and their answers to this session file
    #[arg(long = "record-host-capabilities-interactions")]
    record: Option<PathBuf>,
    /// Answers the host calls from this session file, in order
    #[arg(long = "replay-host-capabilities-interactions")]
    replay: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct Serve {
    #[command(flatten)]
    common: Common,
}

fn settings(common: &Common) -> Result<Value> {
    if let Some(path) = &common.settings_path {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow!("Cannot open settings file {}: {e}", path.display()))?;
        return serde_yaml::from_str(&text)
            .map_err(|e| anyhow!("Cannot parse settings file {}: {e}", path.display()));
    }
    match &common.settings_json {
        Some(json) => {
            serde_json::from_str(json).map_err(|e| anyhow!("Cannot parse settings JSON: {e}"))
        }
        None => Ok(Value::Null),
    }
}

impl Common {
    fn policy(&self) -> Result<Policy> {
        if self.policy.ends_with(".yaml") || self.policy.ends_with(".yml") {
            Policy::from_manifest(self.policy.as_ref())
        } else {
            Policy::from_cli(&self.policy, settings(self)?, self.allow_context_aware)
        }
    }

    /// The host of `policy`: the cluster of the kubeconfig for a context-aware policy that does
    /// not replay a session (kwctl needs one too).
    fn host(&self, policy: &Policy, session: Session) -> Result<Arc<Mutex<Host>>> {
        let cluster = match (&session, policy.resources.is_empty()) {
            (Session::Live(_), false) => Some(
                Cluster::connect()
                    .context("a context-aware policy needs a cluster (KUBECONFIG)")?,
            ),
            _ => None,
        };
        Ok(Arc::new(Mutex::new(Host {
            grants: Grants::new(&self.allowed_host_capabilities),
            resources: policy.resources.clone(),
            session,
            registry: Registry::new(self.sources_path.as_deref())?,
            cluster,
        })))
    }
}

fn run(run: Run) -> Result<()> {
    let policy = run.common.policy()?;
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
        (None, record) => Session::Live(record.as_ref().map(|_| Vec::new())),
    };
    let host = run.common.host(&policy, session)?;
    let module = Compiled::new(&policy)?.instance(host.clone())?;
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
        anyhow::bail!(
            "Provided settings are not valid: {}",
            settings.message.unwrap_or_default()
        );
    };
    println!("{}", serde_json::to_string(&response)?);
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse() {
        Cli::Run(args) => run(args),
        Cli::Push(args) => {
            let pushed = push::push(
                &args.policy,
                &args.uri,
                args.sources_path.as_deref(),
                args.force,
            )?;
            match args.output.as_deref() {
                Some("json") => print!("{}", serde_json::json!({ "immutable_ref": pushed })),
                _ => println!("Policy successfully pushed: {pushed}"),
            }
            Ok(())
        }
        Cli::Serve(args) => {
            let policy = args.common.policy()?;
            let host = args.common.host(&policy, Session::Live(None))?;
            serve::serve(
                &policy,
                host,
                std::io::stdin().lock(),
                std::io::stdout().lock(),
            )
        }
    }
}
