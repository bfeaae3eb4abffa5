//! Images that are not native: WebAssembly images and artifacts constrain no architecture (the
//! other images decide), `wasmRuntimeClasses` lets a Pod run the WebAssembly entry of a mixed
//! index, a non-runnable artifact stays a lookup failure naming its type, and nested indexes are
//! followed by digest. Each with the exact patch, warnings and host calls.

mod common;
use common::*;
use serde_json::{json, Value};

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const SPIN: &str = "application/vnd.fermyon.spin.application.v1+config";
const HELM: &str = "application/vnd.cncf.helm.config.v1+json";
const NESTED: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

fn platform_entry(os: &str, arch: &str) -> Value {
    json!({"mediaType": OCI_MANIFEST, "digest": DIGEST, "size": 500, "platform": {"os": os, "architecture": arch}})
}

fn index(entries: Vec<Value>) -> String {
    json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}).to_string()
}

fn manifest(config_type: &str, layer_type: &str) -> Value {
    json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": config_type, "digest": DIGEST, "size": 100},
        "layers": [{"mediaType": layer_type, "digest": DIGEST, "size": 1000}]})
}

/// The shapes of the issue, next to the fixtures of `FixtureRegistry::new`.
fn registry() -> FixtureRegistry {
    let mut registry = FixtureRegistry::new();
    registry.index(
        "ghcr.io/org/wasm-index:1",
        &index(vec![
            platform_entry("wasi", "wasm"),
            platform_entry("wasip2", "wasm"),
        ]),
    );
    registry.artifact(
        "ghcr.io/org/wasm-single:1",
        &manifest(
            "application/vnd.oci.image.config.v1+json",
            "application/vnd.oci.image.layer.v1.tar",
        ),
        Some(&json!({"architecture": "wasm", "os": "wasip1", "rootfs": {"type": "layers", "diff_ids": []}})),
    );
    registry.index(
        "ghcr.io/org/native-wasm:1",
        &index(vec![
            platform_entry("linux", "amd64"),
            platform_entry("linux", "arm64"),
            platform_entry("wasi", "wasm"),
        ]),
    );
    registry.artifact(
        "ghcr.io/org/spin:1",
        &manifest(SPIN, "application/vnd.wasm.content.layer.v1+wasm"),
        None,
    );
    registry.artifact(
        "ghcr.io/org/chart:1",
        &manifest(HELM, "application/vnd.cncf.helm.chart.content.v1.tar+gzip"),
        Some(&json!({"name": "chart", "version": "1.0.0", "apiVersion": "v2"})),
    );
    registry.index(
        "ghcr.io/org/nested:1",
        &index(vec![
            platform_entry("linux", "s390x"),
            json!({"mediaType": OCI_INDEX, "digest": NESTED, "size": 300}),
        ]),
    );
    registry.index(
        &format!("ghcr.io/org/nested@{NESTED}"),
        &index(vec![
            platform_entry("linux", "arm64"),
            platform_entry("wasip1", "wasm"),
        ]),
    );
    registry
}

fn run_wasm(images: &[&str], spec: Value, settings_json: Value) -> Run {
    run_with(
        &mut registry(),
        &pod(images, spec),
        &settings(settings_json),
    )
}

const WASM_IMAGES: [&str; 3] = [
    "ghcr.io/org/wasm-index:1",
    "ghcr.io/org/wasm-single:1",
    "ghcr.io/org/spin:1",
];

#[test]
fn webassembly_images_and_artifacts_constrain_nothing_under_every_setting() {
    for settings_json in [
        json!({}),
        json!({"onLookupFailure": "reject"}),
        json!({"fallbackArchitectures": ["amd64"]}),
        json!({"schedulableArchitectures": ["amd64", "arm64"]}),
    ] {
        let r = run_wasm(&WASM_IMAGES, json!({}), settings_json.clone());
        r.assert_accepted_unchanged();
        assert_eq!(r.decision.warnings, Vec::<String>::new(), "{settings_json}");
        // The Spin artifact is known from its manifest: no config lookup.
        assert_eq!(
            r.calls,
            [
                "v1/oci_manifest ghcr.io/org/wasm-index:1",
                "v1/oci_manifest ghcr.io/org/wasm-single:1",
                "v1/oci_manifest_config ghcr.io/org/wasm-single:1",
                "v1/oci_manifest ghcr.io/org/spin:1",
            ]
        );
    }
}

