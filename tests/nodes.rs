//! The node-aware mode (`readNodes`): the architectures read from the cluster's Nodes, Pods
//! bound to a node checked against it, each with the exact host calls, patch or message.

mod common;
use common::*;
use serde_json::{json, Value};

const MASKS: &str = "status.nodeInfo.architecture,status.nodeInfo.operatingSystem";

fn list(selector: &str) -> String {
    format!("list_resources_all v1/Node {selector} masks {MASKS}")
}

/// The NodePool list, after the Node lists when these do not decide alone.
fn pools() -> String {
    NODE_POOLS_CALL.to_string()
}

fn get(name: &str) -> String {
    format!("get_resource v1/Node {name} masks {MASKS}")
}

/// Two amd64 and two arm64 Linux Nodes (one cordoned, one tainted) and a Windows Node.
fn mixed() -> FixtureCluster {
    let mut cordoned = node("arm-1", "linux", "arm64");
    cordoned["spec"]["unschedulable"] = json!(true);
    let mut tainted = node("arm-2", "linux", "arm64");
    tainted["spec"]["taints"] =
        json!([{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]);
    FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("amd-2", "linux", "amd64"),
        cordoned,
        tainted,
        node("win-1", "windows", "amd64"),
    ])
}

#[test]
fn images_covering_every_node_architecture_pin_only_the_os_after_one_empty_list() {
    // The Windows Node makes the cluster one of two OSes: the Linux Pod is kept to Linux Nodes.
    let mut cluster = mixed();
    let r = node_aware(&mut cluster, &pod(&["multi:1"], json!({})), json!({}));
    // No architecture pinned: no annotation.
    r.assert_patch(json!([add_required_os(&[], "linux")]));
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)"),
            list("kubernetes.io/os=windows"),
            pools(),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
    assert_eq!(r.calls, ["v1/oci_manifest docker.io/library/multi:1"]);
    // Without it, nothing to pin: one list, and the Windows one, empty.
    let mut linux_only = FixtureCluster::of(vec![node("amd-1", "linux", "amd64")]);
    let r = node_aware(&mut linux_only, &pod(&["multi:1"], json!({})), json!({}));
    r.assert_accepted_unchanged();
    assert_eq!(
        linux_only.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)"),
            list("kubernetes.io/os=windows"),
            pools()
        ]
    );
}

#[test]
fn images_missing_a_node_architecture_are_pinned_to_theirs() {
    let mut cluster = mixed();
    let r = node_aware(
        &mut cluster,
        &pod(&["ghcr.io/org/amd64-only:1"], json!({})),
        json!({}),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        add_required_os(&["amd64"], "linux")
    ]));
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)"),
            list("kubernetes.io/os=windows"),
            list("kubernetes.io/os=linux,kubernetes.io/arch in (amd64)"),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
}

#[test]
fn images_of_an_absent_architecture_are_rejected_naming_both() {
    let mut cluster = mixed();
    let r = node_aware(
        &mut cluster,
        &pod(&["127.0.0.1:5000/team/s390x:1.0"], json!({})),
        json!({}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's images all run only on s390x, but the cluster's nodes are amd64, \
         arm64 (setting readNodes: linux Nodes found of amd64, arm64)"
    );
    // The Windows Nodes are read for the cluster that would have s390x Nodes (the Pod pinned).
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (s390x)"),
            list("kubernetes.io/os=windows"),
            list("kubernetes.io/os=linux,kubernetes.io/arch in (s390x)"),
            pools()
        ]
    );
}

