//! End to end through wasm: loads the policy module (TEST_HOST_POLICY, else <repo>/policy.wasm)
//! and evaluates a Pod against the in-memory fixture registry. Fails when no module has been built
//! (`make policy.wasm`), unless SKIP_WASM_TESTS=1. Policy-agnostic: checks the host's side of the
//! exchange.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use test_host::{fixtures, Host, RunOutcome};

fn policy_path() -> Option<PathBuf> {
    let path = std::env::var_os("TEST_HOST_POLICY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../policy.wasm"));
    path.exists().then_some(path)
}

#[test]
fn policy_module_round_trip() {
    let Some(path) = policy_path() else {
        assert!(
            std::env::var_os("SKIP_WASM_TESTS").is_some(),
            "no policy.wasm: run `make policy.wasm` (or set TEST_HOST_POLICY, or SKIP_WASM_TESTS=1)"
        );
        return;
    };
    let registry = "127.0.0.1:5000";
    let host = Host::from_file(&path, Arc::new(fixtures::in_memory_source(registry))).unwrap();
    assert!(!host.protocol_version().unwrap().is_empty());

    let request = json!({
        "uid": "policy-wasm-test",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "namespace": "default",
        "userInfo": {"username": "test"},
        "object": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [
                {"name": "a", "image": format!("{registry}/multi/oci-index:1.0")},
                {"name": "b", "image": format!("{registry}/multi/docker-list:1.0")}
            ]}
        }
    });
    // Same request wrapped in an AdmissionReview gives the same answer.
    let review =
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
    match host.run(&request, &json!({})).unwrap() {
        RunOutcome::InvalidSettings(v) => panic!("default settings rejected: {v:?}"),
        RunOutcome::Evaluated(eval) => {
            let line = eval.response_line();
            let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(parsed["uid"], "policy-wasm-test");
            assert!(!line.contains("internal server error"), "{line}");
            if let Some(patch) = eval.patch() {
                assert!(patch.is_array());
                assert!(eval.patched_object(&request["object"]).is_some());
            }
            let again = host.evaluate(&review, &json!({})).unwrap();
            assert_eq!(again.response, eval.response);
            eprintln!(
                "policy_module_round_trip: {line}\nhost calls {:?} in {:?}",
                eval.host_calls.counts(),
                eval.elapsed
            );
        }
    }
}
