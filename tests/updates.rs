//! After admission: a Pod UPDATE (an image swapped in, `kubectl debug`'s ephemeral container
//! through `pods/ephemeralcontainers`) is judged against where the Pod is or may go, looking up
//! only the images the old Pod did not run (docs/design.md, "After admission").

mod common;

use common::*;
use serde_json::{json, Value};

/// The Pod as the API server keeps it once the policy pinned it to `architectures` (bound to
/// `node` when given).
fn pinned(images: &[&str], architectures: &[&str], node: Option<&str>) -> Value {
    let mut spec = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": architectures}]}]}}}});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    pod(images, spec)
}

/// `pod` with an ephemeral container `debugger` running `image` (what `kubectl debug` sends).
fn debugged(pod: &Value, image: &str) -> Value {
    let mut debugged = pod.clone();
    debugged["spec"]["ephemeralContainers"] = json!([{"name": "debugger", "image": image,
        "targetContainerName": "c0", "stdin": true, "tty": true}]);
    debugged
}

/// `pod` with container `c0` running `image` (`kubectl set image pod/p c0=IMAGE`).
fn swapped(pod: &Value, image: &str) -> Value {
    let mut swapped = pod.clone();
    swapped["spec"]["containers"][0]["image"] = json!(image);
    swapped
}

/// `pod` as the kubelet reports it once each of its containers started.
fn started(mut pod: Value) -> Value {
    let statuses: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| {
            json!({"name": c["name"], "image": c["image"], "ready": true, "started": true,
            "restartCount": 0, "state": {"running": {"startedAt": "2026-12-01T00:00:00Z"}}})
        })
        .collect();
    pod["spec"]["nodeName"] = json!("node-1");
    pod["status"] = json!({"phase": "Running", "containerStatuses": statuses});
    pod
}

const STATIC: fn() -> Value = || json!({"schedulableArchitectures": ["amd64", "arm64"]});

fn lookup(image: &str) -> String {
    format!("v1/oci_manifest {image}")
}

#[test]
fn an_update_that_runs_no_new_image_is_accepted_without_a_host_call() {
    let old = pinned(&["multi:1"], &["arm64"], Some("node-1"));
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"]["new"] = json!("label");
    relabelled["metadata"]["finalizers"] = json!(["example.com/f"]);
    // The same image in another spelling is no new image either.
    let respelled = swapped(&old, "docker.io/library/multi:1");
    for new in [&relabelled, &respelled] {
        for settings in [STATIC(), json!({"readNodes": true})] {
            let mut cluster = FixtureCluster::default();
            let r = run_pod_update(&mut cluster, "", new, &old, settings);
            r.assert_accepted_unchanged();
            assert_eq!(r.calls, Vec::<String>::new());
            assert_eq!(cluster.calls, Vec::<String>::new());
        }
    }
}