#[test]
fn an_autoscaled_pool_with_zero_nodes_counts_as_present() {
    let mut cluster = FixtureCluster::of(vec![node("amd-1", "linux", "amd64")]);
    let arm = pod(&["ghcr.io/org/arm64-only:1"], json!({}));
    let r = node_aware(
        &mut cluster,
        &arm,
        json!({"autoscaledArchitectures": [{"os": "linux", "architectures": ["arm64"]}]}),
    );
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    // The pool is configured: no second list to find arm64 Nodes (the Windows list is empty).
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (arm64)"),
            list("kubernetes.io/os=windows"),
            pools(),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
    // Without it, the Pod could run nowhere.
    let r = node_aware(&mut cluster, &arm, json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's images all run only on arm64, but the cluster's nodes are amd64 \
         (setting readNodes: linux Nodes found of amd64)"
    );
    // A multi-arch image in a cluster of amd64 Nodes and an arm64 pool at zero: nothing to pin.
    let r = node_aware(
        &mut cluster,
        &pod(&["multi:1"], json!({})),
        json!({"autoscaledArchitectures": [{"os": "linux", "architectures": ["arm64"]}]}),
    );
    r.assert_accepted_unchanged();
    // An autoscaled s390x pool: the multi-arch Pod is kept off it, pinned to the architectures
    // the cluster has (amd64 Nodes; no arm64 Node nor pool).
    let r = node_aware(
        &mut cluster,
        &pod(&["multi:1"], json!({})),
        json!({"autoscaledArchitectures": [{"os": "linux", "architectures": ["s390x"]}]}),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
}

#[test]
fn odd_nodes_count_by_what_can_be_told() {
    // No labels (status tells), an architecture no image is built for, no label nor status.
    let mut unlabelled = node("bare-1", "linux", "s390x");
    unlabelled["metadata"]["labels"] = json!({"kubernetes.io/os": "linux"});
    let mut odd = node("odd-1", "linux", "armv7l");
    odd["status"]["nodeInfo"] = json!({});
    let mut nothing = node("nothing-1", "linux", "x");
    nothing["metadata"]["labels"] = json!({"kubernetes.io/os": "linux"});
    nothing["status"] = json!({});
    let mut cluster = FixtureCluster::of(vec![node("amd-1", "linux", "amd64"), unlabelled]);
    let r = node_aware(&mut cluster, &pod(&["multi:1"], json!({})), json!({}));
    // As with schedulableArchitectures [amd64, s390x]: the pin is cut to the Nodes' architectures.
    // A Node without the label is one a pin on it would lose for good (virtual-kubelet's): a copy
    // of the Pod's term keeps it reachable (`without_an_architecture_label_...` below).
    r.assert_patch(json!([add_annotation("amd64"), {"op": "add", "path": "/spec/affinity",
        "value": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]},
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "DoesNotExist"},
                {"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"}]}]}}}}]));
    // A Node labelled with an architecture no node reports: the Pod is kept off it all the same.
    let mut cluster = FixtureCluster::of(vec![node("amd-1", "linux", "amd64"), odd]);
    let r = node_aware(&mut cluster, &pod(&["multi:1"], json!({})), json!({}));
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    // A Node whose architecture cannot be told is left out: nothing to pin against.
    let mut cluster = FixtureCluster::of(vec![node("amd-1", "linux", "amd64"), nothing]);
    let r = node_aware(&mut cluster, &pod(&["multi:1"], json!({})), json!({}));
    r.assert_accepted_unchanged();
}

#[test]
fn the_pods_own_constraints_choose_what_is_read() {
    let mut cluster = mixed();
    // The Pod asks for amd64 and its images run there: only whether amd64 Nodes exist matters
    // (a Pod that can only wait is refused), so those are read, and whether Nodes of another OS
    // exist: the Windows Node makes the Pod pinned to Linux.
    let r = node_aware(
        &mut cluster,
        &pod(
            &["ghcr.io/org/amd64-only:1"],
            json!({"nodeSelector": {"kubernetes.io/arch": "amd64"}}),
        ),
        json!({}),
    );
    r.assert_patch(json!([add_required_os(&[], "linux")]));
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch in (amd64)"),
            list("kubernetes.io/os=windows"),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
    // It asks for arm64, its images run only on amd64: refused; which refusal depends on whether
    // the cluster has amd64 Nodes, so both lists are read.
    cluster.calls.clear();
    let r = node_aware(
        &mut cluster,
        &pod(
            &["ghcr.io/org/amd64-only:1"],
            json!({"nodeSelector": {"kubernetes.io/arch": "arm64"}}),
        ),
        json!({}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=arm64 asks for an architecture that \
         its images do not run on; they all run on: amd64"
    );
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)"),
            list("kubernetes.io/os=linux,kubernetes.io/arch in (amd64)"),
            pools()
        ]
    );
    // A Windows Pod reads the Windows Nodes, then the Linux ones: it is pinned to Windows
    // (`spec.os` alone does not keep the scheduler off Linux Nodes).
    cluster.calls.clear();
    let r = node_aware(
        &mut cluster,
        &pod(
            &["ghcr.io/org/windows:1"],
            json!({"os": {"name": "windows"}}),
        ),
        json!({}),
    );
    r.assert_patch(json!([add_required_os(&[], "windows")]));
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=windows,kubernetes.io/arch notin (amd64)"),
            list("kubernetes.io/os=linux"),
            pools(),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
    // With the usual nodeSelector kubernetes.io/os: windows, the Linux Nodes are not read.
    cluster.calls.clear();
    let r = node_aware(
        &mut cluster,
        &pod(
            &["ghcr.io/org/windows:1"],
            json!({"nodeSelector": {"kubernetes.io/os": "windows"}}),
        ),
        json!({}),
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=windows,kubernetes.io/arch notin (amd64)"),
            pools(),
        ]
    );
}

#[test]
fn nodes_that_cannot_be_read_follow_on_lookup_failure() {
    let mut cluster = mixed();
    cluster.failure = Some(
        "Host error: error invoking host capability kubernetes.list_resources_all: connection refused\nmore detail"
            .to_string(),
    );
    let amd = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    let r = node_aware(&mut cluster, &amd, json!({}));
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the cluster's Nodes could not be read, so the Pod is pinned to every architecture \
          its images run on: error invoking host capability kubernetes.list_resources_all: connection refused"]
    );
    let r = node_aware(&mut cluster, &amd, json!({"onLookupFailure": "accept"}));
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the Pod was not pinned to an architecture because the cluster's Nodes could not be \
          read: error invoking host capability kubernetes.list_resources_all: connection refused"]
    );
    let r = node_aware(&mut cluster, &amd, json!({"onLookupFailure": "reject"}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot read the cluster's linux Nodes: error invoking host capability \
         kubernetes.list_resources_all: connection refused (setting onLookupFailure: reject)"
    );
}

