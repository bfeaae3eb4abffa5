//! The policy's rules for Pod CREATE requests, each with the exact patch or message.

mod common;
use common::*;
use image_arch_affinity::policy::Verdict;
use serde_json::{json, Value};

// ---- images and their platforms ----

#[test]
fn index_with_attestations_pins_to_its_image_platforms() {
    let r = run(&pod(&["multi:1"], json!({})), json!({}));
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"])
    ]));
    assert_eq!(r.calls, ["v1/oci_manifest docker.io/library/multi:1"]);
    assert_eq!(r.decision.warnings, Vec::<String>::new());
}

#[test]
fn docker_manifest_list_intersected_with_an_index() {
    let r = run(&pod(&["list:1", "multi:1"], json!({})), json!({}));
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"])
    ]));
    let alone = run(&pod(&["list:1"], json!({})), json!({}));
    alone.assert_patch(json!([
        add_annotation("amd64,arm,arm64,ppc64le,s390x"),
        add_required(&["amd64", "arm", "arm64", "ppc64le", "s390x"])
    ]));
}

#[test]
fn single_arch_image_needs_manifest_and_config() {
    let r = run(&pod(&["ghcr.io/org/arm64-only:1"], json!({})), json!({}));
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest ghcr.io/org/arm64-only:1",
            "v1/oci_manifest_config ghcr.io/org/arm64-only:1"
        ]
    );
}

#[test]
fn arm_v7_image_pins_to_arm() {
    let r = run(&pod(&["ghcr.io/org/armv7:1"], json!({})), json!({}));
    r.assert_patch(json!([add_annotation("arm"), add_required(&["arm"])]));
}

#[test]
fn windows_only_image_on_a_linux_pod_is_rejected() {
    let r = run(
        &pod(&["ghcr.io/org/windows:1", "multi:1"], json!({})),
        json!({}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: no linux node architecture runs every image of this Pod: \
         \"ghcr.io/org/windows:1\" has no linux build (only windows/amd64); \"multi:1\" runs on amd64, arm64. \
         Use images built for a common architecture"
    );
}

#[test]
fn windows_pod_counts_windows_platforms() {
    let by_os_field = run(
        &pod(
            &["ghcr.io/org/windows-linux:1"],
            json!({"os": {"name": "windows"}}),
        ),
        json!({}),
    );
    by_os_field.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    let by_selector = run(
        &pod(
            &["ghcr.io/org/windows:1"],
            json!({"nodeSelector": {"kubernetes.io/os": "windows"}}),
        ),
        json!({}),
    );
    by_selector.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    let by_setting = run(
        &pod(&["ghcr.io/org/windows:1"], json!({})),
        json!({"defaultOperatingSystem": "windows"}),
    );
    by_setting.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
}

#[test]
fn references_are_canonical_and_looked_up_once() {
    let r = run(
        &pod(
            &[
                "busybox",
                "docker.io/library/busybox:latest",
                "index.docker.io/library/busybox",
                &format!("ghcr.io/org/app:1.0@{DIGEST}"),
                &format!("ghcr.io/org/app@{DIGEST}"),
                "127.0.0.1:5000/team/s390x:1.0",
                "list:1",
            ],
            json!({}),
        ),
        json!({}),
    );
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest docker.io/library/busybox:latest".to_string(),
            format!("v1/oci_manifest ghcr.io/org/app:1.0@{DIGEST}"),
            format!("v1/oci_manifest ghcr.io/org/app@{DIGEST}"),
            "v1/oci_manifest 127.0.0.1:5000/team/s390x:1.0".to_string(),
            "v1/oci_manifest docker.io/library/list:1".to_string(),
        ]
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: no linux node architecture runs every image of this Pod: \
         \"busybox\" runs on amd64, arm64; \"docker.io/library/busybox:latest\" runs on amd64, arm64; \
         \"index.docker.io/library/busybox\" runs on amd64, arm64; \
         \"ghcr.io/org/app:1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\" runs on amd64, arm64; \
         \"ghcr.io/org/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\" runs on amd64, arm64; \
         \"127.0.0.1:5000/team/s390x:1.0\" runs on s390x; \
         \"list:1\" runs on amd64, arm, arm64, ppc64le, s390x. Use images built for a common architecture"
    );
}

#[test]
fn init_and_ephemeral_containers_count() {
    let object = pod(
        &["multi:1"],
        json!({"initContainers": [{"name": "i", "image": "ghcr.io/org/arm64-only:1"}],
               "ephemeralContainers": [{"name": "e", "image": "list:1"}]}),
    );
    let r = run(&object, json!({}));
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
}

#[test]
fn registry_mirror_is_used_for_the_lookup() {
    let mut registry = FixtureRegistry::new();
    let list = r#"{"manifests":[{"platform":{"os":"linux","architecture":"riscv64"}}]}"#;
    registry.index("mirror.example.com:5000/hub/library/nginx:1.27", list);
    let r = run_with(
        &mut registry,
        &pod(&["nginx:1.27"], json!({})),
        &settings(json!({"registryMirrors": {"docker.io": "mirror.example.com:5000/hub"}})),
    );
    assert_eq!(
        r.calls,
        ["v1/oci_manifest mirror.example.com:5000/hub/library/nginx:1.27"]
    );
    r.assert_patch(json!([
        add_annotation("riscv64"),
        add_required(&["riscv64"])
    ]));
}