#[test]
fn a_new_image_is_judged_against_the_platforms_a_bound_pod_admits() {
    // Without readNodes: the Node's platform is not read; the Pod's own pin keeps it to arm64.
    let old = pinned(&["multi:1"], &["arm64"], Some("node-1"));
    let mut cluster = FixtureCluster::default();
    let multi = run_pod_update(&mut cluster, "", &swapped(&old, "list:1"), &old, STATIC());
    multi.assert_accepted_unchanged();
    assert_eq!(multi.calls, [lookup("docker.io/library/list:1")]);
    let amd64 = run_pod_update(
        &mut cluster,
        "",
        &swapped(&old, "ghcr.io/org/amd64-only:1"),
        &old,
        STATIC(),
    );
    assert_eq!(amd64.calls, [lookup("ghcr.io/org/amd64-only:1")]);
    assert_eq!(
        amd64.rejection(),
        "image-arch-affinity: the Pod is bound to node \"node-1\", which may be one of the linux nodes of arm64 its constraints admit (setting schedulableArchitectures: amd64, arm64; setting readNodes reads the Node), where its new images have no build: image \"ghcr.io/org/amd64-only:1\" of container \"c0\" runs on linux/amd64. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
}

#[test]
fn kubectl_debug_is_judged_against_the_node_the_pod_runs_on() {
    let old = pod(&["multi:1"], json!({"nodeName": "node-1"}));
    let mut cluster = FixtureCluster {
        nodes: vec![
            node("node-1", "linux", "arm64"),
            node("node-2", "linux", "amd64"),
        ],
        ..FixtureCluster::default()
    };
    let settings = || json!({"readNodes": true});
    let get = "get_resource v1/Node node-1 masks status.nodeInfo.architecture,status.nodeInfo.operatingSystem";
    let amd64 = debugged(&old, "ghcr.io/org/amd64-only:1");
    let r = run_pod_update(
        &mut cluster,
        "ephemeralcontainers",
        &amd64,
        &old,
        settings(),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod runs on node \"node-1\" (linux/arm64), which its new images have no build for: image \"ghcr.io/org/amd64-only:1\" of ephemeral container \"debugger\" runs only on linux/amd64. They would fail there with exec format error: use images with a build for linux/arm64 (kubectl debug --image=<an image with one>)"
    );
    assert_eq!(r.calls, [lookup("ghcr.io/org/amd64-only:1")]);
    assert_eq!(cluster.calls, [get]);
    let multi = debugged(&old, "busybox");
    let r = run_pod_update(
        &mut cluster,
        "ephemeralcontainers",
        &multi,
        &old,
        settings(),
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.calls, [lookup("docker.io/library/busybox:latest")]);
    assert_eq!(cluster.calls, [get]);
    // A second debug container: only the new one is looked up.
    let mut twice = debugged(&multi, "busybox");
    twice["spec"]["ephemeralContainers"]
        .as_array_mut()
        .expect("the list")
        .push(json!({"name": "debugger-2", "image": "ghcr.io/org/arm64-only:1"}));
    let r = run_pod_update(
        &mut cluster,
        "ephemeralcontainers",
        &twice,
        &multi,
        settings(),
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        r.calls,
        [
            lookup("ghcr.io/org/arm64-only:1"),
            "v1/oci_manifest_config ghcr.io/org/arm64-only:1".to_string()
        ]
    );
}

#[test]
fn a_pending_pod_is_judged_against_every_platform_its_constraints_admit() {
    // Not pinned at creation (its image ran everywhere); an amd64-only image may not follow.
    let old = pod(&["multi:1"], json!({}));
    let new = swapped(&old, "ghcr.io/org/amd64-only:1");
    let r = run_pod_update(&mut FixtureCluster::default(), "", &new, &old, STATIC());
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod may run on linux nodes of arm64 (setting schedulableArchitectures: amd64, arm64; what its nodeSelector and required node affinity admit), where its new images have no build: image \"ghcr.io/org/amd64-only:1\" of container \"c0\" runs on linux/amd64. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
    // onNoCommonArchitecture: accept lets it through, with the same text as a warning.
    let mut lenient = STATIC();
    lenient["onNoCommonArchitecture"] = json!("accept");
    let r = run_pod_update(&mut FixtureCluster::default(), "", &new, &old, lenient);
    assert_eq!(
        r.decision.verdict,
        image_arch_affinity::policy::Verdict::Accept
    );
    assert_eq!(r.decision.warnings.len(), 1);
    assert!(r.decision.warnings[0].ends_with(
        "(accepted without an architecture constraint: setting onNoCommonArchitecture: accept)"
    ));
}

#[test]
fn images_built_for_several_oses_are_judged_on_each_os_the_pod_may_run_on() {
    // A Pod that states no OS, kept to amd64, in a cluster of Linux and Windows nodes: an image
    // with linux/amd64 and windows/amd64 builds runs wherever it may be (k8s-judge's property,
    // RAPID_SEED=2027, case 1506: it was refused for the Windows nodes).
    let old = pod(
        &["multi:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64"}}),
    );
    let settings = || {
        json!({"schedulableArchitectures": ["amd64", "arm64"],
            "clusterOperatingSystems": ["linux", "windows"]})
    };
    let both = debugged(&old, "ghcr.io/org/windows-linux:1");
    let r = run_pod_update(
        &mut FixtureCluster::default(),
        "ephemeralcontainers",
        &both,
        &old,
        settings(),
    );
    r.assert_accepted_unchanged();
    // The Pod runs an image of Linux only: it is on a Linux node, where a Linux-only image
    // runs too.
    let linux = debugged(&old, "ghcr.io/org/amd64-only:1");
    let r = run_pod_update(
        &mut FixtureCluster::default(),
        "ephemeralcontainers",
        &linux,
        &old,
        settings(),
    );
    r.assert_accepted_unchanged();
    // One that runs an image of both OSes may be on a Windows node: a Linux-only image may not
    // follow it onto the Windows nodes its constraints admit.
    let old = pod(
        &["ghcr.io/org/windows-linux:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64"}}),
    );
    let linux = debugged(&old, "ghcr.io/org/amd64-only:1");
    let r = run_pod_update(
        &mut FixtureCluster::default(),
        "ephemeralcontainers",
        &linux,
        &old,
        settings(),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod may run on windows nodes (setting schedulableArchitectures: amd64, arm64; what its nodeSelector and required node affinity admit), where its new images have no build: image \"ghcr.io/org/amd64-only:1\" of ephemeral container \"debugger\" runs on linux/amd64. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
    // Unless the Pod names its OS in spec.os: the kubelet refuses it on the Windows nodes, so
    // it runs no container there (k8s-judge's property, RAPID_SEED=7355965853429143973, case
    // 4,486: it was refused).
    let mut linux_only = old.clone();
    linux_only["spec"]["os"] = json!({"name": "linux"});
    let r = run_pod_update(
        &mut FixtureCluster::default(),
        "ephemeralcontainers",
        &debugged(&linux_only, "ghcr.io/org/amd64-only:1"),
        &linux_only,
        settings(),
    );
    r.assert_accepted_unchanged();
    // The new image runs on amd64 only, not on every architecture the settings allow: the image
    // the Pod already runs is looked up too.
    assert_eq!(
        r.calls,
        [
            lookup("ghcr.io/org/amd64-only:1"),
            lookup("ghcr.io/org/windows-linux:1")
        ]
    );
}

