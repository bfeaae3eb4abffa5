//! The JSON in and out of the waPC entry points, natively (the same functions the wasm exports).

mod common;
use common::FixtureRegistry;
use image_arch_affinity::{validate_payload, validate_settings_payload};
use serde_json::{json, Value};

fn as_json(bytes: Vec<u8>) -> Value {
    serde_json::from_slice(&bytes).expect("the policy answers JSON")
}

#[test]
fn settings_answers() {
    assert_eq!(
        as_json(validate_settings_payload(b"{}")),
        json!({"valid": true, "message": null})
    );
    assert_eq!(
        as_json(validate_settings_payload(
            br#"{"preferredArchitectureWeight": 500}"#
        )),
        json!({"valid": false, "message": "preferredArchitectureWeight: 500 is outside 1..100 (the weight of a preferred node affinity term)"})
    );
    let garbage = as_json(validate_settings_payload(b"\xff not json"));
    assert_eq!(garbage["valid"], json!(false));
    assert!(garbage["message"]
        .as_str()
        .unwrap()
        .starts_with("invalid settings: "));
}

#[test]
fn validate_mutates_with_the_whole_object() {
    let object = common::pod(&["multi:1"], json!({}));
    let payload = json!({"settings": {}, "request": {"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE", "object": object}});
    let response = as_json(validate_payload(
        payload.to_string().as_bytes(),
        &mut FixtureRegistry::new(),
    ));
    assert_eq!(response["accepted"], json!(true));
    assert_eq!(response["warnings"], Value::Null);
    let mutated = &response["mutated_object"];
    assert_eq!(mutated["spec"]["x-unknown-spec-field"], json!({"kept": 1}));
    assert_eq!(
        mutated["metadata"]["annotations"]["image-arch-affinity.kubewarden.io/architectures"],
        json!("amd64,arm64")
    );
}

#[test]
fn validate_rejects_an_unreadable_request_with_a_message() {
    let response = as_json(validate_payload(
        b"{\"settings\": {\"bogus\": 1}, \"request\": {}}",
        &mut FixtureRegistry::new(),
    ));
    assert_eq!(response["accepted"], json!(false));
    assert_eq!(response["code"], json!(400));
    assert!(response["message"]
        .as_str()
        .unwrap()
        .starts_with("image-arch-affinity: cannot read the admission request: "));
}

#[test]
fn validate_rejection_carries_message_and_warnings() {
    let mut registry = FixtureRegistry::new();
    registry.fail("ghcr.io/org/gone:1", "Host error: boom");
    let object = common::pod(&["ghcr.io/org/gone:1", "ghcr.io/org/windows:1"], json!({}));
    let payload = json!({"settings": {}, "request": {"uid": "1", "kind": {"kind": "Pod"}, "operation": "CREATE", "object": object}});
    let response = as_json(validate_payload(
        payload.to_string().as_bytes(),
        &mut registry,
    ));
    assert_eq!(
        response,
        json!({"accepted": false, "code": null, "mutated_object": null, "audit_annotations": null,
            "message": "image-arch-affinity: no linux node architecture runs every image of this Pod: \"ghcr.io/org/windows:1\" has no linux build (only windows/amd64). Use images built for a common architecture",
            "warnings": ["image-arch-affinity: image \"ghcr.io/org/gone:1\" was left out of the architecture decision because its lookup failed: boom"]})
    );
}