#[test]
fn configured_image_platforms_need_no_lookup() {
    let r = run(
        &pod(&["registry.example.com/legacy/app:3", "multi:1"], json!({})),
        json!({"imagePlatforms": [{"image": "registry.example.com/legacy/*", "architectures": ["amd64"]}]}),
    );
    assert_eq!(r.calls, ["v1/oci_manifest docker.io/library/multi:1"]);
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
}

// ---- Pods that need nothing ----

#[test]
fn pods_that_are_skipped_cost_no_lookup() {
    let daemonset_pod = {
        let mut p = pod(&["multi:1"], json!({}));
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet",
            "name": "ds", "uid": "1", "controller": true}]);
        p
    };
    let bound = pod(&["multi:1"], json!({"nodeName": "node-1"}));
    for object in [daemonset_pod, bound] {
        let r = run(&object, json!({}));
        r.assert_accepted_unchanged();
        assert!(r.calls.is_empty(), "{r:?}");
    }
    let mut registry = FixtureRegistry::new();
    let object = pod(&["multi:1"], json!({}));
    for (kind, operation) in [("Deployment", "CREATE"), ("Pod", "DELETE")] {
        let r = run_request(
            &mut registry,
            kind,
            operation,
            &object,
            &settings(json!({})),
        );
        r.assert_accepted_unchanged();
        assert!(r.calls.is_empty());
    }
    // A Pod UPDATE that runs no new image (tests/updates.rs).
    let r = run_update(
        &mut registry,
        "Pod",
        "UPDATE",
        &object,
        &object,
        &settings(json!({})),
    );
    r.assert_accepted_unchanged();
    assert!(r.calls.is_empty());
}

#[test]
fn images_covering_every_schedulable_architecture_need_no_pin() {
    let r = run(
        &pod(&["list:1"], json!({})),
        json!({"schedulableArchitectures": ["amd64", "arm64"]}),
    );
    r.assert_accepted_unchanged();
    let narrower = run(
        &pod(&["ghcr.io/org/arm64-only:1"], json!({})),
        json!({"schedulableArchitectures": ["amd64", "arm64"]}),
    );
    narrower.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
}

#[test]
fn common_set_is_cut_to_the_schedulable_architectures() {
    let r = run(
        &pod(&["list:1"], json!({})),
        json!({"schedulableArchitectures": ["amd64", "arm64", "riscv64"]}),
    );
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"])
    ]));
    let none = run(
        &pod(&["127.0.0.1:5000/team/s390x:1.0"], json!({})),
        json!({"schedulableArchitectures": ["amd64", "arm64"]}),
    );
    assert_eq!(
        none.rejection(),
        "image-arch-affinity: the Pod's images all run only on s390x, but the cluster's nodes are amd64, arm64 (setting schedulableArchitectures)"
    );
}

// ---- required node affinity ----

#[test]
fn every_ored_user_term_gains_the_expression() {
    let object = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchExpressions": [{"key": "pool", "operator": "Exists"}]}]}}}}),
    );
    let r = run(&object, json!({}));
    let expression =
        json!({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]});
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1", "value": expression},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/1/matchExpressions/1", "value": expression},
    ]));
}

#[test]
fn term_already_within_the_common_set_is_left_alone() {
    let object = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}]}}}}),
    );
    run(&object, json!({})).assert_accepted_unchanged();
}

#[test]
fn a_conflicting_term_next_to_a_live_one_is_closed_too() {
    let object = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]},
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "s390x"]}]},
            {}]}}}}),
    );
    let r = run(&object, json!({}));
    let expression =
        json!({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]});
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1", "value": expression},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/1/matchExpressions/1", "value": expression},
    ]));
}

#[test]
fn every_term_conflicting_is_rejected() {
    let object = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]},
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["amd64", "arm64"]},
                                  {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}),
    );
    assert_eq!(
        run(&object, json!({})).rejection(),
        "image-arch-affinity: every required node affinity term of the Pod excludes the architectures its images run on (amd64, arm64): \
         term 0 admits s390x; term 1 admits every architecture but amd64, arm64"
    );
}

// ---- nodeSelector ----

#[test]
fn node_selector_on_a_common_architecture_is_accepted_unchanged() {
    for key in ["kubernetes.io/arch", "beta.kubernetes.io/arch"] {
        let r = run(
            &pod(&["multi:1"], json!({"nodeSelector": {key: "arm64"}})),
            json!({}),
        );
        r.assert_accepted_unchanged();
    }
}

