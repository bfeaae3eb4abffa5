//! Image volumes (`spec.volumes[].image.reference`, GA in Kubernetes 1.36): the kubelet pulls
//! them for the node's platform as it pulls container images, so they constrain the Pod like
//! its containers' images, except artifacts with no platform (model weights, data), which it
//! mounts anywhere. Looked up once with the images, named in messages by their volume. Each with
//! the exact patch, messages and host calls.

mod common;
use common::*;
use serde_json::{json, Value};

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
const MODEL_MANIFEST: &str = "application/vnd.cncf.model.manifest.v1+json";
const MODEL_CONFIG: &str = "application/vnd.cncf.model.config.v1+json";

/// `FixtureRegistry::new`'s images, and two platform-less artifacts: a model (CNCF ModelPack:
/// artifact type and config of its own) and a data set (ORAS: an artifact type and the empty
/// config).
fn registry() -> FixtureRegistry {
    let mut registry = FixtureRegistry::new();
    registry.artifact(
        "ghcr.io/org/model:1",
        &json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": MODEL_MANIFEST,
            "config": {"mediaType": MODEL_CONFIG, "digest": DIGEST, "size": 120},
            "layers": [{"mediaType": "application/vnd.cncf.model.weight.v1.raw", "digest": DIGEST, "size": 4096}]}),
        Some(&json!({"descriptor": {"name": "model"}, "config": {"format": "safetensors"},
            "modelfs": {"type": "layers", "diffIds": [DIGEST]}})),
    );
    registry.artifact(
        "ghcr.io/org/dataset:1",
        &json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": "application/vnd.example.dataset.v1",
            "config": {"mediaType": EMPTY_CONFIG, "digest": DIGEST, "size": 2},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": DIGEST, "size": 2048}]}),
        // What the host answers: the empty config names no platform.
        Some(&json!({})),
    );
    // Data pushed as an image whose image config names no platform (`oras push` with a config
    // `{}` of the image config type).
    registry.artifact(
        "ghcr.io/org/data-image:1",
        &json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": DIGEST, "size": 2},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": DIGEST, "size": 2048}]}),
        Some(&json!({})),
    );
    registry
}

/// A Pod with one container per image and one image volume per (name, reference).
fn pod_with_volumes(images: &[&str], volumes: &[(&str, &str)], spec: Value) -> Value {
    let mut pod = pod(images, spec);
    pod["spec"]["volumes"] = volumes
        .iter()
        .map(|(name, reference)| {
            json!({"name": name, "image": {"reference": reference, "pullPolicy": "IfNotPresent"}})
        })
        .collect();
    pod
}

fn run_volumes(images: &[&str], volumes: &[(&str, &str)], settings_json: Value) -> Run {
    run_with(
        &mut registry(),
        &pod_with_volumes(images, volumes, json!({})),
        &settings(settings_json),
    )
}

#[test]
fn an_image_volume_index_constrains_like_a_container_image() {
    let r = run_volumes(
        &["list:1"],
        &[("tools", "127.0.0.1:5000/team/s390x:1.0")],
        json!({}),
    );
    r.assert_patch(json!([add_annotation("s390x"), add_required(&["s390x"])]));
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest docker.io/library/list:1",
            "v1/oci_manifest 127.0.0.1:5000/team/s390x:1.0",
        ]
    );
    assert!(r.decision.warnings.is_empty());
}

#[test]
fn a_single_platform_image_volume_is_read_from_its_config() {
    let r = run_volumes(
        &["multi:1"],
        &[("plugins", "ghcr.io/org/arm64-only:1")],
        json!({}),
    );
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest docker.io/library/multi:1",
            "v1/oci_manifest ghcr.io/org/arm64-only:1",
            "v1/oci_manifest_config ghcr.io/org/arm64-only:1",
        ]
    );
}