// ---- Pods bound to a node ----

#[test]
fn a_pod_bound_to_a_node_of_the_wrong_architecture_is_rejected() {
    let mut cluster = mixed();
    let bound = pod(&["ghcr.io/org/amd64-only:1"], json!({"nodeName": "arm-2"}));
    let r = node_aware(&mut cluster, &bound, json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod is bound to node \"arm-2\" (linux/arm64), which its images have no build \
         for: \"ghcr.io/org/amd64-only:1\" runs only on linux/amd64. Its containers would fail there with exec format error"
    );
    assert_eq!(cluster.calls, [get("arm-2")]);
    assert_eq!(r.calls, ["v1/oci_manifest ghcr.io/org/amd64-only:1"]);
    // onNoCommonArchitecture: accept lets it through with the reason.
    let r = node_aware(
        &mut cluster,
        &bound,
        json!({"onNoCommonArchitecture": "accept"}),
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.decision.warnings.len(), 1);
    assert!(r.decision.warnings[0].ends_with(
        "(accepted without an architecture constraint: setting onNoCommonArchitecture: accept)"
    ));
}

#[test]
fn a_pod_bound_to_a_fitting_node_is_accepted_unchanged() {
    let mut cluster = mixed();
    let r = node_aware(
        &mut cluster,
        &pod(&["multi:1"], json!({"nodeName": "arm-1"})),
        json!({}),
    );
    r.assert_accepted_unchanged();
    assert_eq!(cluster.calls, [get("arm-1")]);
    // A Windows image on the Windows Node; a Linux image there is refused.
    let r = node_aware(
        &mut cluster,
        &pod(&["ghcr.io/org/windows:1"], json!({"nodeName": "win-1"})),
        json!({}),
    );
    r.assert_accepted_unchanged();
    let r = node_aware(
        &mut cluster,
        &pod(&["ghcr.io/org/amd64-only:1"], json!({"nodeName": "win-1"})),
        json!({}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod is bound to node \"win-1\" (windows/amd64), which its images have no build \
         for: \"ghcr.io/org/amd64-only:1\" runs only on linux/amd64. Its containers would fail there with exec format error"
    );
}

#[test]
fn a_missing_node_follows_on_lookup_failure() {
    let mut cluster = mixed();
    let bound = pod(&["ghcr.io/org/amd64-only:1"], json!({"nodeName": "gone-1"}));
    let r = node_aware(&mut cluster, &bound, json!({}));
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the Pod was not checked against node \"gone-1\", which could not be read: \
          error invoking host capability kubernetes.get_resource: nodes \"gone-1\" not found"]
    );
    // No image lookup for a node that cannot be read.
    assert_eq!(r.calls, Vec::<String>::new());
    let r = node_aware(&mut cluster, &bound, json!({"onLookupFailure": "reject"}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot read node \"gone-1\", which the Pod is bound to: error invoking host capability \
         kubernetes.get_resource: nodes \"gone-1\" not found (setting onLookupFailure: reject)"
    );
    // A Node whose architecture cannot be told is one that cannot be read.
    let mut blank = node("blank-1", "linux", "amd64");
    blank["metadata"]["labels"] = json!({});
    blank["status"] = json!({});
    let mut cluster = FixtureCluster::of(vec![blank]);
    let r = node_aware(
        &mut cluster,
        &pod(&["multi:1"], json!({"nodeName": "blank-1"})),
        json!({"onLookupFailure": "reject"}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot read node \"blank-1\", which the Pod is bound to: the Node has neither a \
         kubernetes.io/arch label nor status.nodeInfo.architecture (setting onLookupFailure: reject)"
    );
}

#[test]
fn a_daemon_set_pod_is_checked_against_its_target_node() {
    let mut cluster = mixed();
    let ds_pod = |image: &str, node: &str| {
        let mut pod = pod(
            &[image],
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}),
        );
        pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet",
            "name": "agent", "uid": "u", "controller": true}]);
        pod
    };
    let r = node_aware(
        &mut cluster,
        &ds_pod("ghcr.io/org/amd64-only:1", "arm-1"),
        json!({}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod is bound to node \"arm-1\" (linux/arm64), which its images have no build \
         for: \"ghcr.io/org/amd64-only:1\" runs only on linux/amd64. Its containers would fail there with exec format error"
    );
    assert_eq!(cluster.calls, [get("arm-1")]);
    let r = node_aware(
        &mut cluster,
        &ds_pod("ghcr.io/org/amd64-only:1", "amd-1"),
        json!({}),
    );
    r.assert_accepted_unchanged();
    // Images that run on Linux and Windows: the DaemonSet controller puts a Pod whose spec.os is
    // linux on the Windows Node too (spec.os does not keep it off), and the kubelet refuses it
    // there. Refused before any image lookup.
    let mut linux = ds_pod("ghcr.io/org/windows-linux:1", "win-1");
    linux["spec"]["os"] = json!({"name": "linux"});
    let r = node_aware(&mut cluster, &linux, json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod is bound to node \"win-1\" (windows/amd64), but it asks for \"linux\" \
         nodes (spec.os or its nodeSelector): the kubelet refuses it there. Give what creates it a nodeSelector \
         on kubernetes.io/os for that OS"
    );
    assert_eq!(r.calls, Vec::<String>::new());
    // On a Linux Node it is accepted, and without spec.os on the Windows one.
    let mut on_linux = ds_pod("ghcr.io/org/windows-linux:1", "amd-1");
    on_linux["spec"]["os"] = json!({"name": "linux"});
    node_aware(&mut cluster, &on_linux, json!({})).assert_accepted_unchanged();
    node_aware(
        &mut cluster,
        &ds_pod("ghcr.io/org/windows-linux:1", "win-1"),
        json!({}),
    )
    .assert_accepted_unchanged();
}