#[test]
fn node_selector_conflict_is_rejected() {
    let r = run(
        &pod(
            &["multi:1", "list:1"],
            json!({"nodeSelector": {"kubernetes.io/arch": "s390x"}}),
        ),
        json!({}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=s390x asks for an architecture that its images do not run on; they all run on: amd64, arm64"
    );
}

#[test]
fn node_selector_on_an_architecture_the_cluster_lacks_blames_the_setting() {
    // list:1 runs on s390x, but the cluster has no s390x nodes.
    let object = pod(
        &["list:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "s390x"}}),
    );
    let r = run(
        &object,
        json!({"schedulableArchitectures": ["amd64", "arm64", "riscv64"]}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=s390x asks for s390x nodes, but the cluster has none \
         (setting schedulableArchitectures: amd64, arm64, riscv64); of those, its images run on: amd64, arm64"
    );
    // An architecture the images do not run on is still the images' fault.
    let object = pod(
        &["multi:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "s390x"}}),
    );
    let r = run(
        &object,
        json!({"schedulableArchitectures": ["amd64", "arm64", "s390x"]}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=s390x asks for an architecture that its images do not run on; they all run on: amd64, arm64"
    );
}

#[test]
fn required_terms_admitting_only_architectures_the_cluster_lacks_blame_the_setting() {
    let object = pod(
        &["list:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]},
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["ppc64le", "riscv64"]}]}]}}}}),
    );
    let r = run(
        &object,
        json!({"schedulableArchitectures": ["amd64", "arm64", "riscv64"]}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: every required node affinity term of the Pod excludes the architectures its images run on \
         that the cluster has nodes of (amd64, arm64): term 0 admits s390x; term 1 admits ppc64le, riscv64. \
         The cluster has no ppc64le, s390x nodes (setting schedulableArchitectures: amd64, arm64, riscv64)"
    );
    // Terms that admit no architecture the images run on are still the images' fault.
    let object = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]}]}}}}),
    );
    let r = run(
        &object,
        json!({"schedulableArchitectures": ["amd64", "arm64", "s390x"]}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: every required node affinity term of the Pod excludes the architectures its images run on (amd64, arm64): \
         term 0 admits s390x"
    );
}

// ---- lookup failures ----

const NOT_FOUND: &str = "Host error: error invoking host capability oci.oci_manifest: ghcr.io/org/gone:1: manifest unknown (404 Not Found)";

fn failing_registry() -> FixtureRegistry {
    let mut registry = FixtureRegistry::new();
    registry.fail("ghcr.io/org/gone:1", NOT_FOUND);
    registry
}

#[test]
fn lookup_failure_ignore_image_decides_from_the_others() {
    let r = run_with(
        &mut failing_registry(),
        &pod(
            &["ghcr.io/org/gone:1", "ghcr.io/org/arm64-only:1"],
            json!({}),
        ),
        &settings(json!({})),
    );
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: image \"ghcr.io/org/gone:1\" was left out of the architecture decision because its lookup failed: \
          error invoking host capability oci.oci_manifest: ghcr.io/org/gone:1: manifest unknown (404 Not Found)"]
    );
}

#[test]
fn lookup_failure_ignore_image_with_no_image_left_accepts() {
    let r = run_with(
        &mut failing_registry(),
        &pod(&["ghcr.io/org/gone:1"], json!({})),
        &settings(json!({"onLookupFailure": "ignoreImage"})),
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.decision.warnings.len(), 1);
    assert!(r.decision.warnings[0].starts_with(
        "image-arch-affinity: image \"ghcr.io/org/gone:1\" was left out of the architecture decision because its lookup failed: error invoking host capability"
    ));
}

#[test]
fn lookup_failure_accept_lets_the_pod_through_unpinned() {
    let r = run_with(
        &mut failing_registry(),
        &pod(&["ghcr.io/org/gone:1", "multi:1"], json!({})),
        &settings(json!({"onLookupFailure": "accept"})),
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the Pod was not pinned to an architecture because a lookup failed: \
          image \"ghcr.io/org/gone:1\": error invoking host capability oci.oci_manifest: ghcr.io/org/gone:1: manifest unknown (404 Not Found)"]
    );
}

#[test]
fn lookup_failure_reject_names_the_image_and_cause() {
    let r = run_with(
        &mut failing_registry(),
        &pod(&["multi:1", "ghcr.io/org/gone:1"], json!({})),
        &settings(json!({"onLookupFailure": "reject"})),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot tell which architectures the Pod's images run on: \
         image \"ghcr.io/org/gone:1\": error invoking host capability oci.oci_manifest: ghcr.io/org/gone:1: manifest unknown (404 Not Found) \
         (setting onLookupFailure: reject)"
    );
}

/// Docker Hub's answer to a pull over its rate limit, as the host words it.
const RATE_LIMITED: &str = "Host error: error invoking host capability oci.oci_manifest: Fail to interact with OCI registry: \
    Registry error: url https://registry-1.docker.io/v2/library/busybox/manifests/1.37, envelope: OCI API errors: \
    [OCI API error: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: \
    https://www.docker.com/increase-rate-limit]";

const RATE_LIMIT_ADVICE: &str = "image-arch-affinity: the registry limits its pulls and every lookup counts as one: \
    look images up through a pull-through cache (setting registryMirrors), give the PolicyServer an authenticated \
    imagePullSecret, or list the most used images in imagePlatforms";

