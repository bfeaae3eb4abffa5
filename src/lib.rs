//! image-arch-affinity: a Kubewarden policy that keeps Pods off nodes whose CPU architecture their
//! images cannot run on.
//!
//! The decision is plain Rust over plain data (`policy`, with `pod`, `resolve`, `affinity`, ...);
//! this file is the thin waPC layer: JSON in, JSON out, host calls through `registry`.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod affinity;
pub mod edit;
pub mod image;
pub mod platform;
pub mod pod;
pub mod policy;
pub mod registry;
pub mod resolve;
pub mod settings;
pub mod tolerations;
pub mod workload;

use std::borrow::Cow;
use std::time::{Duration, Instant};

use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use serde::Deserialize;
use serde_json::Value;

use policy::{Decision, Request, Verdict};
use registry::Registry;
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
/// ...) is skipped without being built, and strings are borrowed from the payload when they can be.
#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(default)]
    settings: Settings,
    #[serde(borrow)]
    request: AdmissionRequest<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct AdmissionRequest<'a> {
    #[serde(borrow)]
    kind: Kind<'a>,
    #[serde(borrow)]
    operation: Cow<'a, str>,
    #[serde(borrow, rename = "subResource", alias = "sub_resource")]
    sub_resource: Cow<'a, str>,
    object: Value,
    #[serde(rename = "oldObject", alias = "old_object")]
    old_object: Value,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Kind<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
}

/// Answers `validate`: a `ValidationRequest` in, a `ValidationResponse` out.
pub fn validate_payload(payload: &[u8], registry: &mut dyn Registry) -> Vec<u8> {
    let response = match serde_json::from_slice::<Payload>(payload) {
        Err(error) => ValidationResponse {
            accepted: false,
            message: Some(format!(
                "image-arch-affinity: cannot read the admission request: {error}"
            )),
            code: Some(400),
            mutated_object: None,
            audit_annotations: None,
            warnings: None,
        },
        Ok(Payload { settings, request }) => {
            let started = Instant::now();
            let mut registry = registry::Budgeted::new(
                registry,
                Duration::from_millis(settings.lookup_budget_milliseconds),
                || started.elapsed(),
            );
            let decision = policy::evaluate(
                Request {
                    kind: &request.kind.kind,
                    operation: &request.operation,
                    sub_resource: &request.sub_resource,
                    object: request.object,
                    old_object: &request.old_object,
                },
                &settings,
                &mut registry,
            );
            response_for(decision)
        }
    };
    serde_json::to_vec(&response).unwrap_or_default()
}

fn response_for(decision: Decision) -> ValidationResponse {
    let warnings = (!decision.warnings.is_empty()).then_some(decision.warnings);
    let (accepted, message, mutated_object) = match decision.verdict {
        Verdict::Accept => (true, None, None),
        Verdict::Mutate(object) => (true, None, Some(object)),
        Verdict::Reject(message) => (false, Some(message), None),
    };
    ValidationResponse {
        accepted,
        message,
        code: None,
        mutated_object,
        audit_annotations: None,
        warnings,
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
        Ok(super::validate_payload(
            payload,
            &mut crate::registry::HostRegistry,
        ))
    }

    fn validate_settings(payload: &[u8]) -> CallResult {
        Ok(super::validate_settings_payload(payload))
    }
}