#[test]
fn without_read_nodes_bound_pods_are_left_alone() {
    // `run` asserts that no Node is read.
    let r = run(
        &pod(&["ghcr.io/org/amd64-only:1"], json!({"nodeName": "arm-1"})),
        json!({}),
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.calls, Vec::<String>::new());
}

#[test]
fn an_audited_running_pod_fails_only_on_the_wrong_node() {
    // The audit scanner sends each existing Pod as a CREATE, with its node and status.
    let mut cluster = mixed();
    let mut running = pod(&["ghcr.io/org/amd64-only:1"], json!({"nodeName": "arm-2"}));
    running["status"] = json!({"phase": "Running", "hostIP": "10.0.0.4"});
    let r = node_aware(&mut cluster, &running, json!({}));
    assert!(r
        .rejection()
        .starts_with("image-arch-affinity: the Pod is bound to node \"arm-2\" (linux/arm64)"));
    running["spec"]["nodeName"] = json!("amd-1");
    node_aware(&mut cluster, &running, json!({})).assert_accepted_unchanged();
    // A pending Pod that would be pinned passes (a mutation is a pass).
    let mut pending = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    pending["status"] = json!({"phase": "Pending"});
    let r = node_aware(&mut cluster, &pending, json!({}));
    assert!(r.patch.is_some());
}

#[test]
fn a_workload_whose_images_run_on_no_node_is_rejected() {
    let mut cluster = mixed();
    let template = pod(&["127.0.0.1:5000/team/s390x:1.0"], json!({}));
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"replicas": 1, "template": {"metadata": template["metadata"], "spec": template["spec"]}}});
    let r = run_in_cluster(
        &mut FixtureRegistry::new(),
        &mut cluster,
        "Deployment",
        "CREATE",
        &deployment,
        &Value::Null,
        &settings(json!({"readNodes": true})),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod template's images all run only on s390x, but the cluster's nodes are \
         amd64, arm64 (setting readNodes: linux Nodes found of amd64, arm64)"
    );
}

#[test]
fn a_daemon_set_warning_names_the_node_architectures_its_images_lack() {
    let mut cluster = mixed();
    let template = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    let r = node_aware_daemon_set(&mut cluster, &template);
    r.assert_accepted_unchanged();
    // And the mixed cluster's Windows Node, which its template admits too.
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: this DaemonSet's images run only on amd64: its Pods will fail on the arm64 nodes. \
          Add a required node affinity on kubernetes.io/arch, or set daemonSetTemplates: mutate",
         "image-arch-affinity: this DaemonSet runs linux images, and the cluster has windows nodes its template \
          admits: its Pods will fail there. Add a nodeSelector kubernetes.io/os: linux, or set daemonSetTemplates: mutate"]
    );
}

#[test]
fn what_is_read_does_not_grow_with_the_cluster_when_images_cover_it() {
    // 5,000 Nodes of two architectures: a multi-arch Pod reads an empty list.
    let nodes = (0..5000)
        .map(|i| {
            let arch = if i % 2 == 0 { "amd64" } else { "arm64" };
            node(&format!("node-{i}"), "linux", arch)
        })
        .collect();
    let mut cluster = FixtureCluster::of(nodes);
    let answer = image_arch_affinity::host::cluster::Cluster::list_nodes(
        &mut cluster,
        "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)",
        &["status.nodeInfo.architecture"],
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(answer).unwrap(),
        r#"{"apiVersion":"v1","items":[],"kind":"NodeList","metadata":{"resourceVersion":"1"}}"#
    );
    let r = node_aware(&mut cluster, &pod(&["multi:1"], json!({})), json!({}));
    r.assert_accepted_unchanged();
    // And whether the cluster has Windows Nodes: none.
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)"),
            list("kubernetes.io/os=windows"),
            pools()
        ]
    );
}

// ---- what is read, per case (docs/node-aware.md) ----