#[test]
fn a_lookup_refused_for_the_registry_rate_limit_is_named_with_what_to_do() {
    let mut registry = FixtureRegistry::new();
    registry.fail("docker.io/library/busybox:1.37", RATE_LIMITED);
    let pod = pod(
        &["docker.io/library/busybox:1.37", "ghcr.io/org/arm64-only:1"],
        json!({}),
    );
    let r = run_with(&mut registry, &pod, &settings(json!({})));
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    assert_eq!(
        r.decision.warnings,
        [
            "image-arch-affinity: image \"docker.io/library/busybox:1.37\" was left out of the architecture decision because its lookup failed: \
             rate-limited by its registry (HTTP 429): error invoking host capability oci.oci_man … he limit by \
             authenticating and upgrading:",
            RATE_LIMIT_ADVICE
        ]
    );
    let r = run_with(
        &mut registry,
        &pod,
        &settings(json!({"onLookupFailure": "reject"})),
    );
    assert_eq!(
        r.rejection(),
        format!(
            "image-arch-affinity: cannot tell which architectures the Pod's images run on: \
             image \"docker.io/library/busybox:1.37\": rate-limited by its registry (HTTP 429): error invoking host capability oci.oci_manifest: \
             Fail to interact with OCI registry: Registry error: envelope: OCI API errors: [OCI API error: You have reached \
             your pull rate limit. You may increase the limit by authenticating and upgrading: (setting onLookupFailure: reject); {}",
            RATE_LIMIT_ADVICE.trim_start_matches("image-arch-affinity: ")
        )
    );
    // Another failure says nothing of rate limits.
    let r = run_with(
        &mut failing_registry(),
        &pod,
        &settings(json!({"onLookupFailure": "accept"})),
    );
    assert_eq!(r.decision.warnings.len(), 1);
}

#[test]
fn index_without_runnable_entries_and_invalid_references_are_lookup_failures() {
    let mut registry = FixtureRegistry::new();
    registry.index(
        "ghcr.io/org/attestations:1",
        r#"{"manifests":[{"platform":{"os":"unknown","architecture":"unknown"},"annotations":{"vnd.docker.reference.type":"attestation-manifest"}}]}"#,
    );
    let r = run_with(
        &mut registry,
        &pod(&["ghcr.io/org/attestations:1", "Bad:Ref:x"], json!({})),
        &settings(json!({"onLookupFailure": "reject"})),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot tell which architectures the Pod's images run on: \
         image \"ghcr.io/org/attestations:1\": the image index has no runnable entry (its 1 entries are attestations or of unknown platform); \
         image \"Bad:Ref:x\": invalid image reference: \"Bad:Ref\" is not a repository name (lowercase letters, digits and separators . _ - /) \
         (setting onLookupFailure: reject)"
    );
    assert_eq!(r.calls, ["v1/oci_manifest ghcr.io/org/attestations:1"]);
}

#[test]
fn no_common_architecture_accept_warns() {
    let r = run(
        &pod(
            &["ghcr.io/org/arm64-only:1", "ghcr.io/org/amd64-only:1"],
            json!({}),
        ),
        json!({"onNoCommonArchitecture": "accept"}),
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        // 256 characters: the listing is cut in its middle, the setting survives.
        ["image-arch-affinity: no linux node architecture runs every image of this Pod: \
          \"ghcr.io/org/arm64-only:1\" run … \" runs on amd64. \
          Use images built for a common architecture (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)"]
    );
    assert_eq!(r.decision.warnings[0].chars().count(), 256);
    // Rejected, the message is whole.
    let rejected = run(
        &pod(
            &["ghcr.io/org/arm64-only:1", "ghcr.io/org/amd64-only:1"],
            json!({}),
        ),
        json!({}),
    );
    assert_eq!(
        rejected.rejection(),
        "image-arch-affinity: no linux node architecture runs every image of this Pod: \
         \"ghcr.io/org/arm64-only:1\" runs on arm64; \"ghcr.io/org/amd64-only:1\" runs on amd64. \
         Use images built for a common architecture"
    );
}

#[test]
fn no_common_architecture_accept_warning_fits_256_characters_with_its_setting() {
    let images: Vec<String> = [(1, "amd64"), (2, "arm64"), (3, "amd64"), (4, "arm64")]
        .iter()
        .map(|(i, arch)| {
            format!(
                "registry.example.com/platform-team/a-service-with-a-long-name-{i}-{arch}:1.0.0"
            )
        })
        .collect();
    let images: Vec<&str> = images.iter().map(String::as_str).collect();
    let r = run(
        &pod(&images, json!({})),
        json!({"onNoCommonArchitecture": "accept", "imagePlatforms": [
            {"image": "*-amd64:*", "architectures": ["amd64"]},
            {"image": "*-arm64:*", "architectures": ["arm64"]}]}),
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: no linux node architecture runs every image of this Pod: \
          \"registry.example.com/platform … \" runs on arm64. Use images built for a common architecture \
          (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)"]
    );
    assert_eq!(r.decision.warnings[0].chars().count(), 256);
}

// ---- preferred architecture, tolerations, node labels ----

