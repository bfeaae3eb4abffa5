//! Weighted preferred architectures (`preferredArchitectures`) and the architectures a Pod is
//! pinned to when none of its images could be looked up (`fallbackArchitectures`), each with the
//! exact patch, warnings and host calls.

mod common;
use common::*;
use serde_json::{json, Value};

fn with_preferences(required: &[&str], preferred: &[(&str, i64)]) -> Value {
    let mut affinity = add_required(required);
    affinity["value"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
        json!(preferred
            .iter()
            .map(
                |(arch, weight)| json!({"weight": weight, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}]}})
            )
            .collect::<Vec<_>>());
    affinity
}

const WEIGHTED: &str = r#"{"preferredArchitectures": [
    {"architecture": "arm64", "weight": 80}, {"architecture": "s390x", "weight": 30}, {"architecture": "amd64", "weight": 20}]}"#;

fn weighted() -> Value {
    serde_json::from_str(WEIGHTED).unwrap()
}

#[test]
fn weighted_preferences_for_the_architectures_the_pod_may_finally_run_on() {
    // multi runs on amd64 and arm64: their terms, in the setting's order; s390x is no choice.
    let r = run(&pod(&["multi:1"], json!({})), weighted());
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        with_preferences(&["amd64", "arm64"], &[("arm64", 80), ("amd64", 20)])
    ]));
    // One architecture left: nothing to prefer.
    let r = run(&pod(&["ghcr.io/org/arm64-only:1"], json!({})), weighted());
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    // Cut to the cluster's nodes: only what the Pod may finally run on.
    let mut settings = weighted();
    settings["schedulableArchitectures"] = json!(["amd64", "arm64", "s390x", "riscv64"]);
    let r = run(&pod(&["list:1"], json!({})), settings);
    r.assert_patch(json!([
        add_annotation("amd64,arm64,s390x"),
        with_preferences(
            &["amd64", "arm64", "s390x"],
            &[("arm64", 80), ("s390x", 30), ("amd64", 20)]
        )
    ]));
}

#[test]
fn the_pods_own_preferences_and_annotation_come_first() {
    // A Pod that already weighs an architecture keeps its own preferences: none added.
    let object = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}}]}}}),
    );
    let r = run(&object, weighted());
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
         "value": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]}]}}
    ]));
    // The annotation overrides the setting: its architecture alone, preferredArchitectureWeight.
    let mut annotated = pod(&["multi:1"], json!({}));
    annotated["metadata"]["annotations"] =
        json!({"image-arch-affinity.kubewarden.io/preferred-architecture": "amd64"});
    let r = run(&annotated, weighted());
    r.assert_patch(json!([
        {"op": "add", "path": "/metadata/annotations/image-arch-affinity.kubewarden.io~1architectures", "value": "amd64,arm64"},
        with_preferences(&["amd64", "arm64"], &[("amd64", 50)])
    ]));
}

fn failing_registry() -> FixtureRegistry {
    let mut registry = FixtureRegistry::new();
    registry.fail(
        "ghcr.io/org/down:1",
        "Host error: Fail to interact with OCI registry: error sending request",
    );
    registry.fail(
        "ghcr.io/org/down:2",
        "Host error: Fail to interact with OCI registry: error sending request",
    );
    registry
}

#[test]
fn a_pod_none_of_whose_images_could_be_looked_up_is_pinned_to_the_fallback() {
    let object = pod(&["ghcr.io/org/down:1", "ghcr.io/org/down:2"], json!({}));
    let r = run_with(
        &mut failing_registry(),
        &object,
        &settings(json!({"fallbackArchitectures": ["amd64"]})),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    assert_eq!(
        r.decision.warnings,
        [
            "image-arch-affinity: image \"ghcr.io/org/down:1\" was left out of the architecture decision because its lookup failed: Fail to interact with OCI registry: error sending request",
            "image-arch-affinity: image \"ghcr.io/org/down:2\" was left out of the architecture decision because its lookup failed: Fail to interact with OCI registry: error sending request",
            "image-arch-affinity: no image of the Pod could be looked up (\"ghcr.io/org/down:1\", \"ghcr.io/org/down:2\"): it is pinned as if they ran on amd64 (setting fallbackArchitectures)"
        ]
    );
    // Unset: left unpinned, as before.
    let r = run_with(&mut failing_registry(), &object, &settings(json!({})));
    r.assert_accepted_unchanged();
    // One image known: decided from it, the fallback unused.
    let object = pod(
        &["ghcr.io/org/down:1", "ghcr.io/org/arm64-only:1"],
        json!({}),
    );
    let r = run_with(
        &mut failing_registry(),
        &object,
        &settings(json!({"fallbackArchitectures": ["amd64"]})),
    );
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
}

#[test]
fn a_fallback_that_fits_none_of_the_pods_nodes_leaves_it_unpinned() {
    let object = pod(
        &["ghcr.io/org/down:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "arm64"}}),
    );
    let r = run_with(
        &mut failing_registry(),
        &object,
        &settings(json!({"fallbackArchitectures": ["amd64"]})),
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        [
            "image-arch-affinity: image \"ghcr.io/org/down:1\" was left out of the architecture decision because its lookup failed: Fail to interact with OCI registry: error sending request",
            "image-arch-affinity: no image of the Pod could be looked up, and the fallback architectures (amd64; setting fallbackArchitectures) fit none of the nodes it may run on: it is not pinned"
        ]
    );
}

#[test]
fn with_read_nodes_the_fallback_is_cut_to_the_cluster() {
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
    ]);
    let object = pod(&["ghcr.io/org/down:1"], json!({}));
    let r = run_in_cluster(
        &mut failing_registry(),
        &mut cluster,
        "Pod",
        "CREATE",
        &object,
        &Value::Null,
        &settings(json!({"readNodes": true, "fallbackArchitectures": ["amd64", "s390x"]})),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    // The fallback stands for the images: their two lists (and the Windows Nodes: none).
    let list = |selector: &str| {
        format!("list_resources_all v1/Node {selector} masks status.nodeInfo.architecture,status.nodeInfo.operatingSystem")
    };
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,s390x)"),
            list("kubernetes.io/os=windows"),
            list("kubernetes.io/os=linux,kubernetes.io/arch in (amd64,s390x)"),
            NODE_POOLS_CALL.to_string(),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
    // A bound Pod is never pinned: the fallback does not apply.
    let bound = pod(&["ghcr.io/org/down:1"], json!({"nodeName": "arm-1"}));
    let r = run_in_cluster(
        &mut failing_registry(),
        &mut cluster,
        "Pod",
        "CREATE",
        &bound,
        &Value::Null,
        &settings(json!({"readNodes": true, "fallbackArchitectures": ["amd64"]})),
    );
    r.assert_accepted_unchanged();
}