#[test]
fn where_a_pod_may_be_is_bounded_by_the_images_it_already_runs() {
    // Default settings (every architecture): the Pod runs an arm64-only image, so it is on an
    // arm64 node, where an amd64 and arm64 debug image runs. Both images are looked up.
    let debug = |old: &Value, image: &str, settings_json: Value| {
        let new = debugged(old, image);
        run_pod_update(
            &mut FixtureCluster::default(),
            "ephemeralcontainers",
            &new,
            old,
            settings_json,
        )
    };
    let arm = pod(&["ghcr.io/org/arm64-only:1"], json!({}));
    let r = debug(&arm, "multi:1", json!({}));
    r.assert_accepted_unchanged();
    assert_eq!(
        r.calls,
        [
            lookup("docker.io/library/multi:1"),
            lookup("ghcr.io/org/arm64-only:1"),
            "v1/oci_manifest_config ghcr.io/org/arm64-only:1".to_string()
        ]
    );
    // A Pod of an amd64 and arm64 image takes an image of five architectures.
    let multi = pod(&["multi:1"], json!({}));
    debug(&multi, "list:1", json!({})).assert_accepted_unchanged();
    // Not an amd64-only one: it may be on an arm64 node (not on any other: its image has no
    // other build).
    assert_eq!(
        debug(&multi, "ghcr.io/org/amd64-only:1", json!({})).rejection(),
        "image-arch-affinity: the Pod may run on linux nodes of arm64 (no setting schedulableArchitectures: nodes of any architecture; what its nodeSelector and required node affinity admit), where its new images have no build: image \"ghcr.io/org/amd64-only:1\" of ephemeral container \"debugger\" runs on linux/amd64. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
    // A new image that runs on every architecture the settings allow needs no other lookup.
    let r = debug(
        &arm,
        "multi:1",
        json!({"schedulableArchitectures": ["amd64", "arm64"]}),
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.calls, [lookup("docker.io/library/multi:1")]);
    // Nor one that runs on none of the architectures the Pod's constraints admit: refused
    // whatever its other images run on.
    let pinned_arm = pinned(&["multi:1"], &["arm64"], None);
    let r = debug(&pinned_arm, "ghcr.io/org/amd64-only:1", json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod may run on linux nodes of arm64 (no setting schedulableArchitectures: nodes of any architecture; what its nodeSelector and required node affinity admit), where its new images have no build: image \"ghcr.io/org/amd64-only:1\" of ephemeral container \"debugger\" runs on linux/amd64. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
    assert_eq!(r.calls, [lookup("ghcr.io/org/amd64-only:1")]);
}

#[test]
fn a_gated_pod_is_pinned_as_on_create() {
    let mut old = pod(
        &["multi:1"],
        json!({"schedulingGates": [{"name": "example.com/wait"}]}),
    );
    let new = swapped(&old, "ghcr.io/org/amd64-only:1");
    let r = run_pod_update(&mut FixtureCluster::default(), "", &new, &old, STATIC());
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    assert_eq!(r.calls, [lookup("ghcr.io/org/amd64-only:1")]);
    // Its own terms get the expression added, which is all the API server allows.
    old["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}});
    let new = swapped(&old, "ghcr.io/org/amd64-only:1");
    let r = run_pod_update(&mut FixtureCluster::default(), "", &new, &old, STATIC());
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1",
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}}
    ]));
}

#[test]
fn a_new_image_that_cannot_be_looked_up_follows_on_lookup_failure() {
    let old = pinned(&["multi:1"], &["arm64"], None);
    let new = swapped(&old, "ghcr.io/org/missing:1");
    let mut reject = STATIC();
    reject["onLookupFailure"] = json!("reject");
    let r = run_pod_update(&mut FixtureCluster::default(), "", &new, &old, reject);
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot tell which architectures the Pod's images run on: image \"ghcr.io/org/missing:1\": error invoking host capability oci.oci_manifest: ghcr.io/org/missing:1: manifest unknown (404 Not Found) (setting onLookupFailure: reject)"
    );
    let mut ignore = STATIC();
    ignore["onLookupFailure"] = json!("ignoreImage");
    ignore["fallbackArchitectures"] = json!(["amd64"]);
    let r = run_pod_update(&mut FixtureCluster::default(), "", &new, &old, ignore);
    assert_eq!(
        r.decision.verdict,
        image_arch_affinity::policy::Verdict::Accept
    );
    // No guess after admission: fallbackArchitectures pin nothing there.
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: image \"ghcr.io/org/missing:1\" was left out of the architecture decision because its lookup failed: error invoking host capability oci.oci_manifest: ghcr.io/org/missing:1: manifest unknown (404 Not Found)"]
    );
}