#[test]
fn platform_less_artifacts_constrain_nothing_and_cost_one_call() {
    for settings_json in [
        json!({}),
        json!({"onLookupFailure": "reject"}),
        json!({"fallbackArchitectures": ["arm64"]}),
    ] {
        let r = run_volumes(
            &["ghcr.io/org/amd64-only:1"],
            &[
                ("model", "ghcr.io/org/model:1"),
                ("data", "ghcr.io/org/dataset:1"),
            ],
            settings_json.clone(),
        );
        r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
        assert!(r.decision.warnings.is_empty(), "{settings_json}");
        // Known from the manifest alone: no config lookup.
        assert_eq!(
            r.calls,
            [
                "v1/oci_manifest ghcr.io/org/amd64-only:1",
                "v1/oci_manifest ghcr.io/org/model:1",
                "v1/oci_manifest ghcr.io/org/dataset:1",
            ]
        );
    }
    // A Pod whose only other image runs anywhere gets no pin and no annotation.
    let r = run_volumes(
        &["ghcr.io/org/spin:1"],
        &[("model", "ghcr.io/org/model:1")],
        json!({}),
    );
    assert_eq!(r.patch, None);
    r.assert_accepted_unchanged();
}

#[test]
fn a_reference_a_container_runs_and_a_volume_mounts_is_looked_up_once() {
    // Written alike, and spelled otherwise (`docker.io/library/multi:1` is `multi:1`).
    let r = run_volumes(
        &["multi:1", "ghcr.io/org/arm64-only:1"],
        &[
            ("same", "multi:1"),
            ("spelled", "docker.io/library/multi:1"),
            ("again", "index.docker.io/library/multi:1"),
        ],
        json!({}),
    );
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest docker.io/library/multi:1",
            "v1/oci_manifest ghcr.io/org/arm64-only:1",
            "v1/oci_manifest_config ghcr.io/org/arm64-only:1",
        ]
    );
}

#[test]
fn an_artifact_a_container_runs_is_still_a_lookup_failure() {
    // The model is mounted and, under another spelling, named as a container's image: no node
    // can run that container, whatever the volume.
    let r = run_volumes(
        &["multi:1", "ghcr.io/org/dataset:1"],
        &[("data", "ghcr.io/org/dataset:1")],
        json!({"onLookupFailure": "reject"}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"ghcr.io/org/dataset:1\": \
         the manifest is an artifact of type \"application/vnd.example.dataset.v1\", not a container image (setting onLookupFailure: reject)"
    );
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest docker.io/library/multi:1",
            "v1/oci_manifest ghcr.io/org/dataset:1",
            "v1/oci_manifest_config ghcr.io/org/dataset:1",
        ]
    );
    let r = run_volumes(
        &["multi:1", "ghcr.io/org/model:1"],
        &[("model", "ghcr.io/org/model:1")],
        json!({}),
    );
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: image \"ghcr.io/org/model:1\" was left out of the architecture decision because its lookup failed: \
          the manifest is an artifact of type \"application/vnd.cncf.model…fest.v1+json\", not a container image"]
    );
}

#[test]
fn refusals_name_the_volume() {
    let r = run_volumes(
        &["ghcr.io/org/amd64-only:1"],
        &[("plugins", "ghcr.io/org/arm64-only:1")],
        json!({}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: no linux node architecture runs every image of this Pod: \"ghcr.io/org/amd64-only:1\" runs on amd64; \
         volume \"plugins\" image \"ghcr.io/org/arm64-only:1\" runs on arm64. Use images built for a common architecture"
    );
    // A Windows-only volume image in a Linux Pod.
    let r = run_volumes(&["multi:1"], &[("win", "ghcr.io/org/windows:1")], json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: no linux node architecture runs every image of this Pod: \"multi:1\" runs on amd64, arm64; \
         volume \"win\" image \"ghcr.io/org/windows:1\" has no linux build (only windows/amd64). Use images built for a common architecture"
    );
    // In a Deployment's Pod template, at apply time.
    let mut deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "p"}}, "template": {}}});
    let template = pod_with_volumes(
        &["ghcr.io/org/amd64-only:1"],
        &[("plugins", "ghcr.io/org/arm64-only:1")],
        json!({}),
    );
    deployment["spec"]["template"] =
        json!({"metadata": template["metadata"], "spec": template["spec"]});
    let r = run_request(
        &mut registry(),
        "Deployment",
        "CREATE",
        &deployment,
        &settings(json!({})),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: no linux node architecture runs every image of this Pod template: \"ghcr.io/org/amd64-only:1\" runs on amd64; \
         volume \"plugins\" image \"ghcr.io/org/arm64-only:1\" runs on arm64. Use images built for a common architecture"
    );
}

