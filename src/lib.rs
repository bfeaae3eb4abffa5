//! image-arch-affinity: a Kubewarden policy that keeps Pods off nodes whose CPU architecture their
//! images cannot run on.
//!
//! The rooms follow the steps, and data flows one way (`tests/layers.rs` holds them to it):
//! `host` (the raw host calls behind small traits, budgets, the sparse request view), `settings`,
//! `read` (the Pod, its constraints, its images' platforms, Nodes, NodePools, and the cache of
//! what was read), `message` (every text), `edit` (a plan written into the Pod's JSON), `decide`
//! (the plan, decided once), `policy` (routing). This file is the thin waPC layer: JSON in, JSON
//! out, host calls through `host::registry` (images) and `host::cluster` (Nodes and NodePools,
//! with `readNodes`).

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod decide;
pub mod edit;
pub mod host;
pub mod image;
pub mod message;
pub mod platform;
pub mod policy;
pub mod read;
pub mod settings;

use std::borrow::Cow;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use host::cluster::{Cluster, NoCluster};
use host::registry::Registry;
use host::sparse::Sparse;
use policy::{Decision, Request, Verdict};
use settings::Settings;

/// Answers `validate_settings`: the settings are valid, or why not.
pub fn validate_settings_payload(payload: &[u8]) -> Vec<u8> {
    let result = Settings::from_json(payload).and_then(|settings| settings.validate());
    let response = SettingsValidationResponse {
        valid: result.is_ok(),
        message: result.err(),
    };
    serde_json::to_vec(&response).unwrap_or_default()
}

/// The parts of the `ValidationRequest` the policy reads. Everything else (userInfo, options,
/// ...) is skipped without being built, strings are borrowed from the payload when they can be,
/// and of the objects only what the decision needs is built (`sparse`).
#[derive(Deserialize)]
pub struct Payload<'a> {
    #[serde(default)]
    pub settings: Settings,
    #[serde(borrow)]
    pub request: RawRequest<'a>,
}

/// An admission request, its objects read sparsely (`sparse`).
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub struct RawRequest<'a> {
    #[serde(borrow)]
    pub kind: Kind<'a>,
    #[serde(borrow)]
    pub operation: Cow<'a, str>,
    #[serde(borrow, rename = "subResource", alias = "sub_resource")]
    pub sub_resource: Cow<'a, str>,
    #[serde(borrow)]
    pub object: Option<Sparse<'a>>,
    #[serde(borrow, rename = "oldObject", alias = "old_object")]
    pub old_object: Option<Sparse<'a>>,
}

/// The request's `kind` (group/version/kind): the policy reads the kind.
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub struct Kind<'a> {
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
}

/// Decides on a request: reads its objects sparsely (`sparse`), decides on that view, and writes
/// a mutated object back whole, with every value the decision did not read as it came. The
/// cluster's Nodes are read only with `readNodes`.
pub fn decide_in_cluster(
    mut request: RawRequest<'_>,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
    now: u64,
) -> serde_json::Result<Decision<Vec<u8>>> {
    let (object, old_object) = (&mut request.object, &request.old_object);
    let decision = policy::evaluate(
        Request {
            kind: &request.kind.kind,
            operation: &request.operation,
            sub_resource: &request.sub_resource,
            // The view is moved into the decision; `object` keeps how to write it back.
            object: object.as_mut().map_or(Value::Null, |o| o.view.take()),
            old_object: old_object.as_ref().map_or(&Value::Null, |o| &o.view),
            now,
        },
        settings,
        registry,
        cluster,
    );
    let verdict = match (decision.verdict, object) {
        (Verdict::Mutate(view), Some(object)) => Verdict::Mutate(object.write(&view)?),
        (Verdict::Mutate(view), None) => Verdict::Mutate(serde_json::to_vec(&view)?),
        (Verdict::Accept, _) => Verdict::Accept,
        (Verdict::Reject(message), _) => Verdict::Reject(message),
    };
    Ok(Decision {
        verdict,
        warnings: decision.warnings,
    })
}

/// Answers `validate`: a `ValidationRequest` in, a `ValidationResponse` out.
pub fn validate_payload(payload: &[u8], registry: &mut dyn Registry) -> Vec<u8> {
    validate_payload_in_cluster(payload, registry, &mut NoCluster)
}

/// `validate_payload`, with a cluster whose Nodes the decision reads when `readNodes` is on.
pub fn validate_payload_in_cluster(
    payload: &[u8],
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Vec<u8> {
    let decision = serde_json::from_slice::<Payload>(payload).and_then(|payload| {
        let started = Instant::now();
        let budget = Duration::from_millis(payload.settings.lookup_budget_milliseconds);
        let mut registry = host::registry::Budgeted::new(registry, budget, || started.elapsed());
        let mut cluster = host::cluster::Budgeted::new(cluster, budget, || started.elapsed());
        decide_in_cluster(
            payload.request,
            &payload.settings,
            &mut registry,
            &mut cluster,
            unix_seconds(),
        )
    });
    match decision {
        Ok(decision) => response_for(decision),
        Err(error) => Response {
            accepted: false,
            message: Some(format!(
                "image-arch-affinity: cannot read the admission request: {error}"
            )),
            code: Some(400),
            audit_annotations: None,
            warnings: None,
            mutated_object: None,
        }
        .to_json(None),
    }
}

/// The wall clock, in seconds since the Unix epoch (0 if the host's clock is before it).
fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

fn response_for(decision: Decision<Vec<u8>>) -> Vec<u8> {
    let warnings = (!decision.warnings.is_empty()).then_some(decision.warnings);
    let (accepted, message, mutated_object) = match decision.verdict {
        Verdict::Accept => (true, None, None),
        Verdict::Mutate(object) => (true, None, Some(object)),
        Verdict::Reject(message) => (false, Some(message), None),
    };
    Response {
        accepted,
        message,
        code: None,
        audit_annotations: None,
        warnings,
        mutated_object: None,
    }
    .to_json(mutated_object)
}

/// The SDK's `ValidationResponse` (same fields, `audit_annotations` never set), with the
/// mutated object last so that it can be written as the JSON text it already is.
#[derive(Serialize)]
struct Response {
    accepted: bool,
    message: Option<String>,
    code: Option<u16>,
    audit_annotations: Option<()>,
    warnings: Option<Vec<String>>,
    mutated_object: Option<()>,
}

impl Response {
    fn to_json(&self, mutated_object: Option<Vec<u8>>) -> Vec<u8> {
        let mut json = serde_json::to_vec(self).unwrap_or_default();
        if let Some(object) = mutated_object {
            // The JSON ends with `"mutated_object":null}`: the object replaces that null.
            if json.ends_with(b"null}") {
                json.truncate(json.len() - b"null}".len());
                json.extend_from_slice(&object);
                json.push(b'}');
            }
        }
        json
    }
}

#[cfg(target_arch = "wasm32")]
mod guest {
    use wapc_guest::{register_function, CallResult};

    #[no_mangle]
    pub extern "C" fn wapc_init() {
        register_function("validate", validate);
        register_function("validate_settings", validate_settings);
        register_function(
            "protocol_version",
            kubewarden_policy_sdk::protocol_version_guest,
        );
    }

    fn validate(payload: &[u8]) -> CallResult {
        Ok(super::validate_payload_in_cluster(
            payload,
            &mut crate::host::registry::HostRegistry,
            &mut crate::host::cluster::HostCluster,
        ))
    }

    fn validate_settings(payload: &[u8]) -> CallResult {
        Ok(super::validate_settings_payload(payload))
    }
}