#[test]
fn preferred_architecture_from_setting_and_annotation() {
    let preferred = |arch: &str, weight: i64| {
        json!({"op": "add", "path": "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution",
               "value": [{"weight": weight, "preference": {"matchExpressions": [
                   {"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}]}}]})
    };
    let base = add_required(&["amd64", "arm64"]);
    let r = run(
        &pod(&["multi:1"], json!({})),
        json!({"preferredArchitecture": "arm64", "preferredArchitectureWeight": 20}),
    );
    let mut affinity = base.clone();
    affinity["value"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
        preferred("arm64", 20)["value"].clone();
    r.assert_patch(json!([add_annotation("amd64,arm64"), affinity]));

    let mut annotated = pod(&["multi:1"], json!({}));
    annotated["metadata"]["annotations"] =
        json!({"image-arch-affinity.kubewarden.io/preferred-architecture": "amd64"});
    let r = run(&annotated, json!({"preferredArchitecture": "arm64"}));
    let mut affinity = base.clone();
    affinity["value"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
        preferred("amd64", 50)["value"].clone();
    r.assert_patch(json!([
        {"op": "add", "path": "/metadata/annotations/image-arch-affinity.kubewarden.io~1architectures", "value": "amd64,arm64"},
        affinity
    ]));

    // One architecture: nothing to prefer. Not in the set: never a hard pin.
    let single = run(
        &pod(&["ghcr.io/org/arm64-only:1"], json!({})),
        json!({"preferredArchitecture": "arm64"}),
    );
    single.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    let outside = run(
        &pod(&["multi:1"], json!({})),
        json!({"preferredArchitecture": "s390x"}),
    );
    outside.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"])
    ]));
}

#[test]
fn existing_preferred_arch_term_is_kept_and_bad_annotation_warns() {
    let mut object = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}}]}}}),
    );
    object["metadata"]["annotations"] =
        json!({"image-arch-affinity.kubewarden.io/preferred-architecture": "aarch64"});
    let r = run(&object, json!({"preferredArchitecture": "arm64"}));
    r.assert_patch(json!([
        {"op": "add", "path": "/metadata/annotations/image-arch-affinity.kubewarden.io~1architectures", "value": "amd64,arm64"},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
         "value": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]}]}}
    ]));
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: annotation image-arch-affinity.kubewarden.io/preferred-architecture: \"aarch64\" is not an architecture, ignored; use a kubernetes.io/arch value such as amd64, arm64, arm, ppc64le, s390x, riscv64"]
    );
    // A long value is cut in its middle; the warning keeps its advice and fits 256 characters.
    object["metadata"]["annotations"] = json!({"image-arch-affinity.kubewarden.io/preferred-architecture":
        format!("arm64-{}-please", "x".repeat(200))});
    let r = run(&object, json!({"preferredArchitecture": "arm64"}));
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: annotation image-arch-affinity.kubewarden.io/preferred-architecture: \"arm64-xxxxxxxxxxxxxxxxxxxxxxxxx … xxxxxxxx-please\" is not an architecture, ignored; use a kubernetes.io/arch value such as amd64, arm64, arm, ppc64le, s390x, riscv64"]
    );
    assert_eq!(r.decision.warnings[0].chars().count(), 256);
}

#[test]
fn tolerations_of_every_possible_architecture_once() {
    let object = pod(
        &["multi:1"],
        json!({"tolerations": [{"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}]}),
    );
    let settings = json!({"architectureTolerations": {
        "arm64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}],
        "amd64": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "s390x": [{"key": "mainframe", "operator": "Exists"}]}});
    let r = run(&object, settings.clone());
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"]),
        {"op": "add", "path": "/spec/tolerations/1", "value": {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}},
    ]));
    // Even when no pin is needed, the Pod still needs to tolerate the nodes it may land on.
    let r = run(
        &pod(&["multi:1"], json!({})),
        json!({"schedulableArchitectures": ["amd64", "arm64"],
               "architectureTolerations": {"arm64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]}}),
    );
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        {"op": "add", "path": "/spec/tolerations", "value": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]},
    ]));
}

#[test]
fn match_node_labels_go_into_every_term() {
    let mut object = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchExpressions": [{"key": "team", "operator": "In", "values": ["x"]}]}]}}}}),
    );
    object["metadata"]["labels"] = json!({"team": "blue", "tier": "web"});
    let r = run(&object, json!({"matchNodeLabels": ["team", "absent"]}));
    let terms = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";
    let arch = json!({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]});
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        {"op": "add", "path": format!("{terms}/0/matchExpressions/1"), "value": arch},
        {"op": "add", "path": format!("{terms}/0/matchExpressions/2"), "value": {"key": "team", "operator": "In", "values": ["blue"]}},
        {"op": "add", "path": format!("{terms}/1/matchExpressions/1"), "value": arch},
    ]));
}

// ---- the patch touches nothing else, and a second run changes nothing ----

#[test]
fn unknown_fields_survive_and_the_policy_is_idempotent() {
    let settings_json = json!({"preferredArchitecture": "arm64",
        "architectureTolerations": {"arm64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]},
        "matchNodeLabels": ["app"]});
    let cases = [
        pod(&["multi:1", "list:1"], json!({})),
        pod(
            &["multi:1"],
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]},
                {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["b"]}], "x-future": 1}]}}}}),
        ),
    ];
    for object in cases {
        let first = run(&object, settings_json.clone());
        let patch = first.patch.clone().expect("first run mutates");
        let patched = apply(&object, &patch);
        assert_eq!(patched["spec"]["x-unknown-spec-field"], json!({"kept": 1}));
        assert_eq!(
            patched["spec"]["containers"][0]["x-unknown-container-field"],
            json!(true)
        );
        let second = run(&patched, settings_json.clone());
        assert_eq!(
            second.decision.verdict,
            Verdict::Accept,
            "second run on {patched}"
        );
    }
}