#[test]
fn failed_volume_lookups_name_the_volume_under_every_setting() {
    let volumes = [("cache", "ghcr.io/org/gone:1"), ("bad", "Not A Reference")];
    let r = run_volumes(&["multi:1"], &volumes, json!({}));
    assert_eq!(
        r.decision.warnings,
        [
            "image-arch-affinity: volume \"cache\" image \"ghcr.io/org/gone:1\" was left out of the architecture decision because its lookup failed: \
             error invoking host capability oci.oci_manifest: ghcr.io/org/gone:1: manifest unknown (404 Not Found)",
            "image-arch-affinity: volume \"bad\" image \"Not A Reference\" was left out of the architecture decision because its lookup failed: \
             invalid image reference: \"Not A Reference\" is not a repository name (lowercase letters, digits and separators . _ - /)",
        ]
    );
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"])
    ]));
    // The invalid reference never reaches the host.
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest docker.io/library/multi:1",
            "v1/oci_manifest ghcr.io/org/gone:1",
        ]
    );
    let r = run_volumes(
        &["multi:1"],
        &volumes[..1],
        json!({"onLookupFailure": "reject"}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot tell which architectures the Pod's images run on: volume \"cache\" image \"ghcr.io/org/gone:1\": \
         error invoking host capability oci.oci_manifest: ghcr.io/org/gone:1: manifest unknown (404 Not Found) (setting onLookupFailure: reject)"
    );
    // The fallback names it too.
    let r = run_volumes(
        &[],
        &volumes[..1],
        json!({"fallbackArchitectures": ["amd64"]}),
    );
    assert_eq!(
        r.decision.warnings.last().map(String::as_str),
        Some(
            "image-arch-affinity: no image of the Pod could be looked up (volume \"cache\" image \"ghcr.io/org/gone:1\"): \
             it is pinned as if they ran on amd64 (setting fallbackArchitectures)"
        )
    );
}

#[test]
fn a_bound_pod_is_checked_against_its_node_with_its_volumes() {
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
    ]);
    let bound = pod_with_volumes(
        &["multi:1"],
        &[
            ("plugins", "ghcr.io/org/amd64-only:1"),
            ("model", "ghcr.io/org/model:1"),
        ],
        json!({"nodeName": "arm-1"}),
    );
    let r = run_in_cluster(
        &mut registry(),
        &mut cluster,
        "Pod",
        "CREATE",
        &bound,
        &Value::Null,
        &settings(json!({"readNodes": true})),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod is bound to node \"arm-1\" (linux/arm64), which its images have no build for: \
         volume \"plugins\" image \"ghcr.io/org/amd64-only:1\" runs only on linux/amd64. The kubelet cannot mount them there: use images with a build for that platform (an index), or list them in imagePlatforms"
    );
    let mut on_amd = bound.clone();
    on_amd["spec"]["nodeName"] = json!("amd-1");
    let r = run_in_cluster(
        &mut registry(),
        &mut cluster,
        "Pod",
        "CREATE",
        &on_amd,
        &Value::Null,
        &settings(json!({"readNodes": true})),
    );
    r.assert_accepted_unchanged();
}

#[test]
fn a_workload_update_that_changes_a_volume_reference_is_looked_up() {
    let template = |reference: &str| {
        let pod = pod_with_volumes(&["multi:1"], &[("plugins", reference)], json!({}));
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "p"}},
                "template": {"metadata": pod["metadata"], "spec": pod["spec"]}}})
    };
    let old = template("ghcr.io/org/amd64-only:1");
    let new = template("ghcr.io/org/windows:1");
    let r = run_update(
        &mut registry(),
        "Deployment",
        "UPDATE",
        &new,
        &old,
        &settings(json!({})),
    );
    assert!(r
        .rejection()
        .contains("volume \"plugins\" image \"ghcr.io/org/windows:1\" has no linux build"));
    // The same template again: no lookup.
    let r = run_update(
        &mut registry(),
        "Deployment",
        "UPDATE",
        &old,
        &old,
        &settings(json!({})),
    );
    r.assert_accepted_unchanged();
    assert!(r.calls.is_empty());
}

