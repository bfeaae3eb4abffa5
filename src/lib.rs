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

use kubewarden_policy_sdk::request::ValidationRequest;
use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;

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

/// Answers `validate`: a `ValidationRequest` in, a `ValidationResponse` out.
pub fn validate_payload(payload: &[u8], registry: &mut dyn Registry) -> Vec<u8> {
    let response = match ValidationRequest::<Settings>::new(payload) {
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
        Ok(request) => {
            let admission = request.request;
            let decision = policy::evaluate(
                Request {
                    kind: &admission.kind.kind,
                    operation: &admission.operation,
                    sub_resource: &admission.sub_resource,
                    object: admission.object,
                    old_object: &admission.old_object,
                },
                &request.settings,
                registry,
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