// ---- when lookups can change nothing ----

#[test]
fn node_selector_conflict_with_no_common_accept_warns() {
    // A nodeSelector is read like every other constraint: its Pod is looked up, and a conflict
    // with its images is warned about under onNoCommonArchitecture: accept.
    let object = pod(
        &["multi:1", "list:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "s390x"}}),
    );
    let r = run(&object, json!({"onNoCommonArchitecture": "accept"}));
    r.assert_accepted_unchanged();
    assert_eq!(r.calls.len(), 2);
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=s390x asks for an architecture that its images do not run on; \
          they all run on: amd64, arm64 (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)"]
    );
    let rejecting = run(&object, json!({}));
    assert_eq!(
        rejecting.rejection(),
        "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=s390x asks for an architecture that its images do not run on; they all run on: amd64, arm64"
    );
}

#[test]
fn conflicting_terms_with_no_common_accept_warn() {
    let object = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]}]}}}}),
    );
    let r = run(&object, json!({"onNoCommonArchitecture": "accept"}));
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: every required node affinity term of the Pod excludes the architectures its images run on (amd64, arm64): \
          term 0 admits s390x (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)"]
    );
}

#[test]
fn multi_line_causes_become_their_first_line_per_image() {
    // Only the first line of a host error: a registry's HTML page and an error chain are cut
    // where their first line ends.
    let mut registry = FixtureRegistry::new();
    let html = format!(
        "Host error: code: 503, message: <html>\n<head>\n  <title>503</title>\n</head>\n{}</html>",
        "<p>down</p>\n".repeat(100)
    );
    registry.fail("ghcr.io/org/a:1", &html);
    registry.fail("ghcr.io/org/b:1", "Host error: error sending request for url (https://ghcr.io/v2/org/b/manifests/1): connection refused\n\nCaused by:\n    0: client error (Connect)\n    1: Connection refused (os error 111)");
    let r = run_with(
        &mut registry,
        &pod(
            &["ghcr.io/org/a:1", "ghcr.io/org/b:1", "multi:1"],
            json!({}),
        ),
        &settings(json!({})),
    );
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"])
    ]));
    assert_eq!(
        r.decision.warnings,
        [
            "image-arch-affinity: image \"ghcr.io/org/a:1\" was left out of the architecture decision because its lookup failed: \
             code: 503, message: <html>",
            "image-arch-affinity: image \"ghcr.io/org/b:1\" was left out of the architecture decision because its lookup failed: \
             error sending request: connection refused"
        ]
    );
}

#[test]
fn a_host_error_with_a_backtrace_is_one_line_naming_the_image() {
    // What policy-server with RUST_BACKTRACE=1 answers for a manifest it cannot parse.
    let error = "Host error: error invoking host capability oci.oci_manifest: Fail to interact with OCI registry: \
                 Failed to parse manifest as Versioned object: data did not match any variant of untagged enum OciManifest\n\n\
                 Stack backtrace:\n   0: anyhow::error::<impl anyhow::Error>::msg\n             at /cargo/registry/src/anyhow-1.0.86/src/error.rs:83:36\n\
                 \x20  1: policy_evaluator::runtimes::wapc::callback\n  47: clone3\n             at ./misc/../sysdeps/unix/sysv/linux/x86_64/clone3.S:81:0";
    let mut registry = FixtureRegistry::new();
    registry.fail("ghcr.io/org/broken:1", error);
    let object = pod(&["ghcr.io/org/broken:1", "multi:1"], json!({}));
    let ignored = run_with(&mut registry, &object, &settings(json!({})));
    assert_eq!(
        ignored.decision.warnings,
        ["image-arch-affinity: image \"ghcr.io/org/broken:1\" was left out of the architecture decision because its lookup failed: \
          error invoking host capability oci.oci_manifest: Fail to interact with OCI registry: Faile … tch any variant of untagged enum OciManifest"]
    );
    assert_eq!(ignored.decision.warnings[0].chars().count(), 256);
    let accepted = run_with(
        &mut registry,
        &object,
        &settings(json!({"onLookupFailure": "accept"})),
    );
    assert_eq!(
        accepted.decision.warnings,
        ["image-arch-affinity: the Pod was not pinned to an architecture because a lookup failed: image \"ghcr.io/org/broken:1\": \
          error invoking host capability oci.oci_manifest: Fail to interact with OCI registry: Faile … atch any variant of untagged enum OciManifest"]
    );
    let rejected = run_with(
        &mut registry,
        &object,
        &settings(json!({"onLookupFailure": "reject"})),
    );
    assert_eq!(
        rejected.rejection(),
        "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"ghcr.io/org/broken:1\": \
         error invoking host capability oci.oci_manifest: Fail to interact with OCI registry: Failed to parse manifest as Versioned object: \
         data did not match any variant of untagged enum OciManifest (setting onLookupFailure: reject)"
    );
}