/// The Node calls and the Nodes their answers hold, for one evaluation of `object` in `cluster`.
fn reads(cluster: &mut FixtureCluster, object: &Value, settings_json: Value) -> (usize, usize) {
    cluster.nodes_read = 0;
    node_aware(cluster, object, settings_json);
    (cluster.calls.len(), cluster.nodes_read)
}

#[test]
fn node_calls_and_nodes_read_per_case_in_a_5000_node_cluster() {
    // 2,500 amd64 and 2,500 arm64 Linux Nodes, 10 Windows amd64 Nodes of two builds.
    let mut nodes: Vec<Value> = (0..5000)
        .map(|i| {
            node(
                &format!("n{i}"),
                "linux",
                if i % 2 == 0 { "amd64" } else { "arm64" },
            )
        })
        .collect();
    for i in 0..10 {
        let mut windows = node(&format!("w{i}"), "windows", "amd64");
        if i % 2 == 0 {
            windows["metadata"]["labels"]["node.kubernetes.io/windows-build"] = json!("10.0.17763");
        }
        nodes.push(windows);
    }
    let mut cluster = FixtureCluster::of(nodes);
    let multi = pod(&["multi:1"], json!({}));
    let amd = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    let arm = pod(&["ghcr.io/org/arm64-only:1"], json!({}));
    // Multi-arch images covering every architecture the cluster has: one empty list, and the
    // Windows Nodes (the Pod is pinned to Linux).
    assert_eq!(reads(&mut cluster, &multi, json!({})), (4, 10));
    // Pinned: the Nodes of the other architectures, the Windows ones, those of the images'.
    assert_eq!(reads(&mut cluster, &amd, json!({})), (4, 5010));
    // An autoscaled pool of the images' architecture: the other Nodes only.
    let pool = json!({"autoscaledArchitectures": [{"os": "linux", "architectures": ["arm64"]}]});
    assert_eq!(reads(&mut cluster, &arm, pool), (3, 2510));
    // The Pod's own constraints admit only the images' architecture: whether such Nodes exist.
    let selected = pod(
        &["ghcr.io/org/amd64-only:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64"}}),
    );
    assert_eq!(reads(&mut cluster, &selected, json!({})), (3, 2510));
    // A Pod whose nodeSelector fixes its OS reads no other OS.
    let linux_amd64 = pod(
        &["ghcr.io/org/amd64-only:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}}),
    );
    assert_eq!(reads(&mut cluster, &linux_amd64, json!({})), (1, 2500));
    // They admit none: refused, the message naming what the cluster has.
    let conflict = pod(
        &["ghcr.io/org/amd64-only:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "arm64"}}),
    );
    assert_eq!(reads(&mut cluster, &conflict, json!({})), (3, 5000));
    // Tolerations of an image architecture: added only if such Nodes exist, so they are read.
    let tolerations = json!({"architectureTolerations": {"arm64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]}});
    assert_eq!(reads(&mut cluster, &multi, tolerations), (5, 5010));
    // A bound Pod: its Node.
    cluster.calls.clear();
    node_aware(
        &mut cluster,
        &pod(&["multi:1"], json!({"nodeName": "n1"})),
        json!({}),
    );
    assert_eq!(cluster.calls.len(), 1);
    // A Windows Pod pinned to its images' OS build: every Windows Node, in the two lists.
    let windows = json!({"os": {"name": "windows"}});
    let mut registry = FixtureRegistry::new();
    registry.index(
        "ghcr.io/org/win:1",
        r#"{"schemaVersion":2,"manifests":[{"platform":{"os":"windows","architecture":"amd64","os.version":"10.0.20348.1"}}]}"#,
    );
    cluster.nodes_read = 0;
    let r = run_in_cluster(
        &mut registry,
        &mut cluster,
        "Pod",
        "CREATE",
        &pod(&["ghcr.io/org/win:1"], windows),
        &Value::Null,
        &settings(json!({"readNodes": true, "pinWindowsBuild": true})),
    );
    // And every Linux Node, to learn that some exist: the Pod states its OS in spec.os only.
    assert_eq!((cluster.calls.len(), cluster.nodes_read), (5, 5010));
    assert_eq!(
        r.patch.as_ref().map(|p| p[1]["value"]["nodeAffinity"].to_string()),
        Some(r#"{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"node.kubernetes.io/windows-build","operator":"In","values":["10.0.20348"]},{"key":"kubernetes.io/os","operator":"In","values":["windows"]}]}]}}"#.to_string())
    );
}

#[test]
fn a_refusal_says_which_nodes_were_read_and_that_none_of_the_pods_os_was_found() {
    // Windows Nodes only. The Linux Pod asks for arm (32-bit), which its image runs on beside
    // amd64: the Nodes outside amd64 are read (none, so none of arm) and decide; those of amd64
    // are not read, and the refusal says so rather than naming Nodes it never saw.
    let mut cluster = FixtureCluster::of(vec![node("win-1", "windows", "amd64")]);
    let r = node_aware(
        &mut cluster,
        &pod(
            &["ghcr.io/org/amd64-armv7:1"],
            json!({"nodeSelector": {"kubernetes.io/arch": "arm"}}),
        ),
        json!({}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=arm asks for arm nodes, but the \
         cluster has none (setting readNodes: no linux Node found outside amd64; those of amd64 were not \
         read); of those, its images run on: amd64"
    );
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)"),
            pools(),
        ]
    );
    // Both lists read, no Linux Node, an amd64 pool: "no linux Node found".
    let r = node_aware(
        &mut cluster,
        &pod(&["ghcr.io/org/arm64-only:1"], json!({})),
        json!({"autoscaledArchitectures": [{"os": "linux", "architectures": ["amd64"]}]}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's images all run only on arm64, but the cluster's nodes are amd64 \
         (setting readNodes: no linux Node found; autoscaledArchitectures: amd64)"
    );
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (arm64)"),
            list("kubernetes.io/os=windows"),
            list("kubernetes.io/os=linux,kubernetes.io/arch in (arm64)"),
            pools()
        ]
    );
}

/// A virtual-kubelet Node as its providers register it: no `kubernetes.io/arch` label (only
/// the beta OS label, or none), tainted, and a kubelet status of amd64.
fn virtual_node(name: &str) -> Value {
    let mut virtual_node = node(name, "linux", "amd64");
    virtual_node["metadata"]["labels"] = json!({"type": "virtual-kubelet",
        "kubernetes.io/role": "agent", "beta.kubernetes.io/os": "linux", "kubernetes.io/hostname": name});
    virtual_node["spec"]["taints"] =
        json!([{"key": "virtual-kubelet.io/provider", "value": "azure", "effect": "NoSchedule"}]);
    virtual_node
}

/// Linux Nodes of amd64 and arm64, and a virtual-kubelet Node.
fn amd64_arm64_and_virtual() -> Vec<Value> {
    vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
        virtual_node("virtual-node-aci-linux"),
    ]
}

#[test]
fn without_an_architecture_label_a_virtual_node_is_never_lost_by_a_pin() {
    // AKS virtual nodes and other virtual-kubelet providers carry no kubernetes.io/arch label: a
    // Pod sent there by its own nodeSelector and toleration would be unschedulable for ever
    // once pinned. Each of its terms the pin changed gets a copy for the Nodes without the label,
    // and the Nodes with one are kept to its images' architectures.
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
        virtual_node("virtual-node-aci-linux"),
    ]);
    let to_virtual = pod(
        &["ghcr.io/org/amd64-only:1"],
        json!({"nodeSelector": {"type": "virtual-kubelet"},
               "tolerations": [{"key": "virtual-kubelet.io/provider", "operator": "Exists"}],
               "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                   {"matchExpressions": [{"key": "kubernetes.io/role", "operator": "In", "values": ["agent"]}]},
                   {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]}]}}}}),
    );
    let r = node_aware(&mut cluster, &to_virtual, json!({}));
    // The second term names architectures itself: it admits no Node without the label, and gets
    // no copy.
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1",
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/1/matchExpressions/1",
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/2",
         "value": {"matchExpressions": [
             {"key": "kubernetes.io/role", "operator": "In", "values": ["agent"]},
             {"key": "kubernetes.io/arch", "operator": "DoesNotExist"},
             {"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"}]}}
    ]));
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64)"),
            list("kubernetes.io/os=windows"),
            list("kubernetes.io/os=linux,kubernetes.io/arch in (amd64)"),
            pools(),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
    // Without such a Node: no copy, one list more (after the NodePools').
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
    ]);
    let r = node_aware(
        &mut cluster,
        &pod(&["ghcr.io/org/amd64-only:1"], json!({})),
        json!({}),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    assert_eq!(cluster.calls.len(), 5);
    // Nothing pinned: nothing more read.
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        virtual_node("virtual-node-aci-linux"),
    ]);
    let r = node_aware(&mut cluster, &pod(&["multi:1"], json!({})), json!({}));
    r.assert_accepted_unchanged();
    assert!(
        !cluster
            .calls
            .iter()
            .any(|c| c.contains("!kubernetes.io/arch,!beta.kubernetes.io/arch")),
        "{:?}",
        cluster.calls
    );
    // A nodeSelector on the architecture admits no Node without the label: no copy.
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
        virtual_node("virtual-node-aci-linux"),
    ]);
    let on_amd = pod(
        &["ghcr.io/org/amd64-only:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64"}}),
    );
    node_aware(&mut cluster, &on_amd, json!({})).assert_accepted_unchanged();
}

