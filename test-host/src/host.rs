//! The waPC host: loads the policy with wapc + wasmtime-provider (WASI on), answers host calls
//! through a [`ManifestSource`], and turns the policy's answer into a kwctl-shaped
//! AdmissionResponse (the host computes the JSON patch itself).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasmtime_provider::{
    wasmtime, EpochDeadlines, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre,
};

use crate::source::{ManifestSource, Operation, RegistrySource, Sources};

/// How long the real host keeps a successful lookup (policy-evaluator caches for 60 s).
pub const HOST_CACHE_TTL: Duration = Duration::from_secs(60);

/// What wasmtime-provider reports when the epoch deadline interrupts the guest; policy-evaluator
/// looks for this text. The caller gets `internal server error: Guest call failure: <this>`
/// (`allowed: false`, `code: 500`).
pub const EVAL_TIMEOUT_ERROR: &str = "guest code interrupted, execution deadline exceeded";

/// Default period of the epoch ticker behind [`Host::set_eval_timeout`]. policy-server ticks
/// once a second (its limits are whole seconds); a finer tick gives a sharper limit.
pub const DEFAULT_EPOCH_TICK: Duration = Duration::from_millis(10);

/// One host call made by the guest during an evaluation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct HostCall {
    /// `kubewarden` for the calls the host knows.
    pub binding: String,
    /// `oci`, `tracing`, ...
    pub namespace: String,
    /// `v1/oci_manifest`, ...
    pub operation: String,
    /// The image reference, when the payload was a JSON string.
    pub image: Option<String>,
    /// Whether the guest got an answer (false: it got a host error).
    pub ok: bool,
    /// The host error text the guest received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Answered from the host's 60 s cache (no registry round trip).
    pub cached: bool,
    /// Time spent answering, in microseconds.
    pub micros: u64,
}

impl HostCall {
    /// A `kubewarden/oci/<operation>` call.
    pub fn is_oci(&self, operation: Operation) -> bool {
        self.binding == "kubewarden"
            && self.namespace == "oci"
            && self.operation == operation.as_str()
    }

    /// The key under which [`HostCalls::counts`] counts this call: the bare operation for
    /// `kubewarden/oci`, `binding/namespace/operation` otherwise.
    pub fn key(&self) -> String {
        if self.binding == "kubewarden" && self.namespace == "oci" {
            self.operation.clone()
        } else {
            format!("{}/{}/{}", self.binding, self.namespace, self.operation)
        }
    }
}

/// The host calls of one guest invocation (guest logs through `kubewarden/tracing/log` are kept
/// apart in [`HostCalls::logs`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct HostCalls {
    /// Every call, in order.
    pub calls: Vec<HostCall>,
    /// Payloads of `kubewarden/tracing/log` calls (the SDK logger), in order.
    pub logs: Vec<String>,
}

impl HostCalls {
    /// Calls per key (see [`HostCall::key`]); the three oci operations are always present.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let mut counts: BTreeMap<String, u64> = Operation::ALL
            .iter()
            .map(|op| (op.as_str().to_string(), 0))
            .collect();
        for call in &self.calls {
            *counts.entry(call.key()).or_default() += 1;
        }
        counts
    }

    /// Number of calls to one oci operation.
    pub fn count(&self, operation: Operation) -> u64 {
        self.calls.iter().filter(|c| c.is_oci(operation)).count() as u64
    }

    /// Total number of host calls (logs excluded).
    pub fn total(&self) -> u64 {
        self.calls.len() as u64
    }

    /// Images asked for, each once, in first-asked order.
    pub fn images(&self) -> Vec<String> {
        let mut seen = Vec::<String>::new();
        for image in self.calls.iter().filter_map(|c| c.image.as_ref()) {
            if !seen.contains(image) {
                seen.push(image.clone());
            }
        }
        seen
    }

    /// Images asked for with `operation`, in call order (repeats kept).
    pub fn images_for(&self, operation: Operation) -> Vec<String> {
        self.calls
            .iter()
            .filter(|c| c.is_oci(operation))
            .filter_map(|c| c.image.clone())
            .collect()
    }

    /// The report `--host-calls-report` writes: one count per key at the top level
    /// (`{"v1/oci_manifest": 2, ...}`), plus `"images"` and `"calls"`.
    pub fn report(&self) -> Value {
        let mut map = serde_json::Map::new();
        for (k, v) in self.counts() {
            map.insert(k, Value::from(v));
        }
        map.insert(
            "images".into(),
            serde_json::to_value(self.images()).unwrap(),
        );
        map.insert("calls".into(), serde_json::to_value(&self.calls).unwrap());
        Value::Object(map)
    }
}