#[test]
fn the_patch_keeps_every_field_of_the_volumes() {
    let mut object = pod_with_volumes(
        &["multi:1"],
        &[("plugins", "ghcr.io/org/arm64-only:1")],
        json!({}),
    );
    object["spec"]["volumes"][0]["image"]["x-future"] = json!({"kept": true});
    object["spec"]["volumes"].as_array_mut().unwrap().push(
        json!({"name": "cfg", "configMap": {"name": "c", "items": [{"key": "k", "path": "p"}]}}),
    );
    let r = run_with(&mut registry(), &object, &settings(json!({})));
    // Only the annotation and the affinity: the volumes come back as they were.
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
}

#[test]
fn a_platform_less_artifact_is_decided_as_if_the_volume_were_not_there() {
    // The only container image cannot be looked up: unchanged, with the warning, as without the
    // volume (the model says nothing of where the Pod runs).
    let settings_json = json!({"architectureTolerations": {"arm64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]}});
    let r = run_volumes(
        &["ghcr.io/org/gone:1"],
        &[("model", "ghcr.io/org/model:1")],
        settings_json.clone(),
    );
    r.assert_accepted_unchanged();
    let without = run_volumes(&["ghcr.io/org/gone:1"], &[], settings_json);
    assert_eq!(r.decision, without.decision);
    // Under the fallback, the message is that of a Pod none of whose images could be looked up.
    let r = run_volumes(
        &["ghcr.io/org/gone:1"],
        &[("model", "ghcr.io/org/model:1")],
        json!({"fallbackArchitectures": ["amd64"]}),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    assert_eq!(
        r.decision.warnings.last().map(String::as_str),
        Some(
            "image-arch-affinity: no image of the Pod could be looked up (\"ghcr.io/org/gone:1\"): \
             it is pinned as if they ran on amd64 (setting fallbackArchitectures)"
        )
    );
}

#[test]
fn an_image_config_that_names_no_platform_is_platform_less_in_a_volume_only() {
    let r = run_volumes(
        &["ghcr.io/org/amd64-only:1"],
        &[("data", "ghcr.io/org/data-image:1")],
        json!({"onLookupFailure": "reject"}),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    assert!(r.decision.warnings.is_empty());
    // Its config is read (the manifest is an image's) to know it names no platform.
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest ghcr.io/org/amd64-only:1",
            "v1/oci_manifest ghcr.io/org/data-image:1",
            "v1/oci_manifest_config ghcr.io/org/data-image:1",
        ]
    );
    // A container running it: the lookup failure it always was.
    let r = run_volumes(
        &["ghcr.io/org/data-image:1"],
        &[("data", "ghcr.io/org/data-image:1")],
        json!({"onLookupFailure": "reject"}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"ghcr.io/org/data-image:1\": \
         the image config names no runnable architecture (setting onLookupFailure: reject)"
    );
}

#[test]
fn a_volume_spelled_otherwise_than_a_container_image_of_the_same_lookup_is_a_container_image() {
    // The container names the artifact through the mirror's own host, the volume by its
    // registry: one lookup (the mirror's), and a container runs it, so it is no platform-less
    // artifact but a failed lookup.
    let settings_json = json!({"registryMirrors": {"r.example.com": "ghcr.io/org"},
        "onLookupFailure": "reject"});
    let r = run_volumes(
        &["multi:1", "ghcr.io/org/dataset:1"],
        &[("data", "r.example.com/dataset:1")],
        settings_json,
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"ghcr.io/org/dataset:1\": \
         the manifest is an artifact of type \"application/vnd.example.dataset.v1\", not a container image; \
         volume \"data\" image \"r.example.com/dataset:1\": the manifest is an artifact of type \
         \"application/vnd.example.dataset.v1\", not a container image (setting onLookupFailure: reject)"
    );
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest docker.io/library/multi:1",
            "v1/oci_manifest ghcr.io/org/dataset:1",
            "v1/oci_manifest_config ghcr.io/org/dataset:1",
        ]
    );
}

#[test]
fn image_platforms_name_an_image_volume_s_architectures_without_a_lookup() {
    let r = run_volumes(
        &["multi:1"],
        &[("legacy", "registry.example.com/legacy/tools:3")],
        json!({"imagePlatforms": [{"image": "registry.example.com/legacy/*", "architectures": ["arm64"]}]}),
    );
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    assert_eq!(r.calls, ["v1/oci_manifest docker.io/library/multi:1"]);
}