#[test]
fn other_subresources_and_operations_are_accepted_without_a_look() {
    let old = pod(&["multi:1"], json!({}));
    let new = swapped(&old, "ghcr.io/org/amd64-only:1");
    for sub_resource in ["status", "binding", "eviction", "resize"] {
        let r = run_pod_update(
            &mut FixtureCluster::default(),
            sub_resource,
            &new,
            &old,
            STATIC(),
        );
        r.assert_accepted_unchanged();
        assert_eq!(r.calls, Vec::<String>::new());
    }
}

#[test]
fn nodes_of_another_os_count_only_where_the_pods_constraints_admit_them() {
    // A Pending Pod kept to amd64 by its nodeSelector, stating no OS, in a cluster of Linux
    // Nodes whose NodePool (no OS requirement) may also create Windows nodes of its
    // architectures: a new Linux image counts those only if the Pod admits their architecture
    // (RAPID_SEED=12543850799843515765 of k8s-judge, case 518).
    let old = pod(
        &["ghcr.io/org/amd64-only:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64"}}),
    );
    let new = swapped(&old, "ghcr.io/org/amd64-armv7:1");
    let cluster = |pool: &str| FixtureCluster {
        nodes: vec![
            node("l-amd64", "linux", "amd64"),
            node("l-arm64", "linux", "arm64"),
        ],
        node_pools: Some(vec![node_pool(
            "pool",
            json!([{"key": "kubernetes.io/arch", "operator": "In", "values": [pool]}]),
            json!([]),
        )]),
        ..FixtureCluster::default()
    };
    let read_nodes = || json!({"readNodes": true});
    let mut arm64 = cluster("arm64");
    let r = run_pod_update(&mut arm64, "", &new, &old, read_nodes());
    r.assert_accepted_unchanged();
    assert_eq!(r.calls, [lookup("ghcr.io/org/amd64-armv7:1")]);
    let mut amd64 = cluster("amd64");
    let r = run_pod_update(&mut amd64, "", &new, &old, read_nodes());
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod may run on windows nodes (setting readNodes: linux Nodes found of amd64, arm64; Karpenter NodePools can create amd64; what its nodeSelector and required node affinity admit), where its new images have no build: image \"ghcr.io/org/amd64-armv7:1\" of container \"c0\" runs on linux/amd64, linux/arm. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
}

#[test]
fn a_windows_pod_kept_to_the_builds_of_a_new_image_is_not_refused_for_them() {
    // Pinned at creation to Windows build 10.0.20348 (pinWindowsBuild, Nodes of 20348 and
    // 17763): a new image built for 20348 runs wherever it may be; one built for 17763 only
    // does not (k8s-judge's property, RAPID_SEED=12543850799843515765, case 6710).
    let mut old = pod(&["ghcr.io/org/app:1"], json!({}));
    old["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]},
            {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]}}});
    let mut registry = FixtureRegistry::new();
    for (image, build) in [
        ("ghcr.io/org/win-20348:1", "10.0.20348.2700"),
        ("ghcr.io/org/win-17763:1", "10.0.17763.6000"),
    ] {
        let body = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                "size": 500, "platform": {"architecture": "amd64", "os": "windows", "os.version": build}}]});
        registry.index(image, &body.to_string());
    }
    let mut old_build = node("w-17763", "windows", "amd64");
    old_build["metadata"]["labels"]["node.kubernetes.io/windows-build"] = json!("10.0.17763");
    let mut cluster = FixtureCluster {
        nodes: vec![node("w-20348", "windows", "amd64"), old_build],
        ..FixtureCluster::default()
    };
    let settings = settings(json!({"readNodes": true, "pinWindowsBuild": true}));
    let run = |registry: &mut FixtureRegistry, cluster: &mut FixtureCluster, image: &str| {
        let new = swapped(&old, image);
        run_subresource(
            registry, cluster, "Pod", "UPDATE", "", &new, &old, &settings,
        )
    };
    run(&mut registry, &mut cluster, "ghcr.io/org/win-20348:1").assert_accepted_unchanged();
    // So with the copy of its term that keeps Nodes without an architecture label reachable:
    // what runs there is their provider's business.
    let mut with_copy = old.clone();
    with_copy["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array_mut()
        .unwrap()
        .push(json!({"matchExpressions": [
            {"key": "kubernetes.io/arch", "operator": "DoesNotExist"},
            {"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"}]}));
    let new = swapped(&with_copy, "ghcr.io/org/win-20348:1");
    run_subresource(
        &mut registry,
        &mut cluster,
        "Pod",
        "UPDATE",
        "",
        &new,
        &with_copy,
        &settings,
    )
    .assert_accepted_unchanged();
    let r = run(&mut registry, &mut cluster, "ghcr.io/org/win-17763:1");
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod may run on windows nodes of amd64 (setting readNodes: windows Nodes found of amd64; what its nodeSelector and required node affinity admit), where its new images have no build: image \"ghcr.io/org/win-17763:1\" of container \"c0\" runs on windows/amd64 (Windows build 10.0.17763). A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
}