#[test]
fn warnings_for_digest_pinned_images_stay_within_256_characters() {
    let image = format!("ghcr.io/org/a-rather-long-repository-name/app@{DIGEST}");
    let mut registry = FixtureRegistry::new();
    registry.fail(&image, "Host error: error sending request: client error (Connect): tcp connect error: Connection refused (os error 111)\nCaused by: more");
    let r = run_with(
        &mut registry,
        &pod(&[&image, "multi:1"], json!({})),
        &settings(json!({})),
    );
    assert_eq!(
        r.decision.warnings,
        // The cause keeps at least 80 characters; the lead-in, image included, is cut to make room.
        ["image-arch-affinity: image \"ghcr.io/org/a-rather-long-repository-name/app@sha256:0123456789abcdef0123456789abcdef01 … \
          t of the architecture decision because its lookup failed: error sending request: client error (Connect): tcp c … on refused (os error 111)"]
    );
    assert_eq!(r.decision.warnings[0].chars().count(), 256);
}

// ---- one constraint model: the nodeSelector, the terms and matchFields together ----

const TERMS: &str =
    "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";

fn with_terms(images: &[&str], selector: Value, terms: Value) -> Value {
    pod(
        images,
        json!({"nodeSelector": selector, "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}),
    )
}

#[test]
fn node_selector_architecture_with_terms_admitting_none_of_the_images_is_rejected() {
    // The nodeSelector asks for arm64, which the images run on; the only term asks for s390x:
    // no node matches both, the Pod would stay Pending.
    let object = with_terms(
        &["multi:1"],
        json!({"kubernetes.io/arch": "arm64"}),
        json!([{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]}]),
    );
    assert_eq!(
        run(&object, json!({})).rejection(),
        "image-arch-affinity: every required node affinity term of the Pod (with its nodeSelector kubernetes.io/arch=arm64) \
         excludes the architectures its images run on (amd64, arm64): term 0 admits s390x"
    );
}

#[test]
fn arch_and_beta_arch_selector_naming_different_architectures_is_rejected() {
    let object = pod(
        &["multi:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64", "beta.kubernetes.io/arch": "arm64"}}),
    );
    assert_eq!(
        run(&object, json!({})).rejection(),
        "image-arch-affinity: the Pod's nodeSelector beta.kubernetes.io/arch=arm64, kubernetes.io/arch=amd64 \
         admits no linux node of any architecture; its images all run on: amd64, arm64"
    );
}

#[test]
fn node_selector_picking_a_tainted_pool_gets_its_tolerations() {
    let object = pod(
        &["multi:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "arm64"}}),
    );
    let settings = json!({"preferredArchitecture": "amd64", "architectureTolerations": {
        "arm64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}],
        "amd64": [{"key": "pool", "value": "x86", "effect": "NoSchedule"}]}});
    let r = run(&object, settings.clone());
    // Only arm64's: the Pod runs nowhere else. No affinity (the nodeSelector already pins it), no
    // preferred term (one architecture).
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        {"op": "add", "path": "/spec/tolerations", "value": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]},
    ]));
    let second = run(&apply(&object, r.patch.as_ref().unwrap()), settings);
    second.assert_accepted_unchanged();
    // The same through a required term.
    let object = with_terms(
        &["multi:1"],
        json!({}),
        json!([{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}]),
    );
    let r = run(
        &object,
        json!({"architectureTolerations": {
            "arm64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]}}),
    );
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        {"op": "add", "path": "/spec/tolerations", "value": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]},
    ]));
}

#[test]
fn named_node_term_ored_with_a_pool_term_is_pinned_like_any_term() {
    // A named-node term ORed with an ordinary one: both get the architecture.
    let object = with_terms(
        &["multi:1"],
        json!({}),
        json!([
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a", "b"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-7"]}]}]),
    );
    let r = run(&object, json!({}));
    let arch = json!({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]});
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        {"op": "add", "path": format!("{TERMS}/0/matchExpressions/1"), "value": arch},
        {"op": "add", "path": format!("{TERMS}/1/matchExpressions"), "value": [arch]},
    ]));
    assert_eq!(r.calls, ["v1/oci_manifest docker.io/library/multi:1"]);
}

#[test]
fn named_node_term_with_images_sharing_no_architecture_is_rejected() {
    let object = with_terms(
        &["ghcr.io/org/arm64-only:1", "ghcr.io/org/amd64-only:1"],
        json!({}),
        json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-7"]}]}]),
    );
    assert_eq!(
        run(&object, json!({})).rejection(),
        "image-arch-affinity: no linux node architecture runs every image of this Pod: \
         \"ghcr.io/org/arm64-only:1\" runs on arm64; \"ghcr.io/org/amd64-only:1\" runs on amd64. \
         Use images built for a common architecture"
    );
}

#[test]
fn required_affinity_without_terms_and_empty_terms_match_nothing() {
    // `requiredDuringSchedulingIgnoredDuringExecution: {}` or `nodeSelectorTerms: []`: zero ORed
    // terms match no node (and the API server refuses the Pod): rejected as written, never filled.
    for required in [json!({}), json!({"nodeSelectorTerms": []})] {
        let object = pod(
            &["multi:1"],
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}),
        );
        assert_eq!(
            run(&object, json!({})).rejection(),
            "image-arch-affinity: the Pod's required node affinity (requiredDuringSchedulingIgnoredDuringExecution) \
             has no nodeSelectorTerms, so it matches no node; give it at least one term, or remove it"
        );
    }
    // A term with no requirement matches no node: a Pod with only such terms runs nowhere.
    let object = with_terms(
        &["multi:1"],
        json!({}),
        json!([{}, {"matchExpressions": []}]),
    );
    assert_eq!(
        run(&object, json!({})).rejection(),
        "image-arch-affinity: every required node affinity term of the Pod excludes the architectures its images run on (amd64, arm64): \
         term 0 has no requirement and matches no node; term 1 has no requirement and matches no node"
    );
}

