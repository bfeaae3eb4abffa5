//! One evaluation, as kwctl makes it: the module loaded with wasmtime through waPC
//! (wasmtime-provider, WASI), `validate_settings`, then `validate` with Kubewarden's payloads;
//! the guest's `ValidationResponse` turned into the AdmissionResponse kwctl prints (the patch is
//! `json_patch::diff` of the request's object and the returned one), then the policy's mode
//! and `mutating` applied as policy-evaluator's `AdmissionResponseHandler` applies them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Result};
use base64::Engine as _;
use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::capabilities::Host;
use crate::policy::Policy;

/// policy-evaluator's `AdmissionRequest`: what kwctl reads of `--request-path` (a bare
/// AdmissionRequest, or the `request` of an AdmissionReview) and gives the guest.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    uid: String,
    kind: Value,
    resource: Value,
    operation: String,
    user_info: Value,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl AdmissionRequest {
    pub fn read(text: &str) -> Result<AdmissionRequest> {
        AdmissionRequest::from_value(serde_json::from_str(text)?)
    }

    pub fn from_value(value: Value) -> Result<AdmissionRequest> {
        if !value.is_object() {
            bail!("Invalid request object");
        }
        let request = match value.get("kind").and_then(Value::as_str) {
            Some("AdmissionReview") => value
                .get("request")
                .cloned()
                .ok_or_else(|| anyhow!("invalid AdmissionReview object"))?,
            _ => value,
        };
        serde_json::from_value(request)
            .map_err(|e| anyhow!("cannot build AdmissionRequest object from given input: {e}"))
    }

    /// The object (null for a DELETE).
    fn object(&self) -> Option<&Value> {
        self.rest.get("object").filter(|object| !object.is_null())
    }
}

/// The AdmissionResponse kwctl prints, its fields in kwctl's order.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    pub audit_annotations: Option<HashMap<String, String>>,
    pub warnings: Option<Vec<String>>,
}

#[derive(Serialize, Default)]
pub struct Status {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

fn rejected(uid: &str, message: String, code: Option<u16>) -> AdmissionResponse {
    AdmissionResponse {
        uid: uid.into(),
        status: Some(Status {
            message: Some(message),
            code,
        }),
        ..Default::default()
    }
}

/// The module compiled and linked once (wasmtime-provider's pre-instantiated provider, as
/// policy-evaluator keeps it), rehydrated into a fresh instance per use.
pub struct Compiled(wasmtime_provider::WasmtimeEngineProviderPre);

impl Compiled {
    pub fn new(policy: &Policy) -> Result<Compiled> {
        let mut config = wasmtime::Config::new();
        config.cache(Some(wasmtime::Cache::new(wasmtime::CacheConfig::new())?));
        config.wasm_function_references(true);
        let engine = wasmtime::Engine::new(&config)?;
        let module = wasmtime::Module::from_file(&engine, &policy.module)
            .map_err(|e| anyhow!("cannot load the module {:?}: {e}", policy.module))?;
        let pre = wasmtime_provider::WasmtimeEngineProviderBuilder::new()
            .engine(engine)
            .module(module)
            .build_pre()?;
        Ok(Compiled(pre))
    }

    /// A fresh instance (no guest state survives it, as in Kubewarden's hosts) whose host calls
    /// `host` answers.
    pub fn instance(&self, host: Arc<Mutex<Host>>) -> Result<Module> {
        let provider = self.0.rehydrate(None)?;
        let callback =
            move |_id: u64, binding: &str, namespace: &str, operation: &str, payload: &[u8]| {
                let mut host = host.lock().map_err(|_| "the host's state is poisoned")?;
                Ok(host.call(binding, namespace, operation, payload)?)
            };
        Ok(Module(wapc::WapcHost::new(
            Box::new(provider),
            Some(Box::new(callback)),
        )?))
    }
}

/// An instance of the module, ready to be called.
pub struct Module(wapc::WapcHost);

impl Module {
    /// `validate_settings`, worded as policy-evaluator words its failures.
    pub fn validate_settings(
        &self,
        settings: &serde_json::Map<String, Value>,
    ) -> SettingsValidationResponse {
        let invalid = |message| SettingsValidationResponse {
            valid: false,
            message: Some(message),
        };
        match self.0.call(
            "validate_settings",
            &serde_json::to_vec(settings).unwrap_or_default(),
        ) {
            Ok(answer) => serde_json::from_slice(&answer)
                .unwrap_or_else(|e| invalid(format!("error: InvalidResponseWithError({e:?})"))),
            Err(e) => invalid(format!(
                "Error invoking settings validation callback: {e:?}"
            )),
        }
    }

    /// `validate`, and the AdmissionResponse built from the guest's answer.
    pub fn validate(&self, request: &AdmissionRequest, policy: &Policy) -> AdmissionResponse {
        let uid = request.uid.as_str();
        let payload = json!({ "request": request, "settings": policy.settings }).to_string();
        let response = match self.0.call("validate", payload.as_bytes()) {
            Ok(answer) => serde_json::from_slice::<ValidationResponse>(&answer)
                .map_err(|e| anyhow!("{e}"))
                .and_then(|answer| admission_response(uid, request.object(), answer)),
            Err(e) => Err(anyhow!("{e}")),
        };
        let response = response
            .unwrap_or_else(|e| rejected(uid, format!("internal server error: {e}"), Some(500)));
        apply_policy(response, policy)
    }
}

fn admission_response(
    uid: &str,
    object: Option<&Value>,
    answer: ValidationResponse,
) -> Result<AdmissionResponse> {
    let patch = match (answer.mutated_object, object) {
        (Some(_), None) => return Ok(rejected(uid, "Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed".into(), None)),
        (Some(mutated), Some(object)) => {
            let diff = json_patch::diff(object, &mutated);
            (!diff.0.is_empty()).then(|| base64::engine::general_purpose::STANDARD.encode(json!(diff).to_string()))
        }
        (None, _) => None,
    };
    Ok(AdmissionResponse {
        uid: uid.into(),
        allowed: answer.accepted,
        patch_type: patch.as_ref().map(|_| "JSONPatch".to_string()),
        patch,
        status: (answer.message.is_some() || answer.code.is_some()).then_some(Status {
            message: answer.message,
            code: answer.code,
        }),
        audit_annotations: answer.audit_annotations,
        warnings: answer.warnings,
    })
}

/// policy-evaluator's `AdmissionResponseHandler`: monitor mode accepts unchanged; a policy not
/// allowed to mutate has its mutations rejected (a manifest's `message` is not applied).
fn apply_policy(mut response: AdmissionResponse, policy: &Policy) -> AdmissionResponse {
    if policy.monitor {
        return AdmissionResponse {
            allowed: true,
            patch_type: None,
            patch: None,
            status: None,
            ..response
        };
    }
    if !policy.allowed_to_mutate && response.patch.is_some() {
        response = AdmissionResponse {
            allowed: false,
            patch_type: None,
            patch: None,
            status: Some(Status {
                message: Some(format!("Request rejected by policy {}. The policy attempted to mutate the request, but it is currently configured to not allow mutations.", policy.id)),
                ..Default::default()
            }),
            ..response
        };
    }
    response
}