#[test]
fn a_windows_build_pin_counts_only_on_the_terms_that_admit_windows_nodes() {
    // Pinned at creation, in a cluster of Linux and Windows nodes, to linux/amd64 or
    // windows/amd64 of build 10.0.20348 (one term per OS, as the policy writes them): a new
    // image built for both OSes, 20348 among its Windows builds, runs wherever the Pod may be.
    // The Linux term names no Windows build, and needs none: it admits no Windows node
    // (k8s-judge's property, RAPID_SEED=3132194578308224044, the case alone: it was refused).
    let mut old = pod(&["ghcr.io/org/app:1"], json!({}));
    old["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
            {"matchExpressions": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]},
                {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]}}});
    let mut registry = FixtureRegistry::new();
    let entry = |os: &str, architecture: &str, build: Option<&str>| {
        let mut platform = json!({"architecture": architecture, "os": os});
        if let Some(build) = build {
            platform["os.version"] = json!(build);
        }
        json!({"mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "size": 500, "platform": platform})
    };
    for (image, windows) in [
        (
            "ghcr.io/org/both-20348:1",
            ["10.0.17763.6000", "10.0.20348.2700"],
        ),
        (
            "ghcr.io/org/both-17763:1",
            ["10.0.17763.6000", "10.0.17763.6001"],
        ),
    ] {
        let body = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [entry("linux", "amd64", None), entry("linux", "arm64", None),
                entry("windows", "amd64", Some(windows[0])), entry("windows", "amd64", Some(windows[1]))]});
        registry.index(image, &body.to_string());
    }
    let two_oses =
        json!({"clusterOperatingSystems": ["linux", "windows"], "pinWindowsBuild": true});
    let mut run = |old: &Value, image: &str, more: Value| {
        let mut all = two_oses.clone();
        all.as_object_mut()
            .unwrap()
            .extend(more.as_object().unwrap().clone());
        let new = swapped(old, image);
        run_subresource(
            &mut registry,
            &mut FixtureCluster::default(),
            "Pod",
            "UPDATE",
            "",
            &new,
            old,
            &settings(all),
        )
    };
    run(&old, "ghcr.io/org/both-20348:1", json!({})).assert_accepted_unchanged();
    // Nor does a term of an architecture the settings say the cluster has no node of.
    let mut s390x = old.clone();
    s390x["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array_mut()
        .unwrap()
        .push(json!({"matchExpressions": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]}));
    let architectures = json!({"schedulableArchitectures": ["amd64", "arm64"]});
    run(&s390x, "ghcr.io/org/both-20348:1", architectures).assert_accepted_unchanged();
    // The Windows term still counts: an image without a build for 20348 may not follow it.
    let r = run(&old, "ghcr.io/org/both-17763:1", json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod may run on windows nodes of amd64 (no setting schedulableArchitectures: nodes of any architecture; what its nodeSelector and required node affinity admit), where its new images have no build: image \"ghcr.io/org/both-17763:1\" of container \"c0\" runs on linux/amd64, linux/arm64, windows/amd64 (Windows build 10.0.17763). A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
}

#[test]
fn a_new_image_of_no_schedulable_architecture_is_named_with_its_container() {
    // The Pod runs images of amd64 and arm64; a swap to an image built for s390x only, which no
    // node of schedulableArchitectures is: refused after admission, naming the new image.
    let old = pod(&["multi:1"], json!({"nodeName": "node-1"}));
    let new = swapped(&old, "127.0.0.1:5000/team/s390x:1.0");
    let r = run_pod_update(&mut FixtureCluster::default(), "", &new, &old, STATIC());
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod is bound to node \"node-1\", which may be one of the linux nodes of amd64, arm64 its constraints admit (setting schedulableArchitectures: amd64, arm64; setting readNodes reads the Node), where its new images have no build: image \"127.0.0.1:5000/team/s390x:1.0\" of container \"c0\" runs on linux/s390x. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
}