#[test]
fn empty_os_name_falls_back_like_an_absent_one() {
    let object = pod(
        &["ghcr.io/org/windows:1"],
        json!({"os": {"name": ""}, "nodeSelector": {"kubernetes.io/os": "windows"}}),
    );
    run(&object, json!({}))
        .assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
}

#[test]
fn terms_that_can_never_match_are_left_and_blamed() {
    // `zone In [a]` and `zone NotIn [a]` in one term: no node has both; the other term is pinned.
    let object = with_terms(
        &["multi:1"],
        json!({}),
        json!([
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                                  {"key": "zone", "operator": "NotIn", "values": ["a"]}]},
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]),
    );
    let r = run(&object, json!({}));
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        {"op": "add", "path": format!("{TERMS}/1/matchExpressions/1"),
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}},
    ]));
    let never = with_terms(
        &["multi:1"],
        json!({}),
        json!([{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "DoesNotExist"}]}]),
    );
    assert_eq!(
        run(&never, json!({})).rejection(),
        "image-arch-affinity: every required node affinity term of the Pod excludes the architectures its images run on (amd64, arm64): \
         term 0 admits no linux node"
    );
}

#[test]
fn required_terms_on_one_os_settle_the_pod_os() {
    // No spec.os and no OS nodeSelector: the terms admit only Windows nodes, so the Pod runs on
    // Windows, and its images' Windows builds count (not defaultOperatingSystem's).
    let windows_term = json!([{"matchExpressions": [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]);
    let object = with_terms(&["ghcr.io/org/windows:1"], json!({}), windows_term.clone());
    run(&object, json!({})).assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": format!("{TERMS}/0/matchExpressions/1"),
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}},
    ]));
    // The same with defaultOperatingSystem: windows and terms on linux nodes only.
    let linux_term = json!([{"matchExpressions": [
        {"key": "beta.kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]);
    let object = with_terms(&["multi:1"], json!({}), linux_term);
    run(&object, json!({"defaultOperatingSystem": "windows"})).assert_patch(json!([
        add_annotation("amd64,arm64"),
        {"op": "add", "path": format!("{TERMS}/0/matchExpressions/1"),
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}},
    ]));
    // Terms admitting nodes of both OSes: the Pod's OS is the default one.
    let both = json!([{"matchExpressions": [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["windows", "linux"]}]}]);
    let object = with_terms(&["ghcr.io/org/windows:1"], json!({}), both);
    assert_eq!(
        run(&object, json!({})).rejection(),
        "image-arch-affinity: no linux node architecture runs every image of this Pod: \"ghcr.io/org/windows:1\" has no linux build (only windows/amd64). \
         Use images built for a common architecture"
    );
}

#[test]
fn an_operator_lifecycle_manager_bundle_constrains_nothing() {
    // OLM's bundle unpack Pod: the bundle image holds manifests and no binaries, and runs a
    // binary the `util` init container copied from OLM's own image, of the node's platform. A
    // bundle built on amd64 runs on arm64 nodes (OpenShift's multiarch-tuning-operator skips
    // such Pods): its config's platform says nothing.
    let mut registry = FixtureRegistry::new();
    let manifest = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000", "size": 300},
        "layers": []});
    let bundle = |labels: Value| {
        json!({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []},
               "config": {"Labels": labels}})
    };
    registry.artifact(
        "quay.io/org/operator-bundle:v1.0.0",
        &manifest,
        Some(&bundle(json!({
            "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
            "operators.operatorframework.io.bundle.manifests.v1": "manifests/"}))),
    );
    registry.artifact(
        "quay.io/org/operator:v1.0.0",
        &manifest,
        Some(&bundle(json!({"maintainer": "org"}))),
    );
    let unpack = |bundle: &str| {
        let mut pod = pod(&["multi:1"], json!({}));
        pod["spec"]["initContainers"] = json!([
            {"name": "util", "image": "multi:1", "command": ["/bin/cp", "-Rv", "/bin/cpb", "/util/cpb"]},
            {"name": "pull", "image": bundle, "command": ["/util/cpb", "/bundle"]}]);
        pod
    };
    let arm64 = settings(json!({"schedulableArchitectures": ["arm64"]}));
    let r = run_with(
        &mut registry,
        &unpack("quay.io/org/operator-bundle:v1.0.0"),
        &arm64,
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        r.calls,
        [
            "v1/oci_manifest docker.io/library/multi:1",
            "v1/oci_manifest quay.io/org/operator-bundle:v1.0.0",
            "v1/oci_manifest_config quay.io/org/operator-bundle:v1.0.0"
        ]
    );
    assert!(r.decision.warnings.is_empty(), "{:?}", r.decision.warnings);
    // An image without the label is the binary its config names.
    let r = run_with(
        &mut registry,
        &unpack("quay.io/org/operator:v1.0.0"),
        &arm64,
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's images all run only on amd64, but the cluster's nodes are \
         arm64 (setting schedulableArchitectures)"
    );
}