/// `AdmissionResponse` as kwctl prints it (policy-evaluator's struct, same field order).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Base64 of the JSON patch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<AdmissionResponseStatus>,
    pub audit_annotations: Option<HashMap<String, String>>,
    pub warnings: Option<Vec<String>>,
}

/// `status` of an [`AdmissionResponse`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct AdmissionResponseStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

impl AdmissionResponse {
    /// What policy-evaluator answers when the guest call itself fails.
    pub fn internal_server_error(uid: &str, message: &str) -> AdmissionResponse {
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: false,
            status: Some(AdmissionResponseStatus {
                message: Some(format!("internal server error: {message}")),
                code: Some(500),
            }),
            ..Default::default()
        }
    }
}

/// The guest's `validate` answer (the SDK's `ValidationResponse`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PolicyValidationResponse {
    pub accepted: bool,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub code: Option<u16>,
    #[serde(default)]
    pub mutated_object: Option<Value>,
    #[serde(default)]
    pub audit_annotations: Option<HashMap<String, String>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
}

/// The guest's `validate_settings` answer.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SettingsValidation {
    pub valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The result of one `validate`.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The response kwctl would print.
    pub response: AdmissionResponse,
    /// The guest's raw answer, when it gave a parseable one.
    pub policy_response: Option<PolicyValidationResponse>,
    /// Host calls made while validating.
    pub host_calls: HostCalls,
    /// Wall time of the guest `validate` call (instantiation excluded).
    pub elapsed: Duration,
}

impl Evaluation {
    /// The single stdout line of `kwctl run`.
    pub fn response_line(&self) -> String {
        serde_json::to_string(&self.response).expect("serialize AdmissionResponse")
    }

    /// `allowed`.
    pub fn allowed(&self) -> bool {
        self.response.allowed
    }

    /// `status.message`.
    pub fn message(&self) -> Option<&str> {
        self.response
            .status
            .as_ref()
            .and_then(|s| s.message.as_deref())
    }

    /// `warnings` (empty when none).
    pub fn warnings(&self) -> Vec<String> {
        self.response.warnings.clone().unwrap_or_default()
    }

    /// The decoded JSON patch, when the policy mutated the object.
    pub fn patch(&self) -> Option<Value> {
        self.response.patch.as_ref().map(|p| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(p)
                .expect("patch is base64");
            serde_json::from_slice(&bytes).expect("patch is JSON")
        })
    }

    /// The evaluation was aborted by the time limit ([`Host::set_eval_timeout`]).
    pub fn timed_out(&self) -> bool {
        self.response.status.as_ref().is_some_and(|s| {
            s.code == Some(500)
                && s.message
                    .as_deref()
                    .is_some_and(|m| m.contains(EVAL_TIMEOUT_ERROR))
        })
    }

    /// The request object with the patch applied (None without a mutation).
    pub fn patched_object(&self, original: &Value) -> Option<Value> {
        let patch: json_patch::Patch = serde_json::from_value(self.patch()?).ok()?;
        let mut doc = original.clone();
        json_patch::patch(&mut doc, &patch).ok()?;
        Some(doc)
    }
}

/// Why a `kwctl run`-style run stopped before evaluating.
#[derive(Debug)]
pub enum RunOutcome {
    /// Settings were valid; here is the evaluation.
    Evaluated(Box<Evaluation>),
    /// `validate_settings` said no.
    InvalidSettings(SettingsValidation),
}