#[test]
fn a_gated_pod_whose_pin_would_split_its_terms_looks_each_new_image_up_once() {
    // Images of Linux and Windows builds that differ: the pin would give the Pod one term per OS,
    // which the API server does not allow on UPDATE; judged instead, on the same lookups.
    let old = pod(
        &["multi:1"],
        json!({"schedulingGates": [{"name": "example.com/wait"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}),
    );
    let new = swapped(&old, "ghcr.io/org/linux-windows-multi:1");
    let settings = json!({"schedulableArchitectures": ["amd64", "arm64"],
        "clusterOperatingSystems": ["linux", "windows"]});
    let r = run_pod_update(&mut FixtureCluster::default(), "", &new, &old, settings);
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod may run on windows nodes of arm64 (setting schedulableArchitectures: amd64, arm64; what its nodeSelector and required node affinity admit), where its new images have no build: image \"ghcr.io/org/linux-windows-multi:1\" of container \"c0\" runs on linux/amd64, linux/arm64, windows/amd64. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
    assert_eq!(r.calls, [lookup("ghcr.io/org/linux-windows-multi:1")]);
}

#[test]
fn a_gated_pod_whose_terms_admit_none_of_a_new_images_builds_is_not_pinned_to_no_node() {
    // Pinned at creation to Linux, or Windows builds 10.0.17763 and 10.0.26100; `kubectl debug`
    // adds an image built for Windows 10.0.20348 only. Pinned as on CREATE, each term would admit
    // no node (k8s-judge's property, RAPID_SEED=12002119307861415192, the case alone): refused
    // for the builds (no image runs on Linux), or accepted unchanged with a warning.
    let windows_builds = json!({"key": "node.kubernetes.io/windows-build", "operator": "In",
        "values": ["10.0.17763", "10.0.26100"]});
    let os = |os: &str| json!({"key": "kubernetes.io/os", "operator": "In", "values": [os]});
    let old = pod(
        &["multi:1"],
        json!({"schedulingGates": [{"name": "example.com/wait"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [os("linux")]},
                    {"matchExpressions": [windows_builds, os("windows")]}]}}}}),
    );
    let new = debugged(&old, "ghcr.io/org/win-20348:1");
    let mut registry = FixtureRegistry::new();
    let body = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "size": 500, "platform": {"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.2700"}}]});
    registry.index("ghcr.io/org/win-20348:1", &body.to_string());
    let base = json!({"schedulableArchitectures": ["amd64"], "pinWindowsBuild": true,
        "clusterOperatingSystems": ["linux", "windows"]});
    let mut accept = base.clone();
    accept["onNoCommonArchitecture"] = json!("accept");
    let [rejected, accepted] = [base, accept].map(|json| {
        run_subresource(
            &mut registry,
            &mut FixtureCluster::default(),
            "Pod",
            "UPDATE",
            "ephemeralcontainers",
            &new,
            &old,
            &settings(json),
        )
    });
    let message =
        "image-arch-affinity: the Pod's own constraints admit no Windows node of \
        its images' OS builds: 10.0.20348 (node.kubernetes.io/windows-build; setting pinWindowsBuild)";
    assert_eq!(rejected.rejection(), message);
    assert_eq!(rejected.calls, [lookup("ghcr.io/org/win-20348:1")]);
    assert_eq!(accepted.patch, None);
    assert_eq!(
        accepted.decision.warnings,
        [format!("{message} (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)")]
    );
}

#[test]
fn a_new_image_that_constrains_no_platform_is_accepted_whatever_the_pods_terms() {
    // Its only term matches no node (zone a and zone b); the new image is WebAssembly only:
    // nothing is known against the Pod, which stays where it is (k8s-judge's property,
    // RAPID_SEED=17066478990261276026, case 3065: it was refused with an empty list of images).
    let old = pod(
        &["multi:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["b"]},
                {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}),
    );
    let new = swapped(&old, "ghcr.io/org/wasm-only:1");
    let mut registry = FixtureRegistry::new();
    let wasm = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "size": 500, "platform": {"architecture": "wasm", "os": "wasi"}}]});
    registry.index("ghcr.io/org/wasm-only:1", &wasm.to_string());
    let mut cluster = FixtureCluster::of(vec![node("arm-1", "linux", "arm")]);
    let settings = settings(json!({"readNodes": true}));
    let r = run_subresource(
        &mut registry,
        &mut cluster,
        "Pod",
        "UPDATE",
        "",
        &new,
        &old,
        &settings,
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.calls, [lookup("ghcr.io/org/wasm-only:1")]);
    assert_eq!(cluster.calls, Vec::<String>::new());
}

