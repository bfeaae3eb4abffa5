//! Registry answers and Pod values are untrusted (issue 20): a value no node can carry never
//! reaches a patch (nor, with `readNodes`, a Node selector: tests/nodes.rs). Each case with its
//! exact outcome.

mod common;
use common::*;
use serde_json::{json, Value};

fn index_of(platforms: &[Value]) -> String {
    let entries: Vec<Value> = platforms
        .iter()
        .map(|platform| json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": DIGEST, "size": 500, "platform": platform}))
        .collect();
    json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": entries}).to_string()
}

fn run(registry: &mut FixtureRegistry, object: &Value, settings_json: Value) -> Run {
    run_with(registry, object, &settings(settings_json))
}

#[test]
fn index_entries_whose_values_no_node_reports_are_left_out_with_a_warning() {
    let mut registry = FixtureRegistry::new();
    registry.index(
        "ghcr.io/org/odd:1",
        &index_of(&[
            json!({"os": "linux", "architecture": "amd64"}),
            json!({"os": "linux", "architecture": "arm 64"}),
            json!({"os": "linux", "architecture": "s390x),pool in (zz"}),
            json!({"os": "linux", "architecture": "a".repeat(64)}),
            json!({"os": "linux", "architecture": "sparc64"}),
            json!({"os": "plan9", "architecture": "arm64"}),
        ]),
    );
    let r = run(
        &mut registry,
        &pod(&["ghcr.io/org/odd:1"], json!({})),
        json!({}),
    );
    r.assert_patch(json!([
        {"op": "add", "path": "/metadata/annotations", "value": {"image-arch-affinity.kubewarden.io/architectures": "amd64"}},
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}}}
    ]));
    // Each value quoted and cut to 40 characters; the listing cut in its middle to fit 256.
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: image \"ghcr.io/org/odd:1\": index entries left out of the architecture decision (no node reports architecture \"aaaaaaaaaaaaaaaaaaaaaaaaaa…aaaaaaaaaaaa\", architecture \"arm 64\", architectur … l in (zz\", architecture \"sparc64\", os \"plan9\")"]
    );
    assert_eq!(r.decision.warnings[0].chars().count(), 256);
}

#[test]
fn a_windows_entry_whose_os_version_is_no_build_is_left_out() {
    let mut registry = FixtureRegistry::new();
    registry.index(
        "ghcr.io/org/win:1",
        &index_of(&[
            json!({"os": "windows", "architecture": "amd64", "os.version": "10.0.20348.2527"}),
            json!({"os": "windows", "architecture": "amd64", "os.version": "10.0.17763),node.kubernetes.io/windows-build in (1"}),
        ]),
    );
    let object = pod(&["ghcr.io/org/win:1"], json!({"os": {"name": "windows"}}));
    let r = run(&mut registry, &object, json!({"pinWindowsBuild": true}));
    r.assert_patch(json!([
        {"op": "add", "path": "/metadata/annotations", "value": {"image-arch-affinity.kubewarden.io/architectures": "amd64"}},
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}, {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}]}]}}}}
    ]));
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: image \"ghcr.io/org/win:1\": index entries left out of the architecture decision (no node reports os.version \"10.0.17763),node.kubernete…-build in (1\")"]
    );
    // Every entry odd: a lookup failure naming the values.
    registry.index(
        "ghcr.io/org/win-odd:1",
        &index_of(&[json!({"os": "windows", "architecture": "amd64", "os.version": "10.0.x"})]),
    );
    let object = pod(
        &["ghcr.io/org/win-odd:1"],
        json!({"os": {"name": "windows"}}),
    );
    let r = run(&mut registry, &object, json!({"onLookupFailure": "reject"}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"ghcr.io/org/win-odd:1\": the image index has no entry a node can run (no node reports os.version \"10.0.x\") (setting onLookupFailure: reject)"
    );
}

#[test]
fn a_pod_constraint_on_a_value_no_node_reports_admits_no_node() {
    let mut registry = FixtureRegistry::new();
    let selector = pod(
        &["multi:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "x86 64"}}),
    );
    assert_eq!(
        run(&mut registry, &selector, json!({})).rejection(),
        "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=x86 64 admits no linux node of any architecture; its images all run on: amd64, arm64"
    );
    let os = pod(
        &["multi:1"],
        json!({"nodeSelector": {"kubernetes.io/os": "plan9"}}),
    );
    let r = run(&mut registry, &os, json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod asks for nodes of OS \"plan9\", which no node reports (nodes run linux or windows)"
    );
    assert_eq!(r.calls, Vec::<String>::new());
    // A term naming an unknown value with a known one admits the known one; NotIn an unknown
    // value excludes nothing.
    let terms = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64", "s390x),pool in (zz"]}]},
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["x86 64"]}, {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}),
    );
    run(&mut registry, &terms, json!({})).assert_patch(json!([
        {"op": "add", "path": "/metadata/annotations", "value": {"image-arch-affinity.kubewarden.io/architectures": "amd64,arm64"}},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/1/matchExpressions/2",
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}}
    ]));
}

#[test]
fn match_node_labels_copies_only_values_a_node_label_can_hold() {
    let mut registry = FixtureRegistry::new();
    let mut object = pod(&["multi:1"], json!({}));
    object["metadata"]["labels"] = json!({"team": "blue", "tier": "front end!"});
    let r = run(
        &mut registry,
        &object,
        json!({"matchNodeLabels": ["team", "tier"]}),
    );
    r.assert_patch(json!([
        {"op": "add", "path": "/metadata/annotations", "value": {"image-arch-affinity.kubewarden.io/architectures": "amd64,arm64"}},
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}, {"key": "team", "operator": "In", "values": ["blue"]}]}]}}}}
    ]));
}