#[test]
fn a_term_that_admits_nodes_without_the_beta_label_keeps_the_virtual_node() {
    // A term with `beta.kubernetes.io/arch DoesNotExist` (or `NotIn`) admits the virtual node,
    // and the pin on kubernetes.io/arch would lose it: it gets its copy (k8s-judge's review of
    // 8b5afdf). The copy does not repeat the Pod's own expression.
    let terms = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";
    for (expression, copy) in [
        (
            json!({"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"}),
            json!([{"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"},
                   {"key": "kubernetes.io/arch", "operator": "DoesNotExist"}]),
        ),
        (
            json!({"key": "beta.kubernetes.io/arch", "operator": "NotIn", "values": ["s390x"]}),
            json!([{"key": "beta.kubernetes.io/arch", "operator": "NotIn", "values": ["s390x"]},
                   {"key": "kubernetes.io/arch", "operator": "DoesNotExist"},
                   {"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"}]),
        ),
    ] {
        let to_virtual = pod(
            &["ghcr.io/org/amd64-only:1"],
            json!({"tolerations": [{"key": "virtual-kubelet.io/provider", "operator": "Exists"}],
                   "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                       "nodeSelectorTerms": [{"matchExpressions": [expression]}]}}}}),
        );
        let mut cluster = FixtureCluster::of(amd64_arm64_and_virtual());
        let r = node_aware(&mut cluster, &to_virtual, json!({}));
        r.assert_patch(json!([
            add_annotation("amd64"),
            {"op": "add", "path": format!("{terms}/0/matchExpressions/1"),
             "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}},
            {"op": "add", "path": format!("{terms}/1"), "value": {"matchExpressions": copy}}
        ]));
        // The policy run on its own output leaves it as it is.
        let pinned = match &r.decision.verdict {
            image_arch_affinity::policy::Verdict::Mutate(pod) => pod.clone(),
            other => panic!("not pinned: {other:?}"),
        };
        let mut cluster = FixtureCluster::of(amd64_arm64_and_virtual());
        node_aware(&mut cluster, &pinned, json!({})).assert_accepted_unchanged();
    }
}

#[test]
fn a_list_of_nodes_without_an_architecture_label_that_fails_follows_on_lookup_failure() {
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
    ]);
    cluster.failure = Some("Host error: connection refused".to_string());
    // The Pod's own lists answer (its OS, Windows, its images' architectures, the NodePools:
    // none in this cluster); the fifth fails.
    cluster.fail_from = Some(4);
    let amd = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    let r = node_aware(&mut cluster, &amd, json!({}));
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the cluster's Nodes without a kubernetes.io/arch label could not be read, so the \
          Pod is pinned as if there were none: connection refused"]
    );
    cluster.calls.clear();
    let r = node_aware(&mut cluster, &amd, json!({"onLookupFailure": "accept"}));
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        [
            "image-arch-affinity: the Pod was not pinned because the cluster's Nodes without a \
          kubernetes.io/arch label could not be read: connection refused"
        ]
    );
    cluster.calls.clear();
    let r = node_aware(&mut cluster, &amd, json!({"onLookupFailure": "reject"}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot read the cluster's Nodes without a kubernetes.io/arch label: connection refused \
         (setting onLookupFailure: reject)"
    );
}