#[test]
fn a_gated_pod_is_not_refused_for_its_own_constraints_when_its_new_image_constrains_nothing() {
    // A gated Pod is pinned as on CREATE, but what its own constraints admit is not the UPDATE's
    // doing: a new image that constrains no platform is accepted, as for any Pod (k8s-judge's
    // property, RAPID_SEED=17113214762155216571, case 8,237: a gated Pod's nodeSelector asked for
    // ppc64le where Nodes were amd64, and an image swap that constrains nothing was refused).
    let wasm = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "size": 500, "platform": {"architecture": "wasm", "os": "wasi"}}]});
    let gated = |spec: Value| {
        let mut spec = spec;
        spec["schedulingGates"] = json!([{"name": "example.com/wait"}]);
        pod(&["multi:1"], spec)
    };
    let run = |old: &Value, image: &str, settings_json: Value, cluster: &mut FixtureCluster| {
        let mut registry = FixtureRegistry::new();
        registry.index("ghcr.io/org/wasm-only:1", &wasm.to_string());
        let new = swapped(old, image);
        let settings = settings(settings_json);
        run_subresource(
            &mut registry,
            cluster,
            "Pod",
            "UPDATE",
            "",
            &new,
            old,
            &settings,
        )
    };
    // readNodes: its nodeSelector admits no Node.
    let ppc64le = gated(json!({"nodeSelector": {"kubernetes.io/arch": "ppc64le"}}));
    let mut cluster = FixtureCluster::of(vec![node("amd-1", "linux", "amd64")]);
    let r = run(
        &ppc64le,
        "ghcr.io/org/wasm-only:1",
        json!({"readNodes": true}),
        &mut cluster,
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.calls, [lookup("ghcr.io/org/wasm-only:1")]);
    assert_eq!(cluster.calls, Vec::<String>::new());
    // Without readNodes: a Windows Pod where clusterOperatingSystems lists Linux only. A new
    // image that constrains nothing is accepted; one that does is refused as on CREATE.
    let windows = gated(json!({"os": {"name": "windows"}}));
    let linux_only =
        || json!({"schedulableArchitectures": ["amd64"], "clusterOperatingSystems": ["linux"]});
    let mut cluster = FixtureCluster::default();
    let r = run(
        &windows,
        "ghcr.io/org/wasm-only:1",
        linux_only(),
        &mut cluster,
    );
    r.assert_accepted_unchanged();
    let r = run(
        &windows,
        "ghcr.io/org/amd64-only:1",
        linux_only(),
        &mut cluster,
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod runs only on windows nodes, but the cluster's nodes are of linux (setting clusterOperatingSystems)"
    );
    assert_eq!(r.calls, [lookup("ghcr.io/org/amd64-only:1")]);
}