#[test]
fn the_other_images_decide() {
    let r = run_wasm(
        &["ghcr.io/org/spin:1", "ghcr.io/org/arm64-only:1"],
        json!({}),
        json!({"onLookupFailure": "reject"}),
    );
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    assert_eq!(r.decision.warnings, Vec::<String>::new());
    // A WebAssembly image and an image whose lookup failed: the WebAssembly one says nothing
    // of the architecture, so the fallback stands in for the other, as it would alone.
    let mut registry = registry();
    registry.fail("ghcr.io/org/gone:1", "Host error: manifest unknown");
    let object = pod(&["ghcr.io/org/spin:1", "ghcr.io/org/gone:1"], json!({}));
    let r = run_with(
        &mut registry,
        &object,
        &settings(json!({"fallbackArchitectures": ["amd64"]})),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    let failed = "image-arch-affinity: image \"ghcr.io/org/gone:1\" was left out of the architecture decision because its lookup failed: manifest unknown";
    assert_eq!(
        r.decision.warnings,
        [
            failed,
            "image-arch-affinity: no image of the Pod other than its WebAssembly ones could be looked up (\"ghcr.io/org/gone:1\"): it is pinned as if they ran on amd64 (setting fallbackArchitectures)"
        ]
    );
    // A fallback that fits none of its nodes: unpinned, saying so.
    let mut object = object;
    object["spec"]["nodeSelector"] = json!({"kubernetes.io/arch": "arm64"});
    let r = run_with(
        &mut registry,
        &object,
        &settings(json!({"fallbackArchitectures": ["amd64"]})),
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        [
            failed,
            "image-arch-affinity: no image of the Pod other than its WebAssembly ones could be looked up, and the fallback architectures (amd64; setting fallbackArchitectures) fit none of the nodes it may run on: it is not pinned"
        ]
    );
    // Without a fallback: the WebAssembly image runs anywhere, the failure warned about.
    let r = run_with(&mut registry, &object, &settings(json!({})));
    r.assert_accepted_unchanged();
    assert_eq!(r.decision.warnings, [failed]);
}

#[test]
fn a_failed_lookup_keeps_a_webassembly_pod_to_its_own_os_and_the_refusal_names_it() {
    // No spec.os, in a cluster of Linux and Windows nodes: a Pod whose images run anywhere is
    // decided for Windows too where Linux refuses it, but not when an image's lookup failed (it
    // may run on its own OS alone). The term that admits Windows nodes only admits no Linux node,
    // and the refusal says so (k8s-judge, RAPID_SEED=13399438757384656446).
    let mut registry = registry();
    registry.fail("ghcr.io/org/gone:1", "Host error: manifest unknown");
    let terms = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]},
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]}]}}}});
    let two_oses = settings(json!({"clusterOperatingSystems": ["linux", "windows"],
        "schedulableArchitectures": ["amd64"]}));
    let r = run_with(
        &mut registry,
        &pod(&["ghcr.io/org/spin:1", "ghcr.io/org/gone:1"], terms.clone()),
        &two_oses,
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: every required node affinity term of the Pod excludes the architectures its images run on \
         that the cluster has nodes of (amd64): term 0 admits no linux node; term 1 admits s390x. The cluster has no s390x \
         nodes (setting schedulableArchitectures: amd64)"
    );
    // Every image looked up: the Windows nodes its first term admits run it, unchanged.
    run_with(
        &mut registry,
        &pod(&["ghcr.io/org/spin:1"], terms),
        &two_oses,
    )
    .assert_accepted_unchanged();
}

#[test]
fn an_all_webassembly_pod_gets_the_settings_for_any_node_and_no_annotation() {
    // Preferences and tolerations apply as for images that run on every schedulable
    // architecture; nothing was computed from the images, so no annotation.
    let r = run_wasm(
        &WASM_IMAGES,
        json!({}),
        json!({"schedulableArchitectures": ["amd64", "arm64"], "preferredArchitecture": "arm64",
            "architectureTolerations": {"arm64": [{"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}]}}),
    );
    r.assert_patch(json!([
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "preference": {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}}]}}},
        {"op": "add", "path": "/spec/tolerations", "value": [
            {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}]}
    ]));
    // A Pod whose own constraints admit no node is still refused.
    let r = run_wasm(
        &WASM_IMAGES,
        json!({"nodeSelector": {"kubernetes.io/arch": "riscv64"}}),
        json!({"schedulableArchitectures": ["amd64", "arm64"]}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=riscv64 asks for riscv64 nodes, but the cluster has none \
         (setting schedulableArchitectures: amd64, arm64); of those, its images run on: amd64, arm64"
    );
}

#[test]
fn a_mixed_index_is_native_unless_the_pods_runtime_class_runs_webassembly() {
    let classes = json!({"wasmRuntimeClasses": ["wasmtime-spin-v2"]});
    // No RuntimeClass, or one not listed: its native entries, without a warning for the
    // WebAssembly one.
    for spec in [json!({}), json!({"runtimeClassName": "runc"})] {
        let r = run_wasm(
            &["ghcr.io/org/native-wasm:1", "ghcr.io/org/arm64-only:1"],
            spec,
            classes.clone(),
        );
        r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
        assert_eq!(r.decision.warnings, Vec::<String>::new());
    }
    let r = run_wasm(&["ghcr.io/org/native-wasm:1"], json!({}), classes.clone());
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"])
    ]));
    // Under a listed RuntimeClass the shim runs its WebAssembly entry anywhere; a native-only
    // sidecar still constrains.
    let wasm_class = json!({"runtimeClassName": "wasmtime-spin-v2"});
    let r = run_wasm(
        &["ghcr.io/org/native-wasm:1"],
        wasm_class.clone(),
        classes.clone(),
    );
    r.assert_accepted_unchanged();
    let r = run_wasm(
        &["ghcr.io/org/native-wasm:1", "ghcr.io/org/amd64-only:1"],
        wasm_class.clone(),
        classes.clone(),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    // Without the setting, the RuntimeClass name means nothing to the policy.
    let r = run_wasm(&["ghcr.io/org/native-wasm:1"], wasm_class, json!({}));
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"])
    ]));
}