#[test]
fn a_pod_pinned_with_a_copy_for_nodes_without_an_architecture_label_is_left_as_it_is() {
    // The policy runs on its own output: the Pods of a template it pinned (workloadTemplates:
    // mutate), a webhook's reinvocation. The copy admits no labelled Node: nothing more to pin,
    // and no copy of the copy.
    let nodes = || {
        let mut nodes = amd64_arm64_and_virtual();
        nodes.push(node("win-1", "windows", "amd64"));
        nodes
    };
    for spec in [
        json!({}),
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/role", "operator": "In", "values": ["agent"]}]},
            {"matchExpressions": []}]}}}}),
    ] {
        let mut cluster = FixtureCluster::of(nodes());
        let original = pod(&["ghcr.io/org/amd64-only:1"], spec);
        let first = node_aware(&mut cluster, &original, json!({}));
        let pinned = match &first.decision.verdict {
            image_arch_affinity::policy::Verdict::Mutate(pod) => pod.clone(),
            other => panic!("not pinned: {other:?}"),
        };
        let mut cluster = FixtureCluster::of(nodes());
        node_aware(&mut cluster, &pinned, json!({})).assert_accepted_unchanged();
        // An empty term matches no Node: it gets no copy (a copy would match every Node without
        // the label).
        let terms = &pinned["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        let copies = terms
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t.to_string().contains("DoesNotExist"))
            .count();
        assert_eq!(copies, 1, "{terms}");
    }
}