#[test]
fn a_node_pool_whose_min_values_the_pods_own_terms_meet_counts_after_admission() {
    // After admission nothing is pinned: Karpenter serves a Pod from a pool whose minValues on
    // the architecture its own terms meet, whatever its new images run on. A Pod that admits
    // every architecture, with amd64 Nodes and a pool of arm64 and s390x with minValues 2, may
    // get an arm64 node (not an s390x one: the image it runs has no s390x build): an amd64-only
    // image is refused (it was judged as if the pool served only Pods whose new images run on
    // two of its architectures).
    let old = pod(&["multi:1"], json!({}));
    let new = debugged(&old, "ghcr.io/org/amd64-only:1");
    let requirements = json!([{"key": "kubernetes.io/arch", "operator": "In",
        "values": ["arm64", "s390x"], "minValues": 2},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]);
    let mut cluster = FixtureCluster {
        nodes: vec![node("amd-1", "linux", "amd64")],
        node_pools: Some(vec![node_pool("pool", requirements, json!([]))]),
        ..FixtureCluster::default()
    };
    let r = run_pod_update(
        &mut cluster,
        "ephemeralcontainers",
        &new,
        &old,
        json!({"readNodes": true}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod may run on linux nodes of arm64 (setting readNodes: linux Nodes found of amd64; Karpenter NodePools can create arm64, s390x; what its nodeSelector and required node affinity admit), where its new images have no build: image \"ghcr.io/org/amd64-only:1\" of ephemeral container \"debugger\" runs on linux/amd64. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
    // Kept by its own terms to amd64 and arm64, it admits one of the pool's architectures: the
    // pool never serves it, and the amd64 Node runs the new image.
    let kept = pinned(&["multi:1"], &["amd64", "arm64"], None);
    let new = debugged(&kept, "ghcr.io/org/amd64-only:1");
    let r = run_pod_update(
        &mut cluster,
        "ephemeralcontainers",
        &new,
        &kept,
        json!({"readNodes": true}),
    );
    r.assert_accepted_unchanged();
}

#[test]
fn a_gated_pod_karpenter_ignores_is_served_by_no_node_pool_as_on_create() {
    // A gated Pod is pinned as on CREATE: Karpenter reads it only once its gates are removed,
    // and its provisioner then ignores a Pod with matchFields (Provisioner.Validate). An arm64
    // pool creates no node for it, so an arm64-only new image no Node runs is refused, as on
    // CREATE (tests/node_pools.rs), not pinned to arm64 to wait for ever.
    let old = pod(
        &["multi:1"],
        json!({"schedulingGates": [{"name": "example.com/wait"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "NotIn", "values": ["amd-1"]}]}]}}}}),
    );
    let new = swapped(&old, "ghcr.io/org/arm64-only:1");
    let mut cluster = FixtureCluster {
        nodes: vec![node("amd-1", "linux", "amd64")],
        node_pools: Some(vec![node_pool(
            "graviton",
            json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]),
            json!([]),
        )]),
        ..FixtureCluster::default()
    };
    let r = run_pod_update(&mut cluster, "", &new, &old, json!({"readNodes": true}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's images all run only on arm64, but the cluster's nodes are amd64 \
         (setting readNodes: linux Nodes found of amd64; Karpenter NodePools can create arm64 nodes, \
         but none for this Pod: Karpenter's provisioner ignores a Pod with a required node affinity \
         term with matchFields)"
    );
    // Without matchFields it is pinned to arm64, which the pool serves.
    let old = pod(
        &["multi:1"],
        json!({"schedulingGates": [{"name": "example.com/wait"}]}),
    );
    let new = swapped(&old, "ghcr.io/org/arm64-only:1");
    let r = run_pod_update(&mut cluster, "", &new, &old, json!({"readNodes": true}));
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
}

#[test]
fn a_bound_pod_is_bounded_only_by_the_images_the_kubelet_has_shown_to_run() {
    // Default settings, no readNodes: a bound Pod of an arm64-only image whose container started
    // is on an arm64 node, where an amd64 and arm64 debug image runs.
    let arm = started(pod(&["ghcr.io/org/arm64-only:1"], json!({})));
    let debug = |old: &Value| {
        run_pod_update(
            &mut FixtureCluster::default(),
            "ephemeralcontainers",
            &debugged(old, "multi:1"),
            old,
            json!({}),
        )
    };
    let r = debug(&arm);
    r.assert_accepted_unchanged();
    assert_eq!(
        r.calls,
        [
            lookup("docker.io/library/multi:1"),
            lookup("ghcr.io/org/arm64-only:1"),
            "v1/oci_manifest_config ghcr.io/org/arm64-only:1".to_string()
        ]
    );
    // A container that never started (exec format error: the node does not run its image), a
    // status of another image, or no status at all (a DaemonSet's Pod, one created bound, both
    // admitted where their images may not run; k8s-judge's control plane,
    // K8S_E2E_SEED=1363116518573580486): nothing bounds the Pod, nothing more is looked up.
    let mut failed = arm.clone();
    failed["status"]["containerStatuses"][0]["started"] = json!(false);
    failed["status"]["containerStatuses"][0]["state"] =
        json!({"waiting": {"reason": "CrashLoopBackOff"}});
    failed["status"]["containerStatuses"][0]["lastState"] =
        json!({"terminated": {"exitCode": 1, "reason": "Error"}});
    let mut other_image = arm.clone();
    other_image["status"]["containerStatuses"][0]["image"] = json!("ghcr.io/org/amd64-only:1");
    let mut unreported = arm.clone();
    unreported.as_object_mut().expect("pod").remove("status");
    for old in [failed, other_image, unreported] {
        let r = debug(&old);
        assert_eq!(
            r.rejection(),
            "image-arch-affinity: the Pod is bound to node \"node-1\", which may be one of the linux nodes of 386, arm, loong64, mips, mips64, mips64le, mipsle, ppc64, ppc64le, riscv64, s390x, wasm its constraints admit (no setting schedulableArchitectures: nodes of any architecture; setting readNodes reads the Node), where its new images have no build: image \"multi:1\" of ephemeral container \"debugger\" runs on linux/amd64, linux/arm64. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
        );
        assert_eq!(r.calls, [lookup("docker.io/library/multi:1")]);
    }
}

#[test]
fn an_image_another_container_names_but_never_started_is_new_on_a_bound_pod() {
    // A bound Pod (a DaemonSet's, one created bound) runs an arm64-only image; its amd64-only
    // sidecar never started there (exec format error). Giving the app the sidecar's image brings
    // an image the node has not shown to run: it is looked up and refused, where comparing the
    // specs alone accepted it unlooked.
    let mut old = started(pod(
        &["ghcr.io/org/arm64-only:1", "ghcr.io/org/amd64-only:1"],
        json!({}),
    ));
    old["status"]["containerStatuses"][1] = json!({"name": "c1",
        "image": "ghcr.io/org/amd64-only:1", "started": false, "restartCount": 3,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}}});
    let mut new = old.clone();
    new["spec"]["containers"][0]["image"] = json!("ghcr.io/org/amd64-only:1");
    let r = run_pod_update(&mut FixtureCluster::default(), "", &new, &old, json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod is bound to node \"node-1\", which may be one of the linux nodes of arm64 its constraints admit (no setting schedulableArchitectures: nodes of any architecture; setting readNodes reads the Node), where its new images have no build: image \"ghcr.io/org/amd64-only:1\" of container \"c0\", container \"c1\" runs on linux/amd64. A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it"
    );
    assert_eq!(
        r.calls,
        [
            lookup("ghcr.io/org/amd64-only:1"),
            lookup("ghcr.io/org/arm64-only:1"),
            "v1/oci_manifest_config ghcr.io/org/arm64-only:1".to_string()
        ]
    );
    // The same swap on a Pod not yet placed: the policy pinned it for both images at creation.
    let pending = pinned(
        &["ghcr.io/org/arm64-only:1", "ghcr.io/org/amd64-only:1"],
        &["arm64"],
        None,
    );
    let mut swapped = pending.clone();
    swapped["spec"]["containers"][0]["image"] = json!("ghcr.io/org/amd64-only:1");
    let r = run_pod_update(
        &mut FixtureCluster::default(),
        "",
        &swapped,
        &pending,
        json!({}),
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.calls, Vec::<String>::new());
}