type Cache = Mutex<HashMap<(Operation, String), (Instant, Vec<u8>)>>;

/// The epoch machinery behind the evaluation time limit: an engine with epoch interruption on
/// and a thread that advances its epoch every `tick` (policy-server's ticker thread does the
/// same, once a second). Stopped when dropped.
struct EpochTicker {
    tick: Duration,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    fn start(engine: wasmtime::Engine, tick: Duration) -> Result<EpochTicker> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("test-host-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(tick);
                        engine.increment_epoch();
                    }
                })
                .context("cannot start the epoch ticker thread")?
        };
        Ok(EpochTicker {
            tick,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A loaded policy plus where registry answers come from.
pub struct Host {
    wasm: Arc<[u8]>,
    pre: WasmtimeEngineProviderPre,
    source: Arc<dyn ManifestSource>,
    cache: Option<Arc<Cache>>,
    echo_logs: bool,
    /// Engine with epoch interruption and its ticker, once a time limit was asked for.
    epoch: Option<(wasmtime::Engine, EpochTicker)>,
    eval_timeout: Option<Duration>,
}

impl Host {
    /// Compile `wasm` (once) and answer registry host calls from `source`. The host cache (60 s,
    /// successes only, keyed by the exact image string, like policy-evaluator) is on.
    pub fn new(wasm: &[u8], source: Arc<dyn ManifestSource>) -> Result<Host> {
        let mut builder = WasmtimeEngineProviderBuilder::new();
        if std::env::var_os("TEST_HOST_PERFMAP").is_some() {
            // Names the guest's compiled functions in /tmp/perf-<pid>.map, so profilers
            // (scripts/profile-guest.sh) can attribute the guest's instructions.
            let mut config = wasmtime::Config::new();
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
            let engine = wasmtime::Engine::new(&config)
                .map_err(|e| anyhow!("cannot create a wasmtime engine: {e}"))?;
            builder = builder.engine(engine);
        }
        let pre = builder
            .module_bytes(wasm)
            .wasi_params(wapc::WasiParams::default())
            .build_pre()
            .map_err(|e| anyhow!("cannot load the policy module: {e}"))?;
        Ok(Host {
            wasm: Arc::from(wasm),
            pre,
            source,
            cache: Some(Arc::new(Mutex::new(HashMap::new()))),
            echo_logs: false,
            epoch: None,
            eval_timeout: None,
        })
    }

    /// Abort any guest call (`validate`, `validate_settings`, and `wapc_init` when instantiating)
    /// that runs longer than `limit`, the way policy-server does (`--policy-timeout`, default
    /// 2 s, or the policy's `timeoutEvalSeconds`; kwctl has no limit): wasmtime epoch
    /// interruption, the epoch advanced by a ticker thread every [`DEFAULT_EPOCH_TICK`]. The
    /// guest is interrupted at its next epoch check once `limit` has passed, **not** while it is
    /// blocked in a host call: a registry lookup in flight completes first (policy-evaluator's
    /// host callback waits for the answer without a deadline), then the guest traps as soon as it
    /// runs again. The evaluation answers `allowed: false`, code 500,
    /// `internal server error: Guest call failure: guest code interrupted, execution deadline
    /// exceeded` ([`Evaluation::timed_out`]).
    ///
    /// `None` lifts the limit. Off by default (like `kwctl run`). The first call recompiles the
    /// module for an engine with epoch interruption.
    pub fn set_eval_timeout(&mut self, limit: Option<Duration>) -> Result<()> {
        let tick = self
            .epoch
            .as_ref()
            .map_or(DEFAULT_EPOCH_TICK, |(_, t)| t.tick);
        self.set_eval_timeout_with_tick(limit, tick)
    }

    /// [`Host::set_eval_timeout`] with another ticker period. The limit is rounded up to whole
    /// ticks and, the ticker running freely, may strike up to one tick early (with policy-server's
    /// 1 s tick, `--policy-timeout 2` aborts after 1 to 2 s).
    pub fn set_eval_timeout_with_tick(
        &mut self,
        limit: Option<Duration>,
        tick: Duration,
    ) -> Result<()> {
        if tick.is_zero() {
            return Err(anyhow!("the epoch tick must be longer than zero"));
        }
        if limit.is_some() && self.epoch.is_none() {
            let mut config = wasmtime::Config::new();
            config.epoch_interruption(true);
            let engine = wasmtime::Engine::new(&config)
                .map_err(|e| anyhow!("cannot create a wasmtime engine: {e}"))?;
            self.pre = WasmtimeEngineProviderBuilder::new()
                .engine(engine.clone())
                .module_bytes(&self.wasm)
                .wasi_params(wapc::WasiParams::default())
                .build_pre()
                .map_err(|e| anyhow!("cannot load the policy module: {e}"))?;
            let ticker = EpochTicker::start(engine.clone(), tick)?;
            self.epoch = Some((engine, ticker));
        } else if let Some((engine, ticker)) = &mut self.epoch {
            if ticker.tick != tick {
                *ticker = EpochTicker::start(engine.clone(), tick)?;
            }
        }
        self.eval_timeout = limit;
        Ok(())
    }

    /// The evaluation time limit, if any.
    pub fn eval_timeout(&self) -> Option<Duration> {
        self.eval_timeout
    }

    /// The epoch deadlines for a new instance: the limit in ticks, or practically none when
    /// the engine has epoch interruption but no limit is set.
    fn epoch_deadlines(&self) -> Option<EpochDeadlines> {
        let (_, ticker) = self.epoch.as_ref()?;
        let ticks = match self.eval_timeout {
            Some(limit) => (limit.as_nanos().div_ceil(ticker.tick.as_nanos()) as u64).max(1),
            None => u64::MAX / 4,
        };
        Some(EpochDeadlines {
            wapc_init: ticks,
            wapc_func: ticks,
        })
    }

    /// [`Host::new`] with a real registry described by `sources`.
    pub fn with_registry(wasm: &[u8], sources: &Sources) -> Result<Host> {
        Host::new(wasm, Arc::new(RegistrySource::new(sources)?))
    }

    /// [`Host::new`] reading the module from a file.
    pub fn from_file(path: &Path, source: Arc<dyn ManifestSource>) -> Result<Host> {
        let wasm =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        Host::new(&wasm, source)
    }

    /// Turn the host's 60 s lookup cache on or off (on by default). Off: every host call reaches
    /// the source.
    pub fn set_cache(&mut self, enabled: bool) {
        self.cache = enabled.then(|| Arc::new(Mutex::new(HashMap::new())));
    }

    /// Forget cached lookups.
    pub fn clear_cache(&self) {
        if let Some(cache) = &self.cache {
            cache.lock().unwrap().clear();
        }
    }

    /// Print guest log events (`kubewarden/tracing/log`) on stderr as they arrive.
    pub fn set_echo_logs(&mut self, echo: bool) {
        self.echo_logs = echo;
    }

    /// The answer source.
    pub fn source(&self) -> &Arc<dyn ManifestSource> {
        &self.source
    }

    /// A fresh guest instance (no state survives between evaluations, as in the real host) whose
    /// host calls are recorded into `record`.
    fn instance(&self, record: Arc<Mutex<HostCalls>>) -> Result<wapc::WapcHost> {
        let provider = self
            .pre
            .rehydrate(self.epoch_deadlines())
            .map_err(|e| anyhow!("cannot instantiate the policy: {e}"))?;
        let callback = make_callback(
            self.source.clone(),
            self.cache.clone(),
            record,
            self.echo_logs,
        );
        wapc::WapcHost::new(Box::new(provider), Some(Box::new(callback)))
            .map_err(|e| anyhow!("cannot initialize the waPC guest: {e}"))
    }

    /// The guest's `protocol_version` answer (e.g. `"v1"`).
    pub fn protocol_version(&self) -> Result<String> {
        let wapc = self.instance(Arc::new(Mutex::new(HostCalls::default())))?;
        let res = wapc
            .call("protocol_version", &[])
            .map_err(|e| anyhow!("cannot invoke protocol_version: {e}"))?;
        Ok(serde_json::from_slice::<String>(&res)
            .unwrap_or_else(|_| String::from_utf8_lossy(&res).into_owned()))
    }

    /// Call `validate_settings` with `settings` (as policy-evaluator does: a failing call or an
    /// unparseable answer is an invalid-settings answer).
    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsValidation> {
        let wapc = self.instance(Arc::new(Mutex::new(HostCalls::default())))?;
        let payload = serde_json::to_vec(settings)?;
        Ok(match wapc.call("validate_settings", &payload) {
            Ok(res) => serde_json::from_slice::<SettingsValidation>(&res).unwrap_or_else(|e| {
                SettingsValidation {
                    valid: false,
                    message: Some(format!("error: {e:?}")),
                }
            }),
            Err(err) => SettingsValidation {
                valid: false,
                message: Some(format!(
                    "Error invoking settings validation callback: {err:?}"
                )),
            },
        })
    }

    /// Call `validate` with `{"request": request, "settings": settings}`. `request` is a bare
    /// AdmissionRequest or a whole AdmissionReview (its `request` is used). Settings are not
    /// validated here (see [`Host::run`]).
    pub fn evaluate(&self, request: &Value, settings: &Value) -> Result<Evaluation> {
        let request = admission_request(request)?;
        let uid = request
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let record = Arc::new(Mutex::new(HostCalls::default()));
        let wapc = self.instance(record.clone())?;
        let payload = serde_json::to_vec(&serde_json::json!({
            "request": request,
            "settings": settings,
        }))?;

        let started = Instant::now();
        let result = wapc.call("validate", &payload);
        let elapsed = started.elapsed();
        drop(wapc);
        let host_calls = std::mem::take(&mut *record.lock().unwrap());

        let (response, policy_response) = match result {
            Ok(res) => match serde_json::from_slice::<PolicyValidationResponse>(&res) {
                Ok(pol) => {
                    let original = request.get("object").filter(|o| !o.is_null());
                    (build_response(&uid, original, &pol)?, Some(pol))
                }
                Err(e) => (
                    AdmissionResponse::internal_server_error(
                        &uid,
                        &format!("cannot deserialize policy response: {e}"),
                    ),
                    None,
                ),
            },
            Err(e) => (
                AdmissionResponse::internal_server_error(&uid, &e.to_string()),
                None,
            ),
        };
        Ok(Evaluation {
            response,
            policy_response,
            host_calls,
            elapsed,
        })
    }

    /// What `kwctl run` does: validate the settings, then evaluate.
    pub fn run(&self, request: &Value, settings: &Value) -> Result<RunOutcome> {
        let validation = self.validate_settings(settings)?;
        if !validation.valid {
            return Ok(RunOutcome::InvalidSettings(validation));
        }
        Ok(RunOutcome::Evaluated(Box::new(
            self.evaluate(request, settings)?,
        )))
    }
}

/// The AdmissionRequest inside `value` (an AdmissionReview's `request`, or `value` itself).
pub fn admission_request(value: &Value) -> Result<&Value> {
    let obj = value
        .as_object()
        .ok_or_else(|| anyhow!("request to evaluate is invalid: not a JSON object"))?;
    match obj.get("request") {
        Some(inner) if inner.is_object() => Ok(inner),
        _ => Ok(value),
    }
}

/// policy-evaluator's `AdmissionResponse::from_policy_validation_response`.
pub fn build_response(
    uid: &str,
    original: Option<&Value>,
    pol: &PolicyValidationResponse,
) -> Result<AdmissionResponse> {
    if pol.mutated_object.is_some() && original.is_none() {
        return Ok(AdmissionResponse {
            uid: uid.to_string(),
            allowed: false,
            status: Some(AdmissionResponseStatus {
                message: Some("Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed".to_string()),
                code: None,
            }),
            ..Default::default()
        });
    }
    let patch = match (&pol.mutated_object, original) {
        (Some(mutated), Some(original)) => {
            let diff = json_patch::diff(original, mutated);
            if diff.0.is_empty() {
                None
            } else {
                Some(
                    base64::engine::general_purpose::STANDARD
                        .encode(serde_json::to_string(&diff).context("serialize JSON patch")?),
                )
            }
        }
        _ => None,
    };
    let status = (pol.message.is_some() || pol.code.is_some()).then(|| AdmissionResponseStatus {
        message: pol.message.clone(),
        code: pol.code,
    });
    Ok(AdmissionResponse {
        uid: uid.to_string(),
        allowed: pol.accepted,
        patch_type: patch.as_ref().map(|_| "JSONPatch".to_string()),
        patch,
        status,
        audit_annotations: pol.audit_annotations.clone(),
        warnings: pol.warnings.clone(),
    })
}

type CallbackResult = Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>>;

/// The waPC host callback: `kubewarden/oci/*` from `source` (through the cache),
/// `kubewarden/tracing/log` recorded, anything else an error worded like policy-evaluator's.
pub fn make_callback(
    source: Arc<dyn ManifestSource>,
    cache: Option<Arc<Cache>>,
    record: Arc<Mutex<HostCalls>>,
    echo_logs: bool,
) -> impl Fn(u64, &str, &str, &str, &[u8]) -> CallbackResult + Send + Sync + 'static {
    move |_id, binding, namespace, operation, payload| {
        if binding == "kubewarden" && namespace == "tracing" && operation == "log" {
            let line = String::from_utf8_lossy(payload).into_owned();
            if echo_logs {
                eprintln!("policy log: {line}");
            }
            record.lock().unwrap().logs.push(line);
            return Ok(Vec::new());
        }
        let started = Instant::now();
        let image: Option<String> = serde_json::from_slice(payload).ok();
        let mut cached = false;
        let result: Result<Vec<u8>, String> = match (binding, namespace) {
            ("kubewarden", "oci") => match (Operation::from_wapc(operation), image.as_deref()) {
                (Some(op), Some(image)) => {
                    let key = (op, image.to_string());
                    let hit = cache.as_ref().and_then(|c| {
                        let c = c.lock().unwrap();
                        c.get(&key)
                            .filter(|(at, _)| at.elapsed() < HOST_CACHE_TTL)
                            .map(|(_, v)| v.clone())
                    });
                    match hit {
                        Some(v) => {
                            cached = true;
                            Ok(v)
                        }
                        None => {
                            let answer = source.fetch(op, image);
                            if let (Ok(v), Some(c)) = (&answer, &cache) {
                                c.lock().unwrap().insert(key, (Instant::now(), v.clone()));
                            }
                            answer
                        }
                    }
                }
                (Some(_), None) => Err(serde_json::from_slice::<String>(payload)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default()),
                (None, _) if ["v1/verify", "v2/verify"].contains(&operation) => Err(format!(
                    "test-host does not implement kubewarden/oci/{operation}"
                )),
                (None, _) => Err(format!("unknown operation: {operation}")),
            },
            ("kubewarden", "tracing") => Err(format!("unknown operation: {operation}")),
            ("kubewarden", ns @ ("net" | "crypto" | "kubernetes")) => Err(format!(
                "test-host does not implement kubewarden/{ns}/{operation}"
            )),
            ("kubewarden", ns) => Err(format!("unknown namespace: {ns}")),
            (b, _) => Err(format!("unknown binding: {b}")),
        };
        let call = HostCall {
            binding: binding.to_string(),
            namespace: namespace.to_string(),
            operation: operation.to_string(),
            image,
            ok: result.is_ok(),
            error: result.as_ref().err().cloned(),
            cached,
            micros: started.elapsed().as_micros() as u64,
        };
        record.lock().unwrap().calls.push(call);
        result.map_err(|e| e.into())
    }
}