#[test]
fn match_node_labels_and_windows_builds_never_narrow_a_term_for_nodes_without_an_architecture_label(
) {
    // A virtual node carries no zone label and no Windows build either: the term that admits
    // only Nodes without an architecture label gets neither. Not the copy the policy adds on
    // CREATE, nor that copy when the policy runs again on its own output (a template under
    // mutate whose image is set: k8s-judge's fresh-clone run of 9a032b8, RAPID_SEED=
    // 7149225260538296555 case 3,566, and CI's RAPID_SEED=4511125444972790443), nor such a term
    // of the Pod's own.
    let zone = json!({"matchNodeLabels": ["topology.kubernetes.io/zone"]});
    let mut original = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    original["metadata"]["labels"]["topology.kubernetes.io/zone"] = json!("b");
    let first = node_aware(
        &mut FixtureCluster::of(amd64_arm64_and_virtual()),
        &original,
        zone.clone(),
    );
    first.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]},
                {"matchExpressions": [
                    {"key": "kubernetes.io/arch", "operator": "DoesNotExist"},
                    {"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"}]}]}}}}
    ]));
    let pinned = match &first.decision.verdict {
        image_arch_affinity::policy::Verdict::Mutate(pod) => pod.clone(),
        other => panic!("not pinned: {other:?}"),
    };
    let mut cluster = FixtureCluster::of(amd64_arm64_and_virtual());
    node_aware(&mut cluster, &pinned, zone.clone()).assert_accepted_unchanged();
    // Its own term admits only amd64: the Nodes of amd64 are read first, and nothing changed, so
    // the Nodes without the label are not read.
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch in (amd64)"),
            list("kubernetes.io/os=windows"),
            pools()
        ]
    );
    // The Pod's own term for such Nodes: the zone goes into the other term only.
    let mut own = pod(
        &["ghcr.io/org/amd64-only:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/role", "operator": "In", "values": ["agent"]}]},
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "DoesNotExist"}]}]}}}}),
    );
    own["metadata"]["labels"]["topology.kubernetes.io/zone"] = json!("b");
    let mut cluster = FixtureCluster::of(amd64_arm64_and_virtual());
    let r = node_aware(&mut cluster, &own, zone);
    let terms = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": format!("{terms}/0/matchExpressions/1"),
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}},
        {"op": "add", "path": format!("{terms}/0/matchExpressions/2"),
         "value": {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}},
        {"op": "add", "path": format!("{terms}/2"),
         "value": {"matchExpressions": [
             {"key": "kubernetes.io/role", "operator": "In", "values": ["agent"]},
             {"key": "kubernetes.io/arch", "operator": "DoesNotExist"},
             {"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"}]}}
    ]));
    // A Windows Pod pinned to its images' build: the build goes into the other term only.
    let mut registry = FixtureRegistry::new();
    registry.index(
        "ghcr.io/org/win:1",
        r#"{"schemaVersion":2,"manifests":[{"platform":{"os":"windows","architecture":"amd64","os.version":"10.0.20348.1"}}]}"#,
    );
    let windows = pod(
        &["ghcr.io/org/win:1"],
        json!({"os": {"name": "windows"},
               "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                   {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]},
                   {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "DoesNotExist"}]}]}}}}),
    );
    let mut nodes = amd64_arm64_and_virtual();
    nodes.push(node("win-1", "windows", "amd64"));
    let mut older = node("win-2", "windows", "amd64");
    older["metadata"]["labels"]["node.kubernetes.io/windows-build"] = json!("10.0.17763");
    nodes.push(older);
    let r = run_in_cluster(
        &mut registry,
        &mut FixtureCluster::of(nodes),
        "Pod",
        "CREATE",
        &windows,
        &Value::Null,
        &settings(json!({"readNodes": true, "pinWindowsBuild": true})),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": format!("{terms}/0/matchExpressions/1"),
         "value": {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}},
        {"op": "add", "path": format!("{terms}/2"),
         "value": {"matchExpressions": [
             {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
             {"key": "kubernetes.io/arch", "operator": "DoesNotExist"},
             {"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"}]}}
    ]));
}

#[test]
fn nodes_without_an_architecture_label_are_read_only_where_the_edit_may_add_terms() {
    let nodes = || amd64_arm64_and_virtual();
    let unlabelled = |calls: &[String]| calls.iter().any(|c| c.contains(" !kubernetes.io/arch,"));
    let template = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "p"}},
                 "template": {"metadata": template["metadata"], "spec": template["spec"]}}});
    // A template under validate (the default): its edit is dropped, nothing more is read.
    for (mode, reads) in [("validate", false), ("mutate", true)] {
        let mut cluster = FixtureCluster::of(nodes());
        let settings = settings(json!({"readNodes": true, "workloadTemplates": mode}));
        let r = run_in_cluster(
            &mut FixtureRegistry::new(),
            &mut cluster,
            "Deployment",
            "CREATE",
            &deployment,
            &Value::Null,
            &settings,
        );
        assert_eq!(
            unlabelled(&cluster.calls),
            reads,
            "{mode}: {:?}",
            cluster.calls
        );
        assert_eq!(
            r.patch
                .as_ref()
                .is_some_and(|p| p.to_string().contains("DoesNotExist")),
            reads,
            "{mode}: {r:?}"
        );
    }
    // A gated Pod's UPDATE: its terms may only narrow (the API server refuses new ones), so it
    // is pinned as before, with no copy and no list more.
    let old = pod(
        &["multi:1"],
        json!({"schedulingGates": [{"name": "example.com/wait"}]}),
    );
    let mut new = old.clone();
    new["spec"]["containers"][0]["image"] = json!("ghcr.io/org/amd64-only:1");
    let mut cluster = FixtureCluster::of(nodes());
    let r = run_pod_update(&mut cluster, "", &new, &old, json!({"readNodes": true}));
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    assert!(!unlabelled(&cluster.calls), "{:?}", cluster.calls);
}
