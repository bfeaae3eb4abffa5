//! The host calls the compiled policy makes, counted by the test host (answers from the
//! in-memory fixture registry): one `v1/oci_manifest` per distinct image, plus one
//! `v1/oci_manifest_config` per distinct single-platform image, none for skipped Pods.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};
use test_host::{fixtures, Host, Operation};

const REGISTRY: &str = "127.0.0.1:5000";

fn host() -> Option<Host> {
    let path = std::env::var_os("TEST_HOST_POLICY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../policy.wasm"));
    if !path.exists() {
        assert!(
            std::env::var_os("SKIP_WASM_TESTS").is_some(),
            "no policy.wasm: run `make policy.wasm` (or set TEST_HOST_POLICY, or SKIP_WASM_TESTS=1)"
        );
        return None;
    }
    let mut host = Host::from_file(&path, Arc::new(fixtures::in_memory_source(REGISTRY))).unwrap();
    // Count every call the policy makes, not what the host's cache would spare the registry.
    host.set_cache(false);
    Some(host)
}

fn pod(images: &[String], extra_spec: Value) -> Value {
    let containers: Vec<Value> = images
        .iter()
        .enumerate()
        .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
        .collect();
    let mut spec = json!({"containers": containers});
    for (key, value) in extra_spec.as_object().unwrap() {
        spec[key] = value.clone();
    }
    json!({"uid": "calls", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}})
}

fn image(name: &str) -> String {
    format!("{REGISTRY}/{name}")
}

/// (v1/oci_manifest, v1/oci_manifest_config, v1/manifest_digest) calls for one evaluation.
fn calls(host: &Host, request: &Value) -> (u64, u64, u64) {
    let evaluation = host.evaluate(request, &json!({})).unwrap();
    assert!(evaluation.allowed(), "{}", evaluation.response_line());
    let calls = &evaluation.host_calls;
    (
        calls.count(Operation::OciManifest),
        calls.count(Operation::OciManifestConfig),
        calls.count(Operation::ManifestDigest),
    )
}

#[test]
fn one_index_image_is_one_lookup() {
    let Some(host) = host() else { return };
    let request = pod(&[image("multi/oci-index:1.0")], json!({}));
    assert_eq!(calls(&host, &request), (1, 0, 0));
}

#[test]
fn three_images_two_identical_are_two_lookups_plus_one_config() {
    let Some(host) = host() else { return };
    let request = pod(
        &[
            image("multi/oci-index:1.0"),
            image("single/arm64-oci:1.0"),
            image("multi/oci-index:1.0"),
        ],
        json!({}),
    );
    assert_eq!(calls(&host, &request), (2, 1, 0));
}

#[test]
fn a_hundred_containers_of_one_image_are_one_lookup() {
    let Some(host) = host() else { return };
    let request = pod(&vec![image("multi/docker-list:1.0"); 100], json!({}));
    assert_eq!(calls(&host, &request), (1, 0, 0));
}

#[test]
fn skipped_pods_cost_no_lookup() {
    let Some(host) = host() else { return };
    let bound = pod(
        &[image("multi/oci-index:1.0")],
        json!({"nodeName": "node-1"}),
    );
    assert_eq!(calls(&host, &bound), (0, 0, 0));
    let mut daemon = pod(&[image("multi/oci-index:1.0")], json!({}));
    daemon["object"]["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "1", "controller": true}]);
    assert_eq!(calls(&host, &daemon), (0, 0, 0));
}