#[test]
fn a_helm_chart_named_as_an_image_is_a_lookup_failure_naming_its_type() {
    let r = run_wasm(
        &["ghcr.io/org/chart:1", "multi:1"],
        json!({}),
        json!({"onLookupFailure": "reject"}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"ghcr.io/org/chart:1\": \
         the manifest is an artifact of type \"application/vnd.cncf.helm.config.v1+json\", not a container image \
         (setting onLookupFailure: reject)"
    );
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest ghcr.io/org/chart:1",
            "v1/oci_manifest_config ghcr.io/org/chart:1",
            "v1/oci_manifest docker.io/library/multi:1",
        ]
    );
}

#[test]
fn a_nested_index_is_looked_up_by_digest() {
    let r = run_wasm(&["ghcr.io/org/nested:1", "list:1"], json!({}), json!({}));
    // s390x from the index, arm64 (and a WebAssembly entry) from the index it lists.
    r.assert_patch(json!([
        add_annotation("arm64,s390x"),
        add_required(&["arm64", "s390x"])
    ]));
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest ghcr.io/org/nested:1".to_string(),
            format!("v1/oci_manifest ghcr.io/org/nested@{NESTED}"),
            "v1/oci_manifest docker.io/library/list:1".to_string(),
        ]
    );
    // The nested index's WebAssembly entry frees the image under a WebAssembly RuntimeClass.
    let r = run_wasm(
        &["ghcr.io/org/nested:1"],
        json!({"runtimeClassName": "wasmedge"}),
        json!({"wasmRuntimeClasses": ["wasmedge"]}),
    );
    r.assert_accepted_unchanged();
}

#[test]
fn workloads_and_daemon_sets_of_webassembly_images() {
    let template = |runtime: Option<&str>| {
        let mut spec =
            json!({"containers": [{"name": "app", "image": "ghcr.io/org/native-wasm:1"}]});
        if let Some(runtime) = runtime {
            spec["runtimeClassName"] = json!(runtime);
        }
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
            "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "w"}}, "spec": spec}}})
    };
    let settings_json = settings(
        json!({"workloadTemplates": "mutate", "wasmRuntimeClasses": ["wasmtime-spin-v2"]}),
    );
    // An UPDATE that changes only the RuntimeClass is decided again.
    let r = run_update(
        &mut registry(),
        "Deployment",
        "UPDATE",
        &template(Some("wasmtime-spin-v2")),
        &template(None),
        &settings_json,
    );
    assert_eq!(r.patch, None);
    assert_eq!(r.calls, ["v1/oci_manifest ghcr.io/org/native-wasm:1"]);
    let r = run_update(
        &mut registry(),
        "Deployment",
        "UPDATE",
        &template(None),
        &template(Some("wasmtime-spin-v2")),
        &settings_json,
    );
    r.assert_patch(json!([
        {"op": "add", "path": "/spec/template/metadata/annotations", "value": {"image-arch-affinity.kubewarden.io/architectures": "amd64,arm64"}},
        {"op": "add", "path": "/spec/template/spec/affinity", "value": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]}]}}}}
    ]));
    // A DaemonSet of WebAssembly images runs on every node: no warning.
    let daemon_set = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
        "spec": {"template": {"metadata": {}, "spec": {"containers": [{"name": "a", "image": "ghcr.io/org/spin:1"}]}}}});
    let r = run_request(
        &mut registry(),
        "DaemonSet",
        "CREATE",
        &daemon_set,
        &settings(json!({"schedulableArchitectures": ["amd64", "arm64"]})),
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.decision.warnings, Vec::<String>::new());
}

#[test]
fn a_pod_bound_to_a_node_is_checked_against_its_native_images_only() {
    let mut cluster = FixtureCluster::of(vec![node("arm-1", "linux", "arm64")]);
    let bound = |images: &[&str]| pod(images, json!({"nodeName": "arm-1"}));
    let node_aware = settings(json!({"readNodes": true}));
    let r = run_in_cluster(
        &mut registry(),
        &mut cluster,
        "Pod",
        "CREATE",
        &bound(&["ghcr.io/org/spin:1", "ghcr.io/org/arm64-only:1"]),
        &Value::Null,
        &node_aware,
    );
    r.assert_accepted_unchanged();
    let r = run_in_cluster(
        &mut registry(),
        &mut cluster,
        "Pod",
        "CREATE",
        &bound(&["ghcr.io/org/spin:1", "ghcr.io/org/amd64-only:1"]),
        &Value::Null,
        &node_aware,
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod is bound to node \"arm-1\" (linux/arm64), which its images have no build for: \
         \"ghcr.io/org/amd64-only:1\" runs only on linux/amd64. Its containers would fail there with exec format error"
    );
}
