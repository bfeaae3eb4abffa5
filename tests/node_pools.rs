//! Karpenter's NodePools with `readNodes`: a NodePool that can create nodes of an
//! architecture counts like Nodes of it, for the Pods that tolerate its taints. Each case with
//! the exact patch or message and host calls.

mod common;

use common::*;
use image_arch_affinity::policy::Verdict;
use serde_json::{json, Value};

const MASKS: &str = "status.nodeInfo.architecture,status.nodeInfo.operatingSystem";

fn list(selector: &str) -> String {
    format!("list_resources_all v1/Node {selector} masks {MASKS}")
}

/// Linux nodes of these architectures (as Karpenter's docs recommend, the NodePool names its OS).
fn arch(values: &[&str]) -> Value {
    json!([{"key": "kubernetes.io/arch", "operator": "In", "values": values},
           {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}])
}

/// Two amd64 Linux Nodes and these NodePools.
fn amd64_cluster(pools: Vec<Value>) -> FixtureCluster {
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("amd-2", "linux", "amd64"),
    ]);
    cluster.node_pools = Some(pools);
    cluster
}

/// The calls for an arm64-only Linux Pod in `amd64_cluster` that reads its NodePools: the Nodes
/// of other architectures, the Windows ones, those of arm64, the NodePools.
fn arm64_pod_calls() -> Vec<String> {
    vec![
        list("kubernetes.io/os=linux,kubernetes.io/arch notin (arm64)"),
        list("kubernetes.io/os=windows"),
        list("kubernetes.io/os=linux,kubernetes.io/arch in (arm64)"),
        NODE_POOLS_CALL.to_string(),
    ]
}

#[test]
fn an_arm64_pod_in_an_amd64_cluster_with_an_arm64_node_pool_at_zero_is_pinned() {
    let mut cluster = amd64_cluster(vec![node_pool("graviton", arch(&["arm64"]), json!([]))]);
    let arm = pod(&["ghcr.io/org/arm64-only:1"], json!({}));
    let r = node_aware(&mut cluster, &arm, json!({}));
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    let mut calls = arm64_pod_calls();
    calls.push(list("!kubernetes.io/arch,!beta.kubernetes.io/arch"));
    assert_eq!(cluster.calls, calls);
    // Without Karpenter (its CRDs not installed: the list fails as policy-server's discovery
    // does), the same Pod is refused, as before.
    cluster.node_pools = None;
    let r = node_aware(&mut cluster, &arm, json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's images all run only on arm64, but the cluster's nodes are amd64 \
         (setting readNodes: linux Nodes found of amd64)"
    );
    // A NodePool that is not Ready does not count.
    let mut not_ready = node_pool("graviton", arch(&["arm64"]), json!([]));
    not_ready["status"]["conditions"][2]["status"] = json!("False");
    cluster.node_pools = Some(vec![not_ready]);
    assert!(node_aware(&mut cluster, &arm, json!({}))
        .rejection()
        .starts_with("image-arch-affinity: the Pod's images all run only on arm64"));
}

#[test]
fn a_node_pool_with_no_architecture_requirement_keeps_single_arch_pods_to_their_images() {
    // Karpenter may launch any architecture for a pending Pod: an amd64-only Pod that every Node
    // runs is pinned all the same, so that no arm64 node is created for it.
    let mut cluster = amd64_cluster(vec![node_pool(
        "default",
        json!([{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]),
        json!([]),
    )]);
    let amd = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    let r = node_aware(&mut cluster, &amd, json!({}));
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    // Without it, every Node runs the Pod: unchanged, after the same Node lists.
    cluster.node_pools = None;
    node_aware(&mut cluster, &amd, json!({})).assert_accepted_unchanged();
    assert_eq!(cluster.calls.last().unwrap(), NODE_POOLS_CALL);
    // A NodePool that names no OS may create Windows nodes too (Karpenter picks any instance
    // type the Pod admits): the Pod is pinned to its OS as well. autoscaledArchitectures does not
    // narrow "any architecture" (k8s-judge: Karpenter launched amd64 from such a pool where the
    // setting named ppc64le only).
    cluster.node_pools = Some(vec![node_pool("default", json!([]), json!([]))]);
    let r = node_aware(
        &mut cluster,
        &amd,
        json!({"autoscaledArchitectures": [{"os": "linux", "architectures": ["amd64"]}]}),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        add_required_os(&["amd64"], "linux")
    ]));
}

#[test]
fn a_pod_uses_a_tainted_node_pool_only_when_it_tolerates_the_taint() {
    let taint = json!([{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]);
    let mut cluster = amd64_cluster(vec![node_pool("graviton", arch(&["arm64"]), taint)]);
    let arm = pod(&["ghcr.io/org/arm64-only:1"], json!({}));
    assert_eq!(
        node_aware(&mut cluster, &arm, json!({})).rejection(),
        "image-arch-affinity: the Pod's images all run only on arm64, but the cluster's nodes are amd64 \
         (setting readNodes: linux Nodes found of amd64)"
    );
    // Its own toleration, or the one architectureTolerations gives it on arm64.
    let tolerating = pod(
        &["ghcr.io/org/arm64-only:1"],
        json!({"tolerations": [{"key": "kubernetes.io/arch", "operator": "Exists"}]}),
    );
    let r = node_aware(&mut cluster, &tolerating, json!({}));
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    let tolerations = json!({"architectureTolerations": {"arm64": [arm64_toleration()]}});
    let r = node_aware(&mut cluster, &arm, tolerations);
    r.assert_patch(json!([
        add_annotation("arm64"),
        add_required(&["arm64"]),
        {"op": "add", "path": "/spec/tolerations", "value": [arm64_toleration()]}
    ]));
}

#[test]
fn a_windows_node_pool_makes_the_cluster_one_of_two_operating_systems() {
    let mut cluster = amd64_cluster(vec![node_pool(
        "windows",
        json!([{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
               {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]),
        json!([]),
    )]);
    let r = node_aware(
        &mut cluster,
        &pod(&["ghcr.io/org/amd64-only:1"], json!({})),
        json!({}),
    );
    r.assert_patch(json!([add_required_os(&[], "linux")]));
}

#[test]
fn a_node_pool_list_that_fails_follows_on_lookup_failure() {
    let mut cluster = amd64_cluster(vec![]);
    cluster.failure = Some(
        "Host error: nodepools.karpenter.sh is forbidden: User \"system:serviceaccount:kubewarden:policy-server\" \
         cannot list resource \"nodepools\" in API group \"karpenter.sh\" at the cluster scope"
            .to_string(),
    );
    // The Node lists answer; the NodePool list fails.
    cluster.fail_node_pools_only = true;
    let arm = pod(&["ghcr.io/org/arm64-only:1"], json!({}));
    // ignoreImage: decided as if the NodePools could create nodes of every OS and architecture:
    // pinned to the images' (and the Pod's OS), with a warning (never refused for want of a node
    // a NodePool may create).
    let r = node_aware(&mut cluster, &arm, json!({}));
    r.assert_patch(json!([
        add_annotation("arm64"),
        add_required_os(&["arm64"], "linux")
    ]));
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the cluster's Karpenter NodePools could not be read, so the Pod is decided as if \
          they could create nodes of any OS and architecture: nodepools.karpenter.sh is forbidden: User \
          \"system:serviceaccount:k … arpenter.sh\" at the cluster scope"]
    );
    let r = node_aware(&mut cluster, &arm, json!({"onLookupFailure": "reject"}));
    assert!(r.rejection().starts_with(
        "image-arch-affinity: cannot read the cluster's Karpenter NodePools: nodepools.karpenter.sh is forbidden"
    ));
    // A policy whose contextAwareResources do not list NodePools reads none: as before.
    cluster.failure = Some(
        "Policy has not been granted access to Kubernetes karpenter.sh/v1/NodePool resources. The violation has \
         been reported."
            .to_string(),
    );
    assert!(node_aware(&mut cluster, &arm, json!({}))
        .rejection()
        .starts_with("image-arch-affinity: the Pod's images all run only on arm64"));
}

#[test]
fn multi_arch_images_covering_the_node_pools_need_no_pin() {
    // A multi-arch index (amd64, arm64), amd64 Nodes, a NodePool of amd64 and arm64: every node
    // that exists or may runs it.
    let mut cluster = amd64_cluster(vec![node_pool(
        "mixed",
        arch(&["amd64", "arm64"]),
        json!([]),
    )]);
    let r = node_aware(&mut cluster, &pod(&["multi:1"], json!({})), json!({}));
    r.assert_accepted_unchanged();
    assert_eq!(cluster.calls.len(), 3, "{:?}", cluster.calls);
}

#[test]
fn host_calls_in_a_5000_node_cluster_with_20_node_pools() {
    // 2,500 amd64 and 2,500 arm64 Linux Nodes; 20 NodePools: 18 of amd64 or arm64, one of s390x,
    // one tainted of Windows amd64.
    let nodes: Vec<Value> = (0..5000)
        .map(|i| {
            let arch = if i % 2 == 0 { "amd64" } else { "arm64" };
            node(&format!("n{i}"), "linux", arch)
        })
        .collect();
    let mut pools: Vec<Value> = (0..18)
        .map(|i| {
            let a = if i % 2 == 0 { "amd64" } else { "arm64" };
            node_pool(&format!("p{i}"), arch(&[a]), json!([]))
        })
        .collect();
    pools.push(node_pool("mainframe", arch(&["s390x"]), json!([])));
    pools.push(node_pool(
        "windows",
        json!([{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]),
        json!([{"key": "os", "value": "windows", "effect": "NoSchedule"}]),
    ));
    let mut cluster = FixtureCluster::of(nodes);
    cluster.node_pools = Some(pools);
    let mut reads = |object: &Value| {
        cluster.nodes_read = 0;
        let r = node_aware(&mut cluster, object, json!({}));
        (
            r.decision.verdict,
            cluster.calls.clone(),
            cluster.nodes_read,
        )
    };
    // Images of amd64 and arm64: the s390x NodePool may create nodes they do not run on.
    let (verdict, calls, read) = reads(&pod(&["multi:1"], json!({})));
    assert!(matches!(verdict, Verdict::Mutate(_)));
    assert_eq!(
        calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)"),
            list("kubernetes.io/os=windows"),
            NODE_POOLS_CALL.to_string(),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
    assert_eq!(read, 0);
    // amd64 only: pinned by the Nodes already, but a NodePool of Windows would pin it to Linux
    // too: read (the tainted Windows one does not count for it, so the pin stays the Nodes').
    let amd = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    let (_, calls, read) = reads(&amd);
    assert_eq!((calls.len(), read), (5, 5000));
    assert_eq!(calls[3], NODE_POOLS_CALL);
    node_aware(&mut cluster, &amd, json!({}))
        .assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
}

#[test]
fn a_node_pool_of_an_os_without_nodes_decides_its_architectures() {
    // No Windows Node: the Nodes alone decide a Windows Pod as if its OS had every architecture.
    // A NodePool that names no OS and only ppc64le (a template label) makes Windows ppc64le the
    // only Windows node that may exist: the Pod's windows/amd64 image runs on none (k8s-judge's
    // property found this, judged by Karpenter's code).
    let mut pool = node_pool("power", json!([]), json!([]));
    pool["spec"]["template"]["metadata"] = json!({"labels": {"kubernetes.io/arch": "ppc64le"}});
    let mut cluster = amd64_cluster(vec![pool]);
    let windows = pod(
        &["ghcr.io/org/windows:1"],
        json!({"os": {"name": "windows"}}),
    );
    let r = node_aware(&mut cluster, &windows, json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's images all run only on amd64, but the cluster's nodes are ppc64le \
         (setting readNodes: no windows Node found; Karpenter NodePools can create ppc64le)"
    );
    // Without the NodePool (no Karpenter), accepted as before: kept to Windows (the Linux Nodes),
    // no architecture pinned (none is known for Windows).
    cluster.node_pools = None;
    let r = node_aware(&mut cluster, &windows, json!({}));
    r.assert_patch(json!([add_required_os(&[], "windows")]));
}

/// A NodePool of amd64 tainted as GKE taints arm64 nodes, and no OS requirement.
fn amd64_pool_tainted_for_arm64() -> Value {
    let taint = json!([{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]);
    node_pool(
        "odd",
        json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]),
        taint,
    )
}

/// The toleration of that taint, as architectureTolerations gives it to arm64.
fn arm64_toleration() -> Value {
    json!({"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"})
}

#[test]
fn a_toleration_the_policy_adds_for_one_architecture_opens_a_pool_of_another() {
    // The toleration architectureTolerations gives a Pod pinned to arm64 tolerates the taint
    // on nodes of any architecture: a NodePool tainted so, of amd64 and no OS requirement,
    // may create Windows amd64 nodes for it, so the Pod is kept to Linux too (k8s-judge's
    // property, RAPID_SEED=42, case 1638: Karpenter launched windows/amd64 for it).
    let pool = amd64_pool_tainted_for_arm64();
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
        node("s390x-1", "linux", "s390x"),
    ]);
    cluster.node_pools = Some(vec![pool]);
    let tolerations = json!({"architectureTolerations": {"arm64": [arm64_toleration()]}});
    let r = node_aware(&mut cluster, &pod(&["multi:1"], json!({})), tolerations);
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required_os(&["amd64", "arm64"], "linux"),
        {"op": "add", "path": "/spec/tolerations", "value": [arm64_toleration()]}
    ]));
}

#[test]
fn a_toleration_for_an_architecture_the_cluster_lacks_opens_no_pool() {
    // The policy adds arm64's tolerations only to a Pod it pins to arm64, and it pins to arm64
    // only where the cluster has arm64 nodes: with none, the amd64 NodePool tainted for arm64
    // is not the Pod's, and nothing runs its amd64 and arm64 images (k8s-judge's property,
    // RAPID_SEED=15967515093060533113, case 8384, where the Pod was accepted).
    let pool = amd64_pool_tainted_for_arm64();
    let mut cluster = FixtureCluster::of(vec![
        node("s390x-1", "linux", "s390x"),
        node("ppc64le-1", "linux", "ppc64le"),
    ]);
    cluster.node_pools = Some(vec![pool]);
    let tolerations = json!({"architectureTolerations": {"arm64": [arm64_toleration()]}});
    let r = node_aware(&mut cluster, &pod(&["multi:1"], json!({})), tolerations);
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's images all run only on amd64, arm64, but the cluster's \
         nodes are ppc64le, s390x (setting readNodes: linux Nodes found of ppc64le, s390x)"
    );
}

#[test]
fn a_node_pool_whose_architecture_needs_min_values_counts_only_for_pods_that_admit_that_many() {
    // Karpenter creates a node from a pool whose requirement on the architecture has minValues
    // 2 only for a Pod that admits 2 of its architectures (k8s-judge TestKarpenterMinValues:
    // "minValues requirement is not met"). An arm64-only Pod pinned to arm64 would wait for
    // ever: with amd64 Nodes only, nothing runs it.
    let mut requirements = arch(&["amd64", "arm64"]);
    requirements[0]["minValues"] = json!(2);
    let mut cluster = amd64_cluster(vec![node_pool("both", requirements, json!([]))]);
    let arm = pod(&["ghcr.io/org/arm64-only:1"], json!({}));
    assert_eq!(
        node_aware(&mut cluster, &arm, json!({})).rejection(),
        "image-arch-affinity: the Pod's images all run only on arm64, but the cluster's nodes are amd64 \
         (setting readNodes: linux Nodes found of amd64; Karpenter NodePools of amd64, arm64 serve only \
         Pods that admit, and whose images run on, more of their architectures (minValues on kubernetes.io/arch))"
    );
    // A Pod whose images run on both admits both: the pool serves it, and nothing is pinned.
    let both = pod(&["multi:1"], json!({}));
    node_aware(&mut cluster, &both, json!({})).assert_accepted_unchanged();
    // Without minValues the pool serves the arm64-only Pod, pinned to arm64.
    cluster.node_pools = Some(vec![node_pool(
        "both",
        arch(&["amd64", "arm64"]),
        json!([]),
    )]);
    node_aware(&mut cluster, &arm, json!({}))
        .assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
}

#[test]
fn min_values_count_only_the_architectures_the_pod_itself_admits() {
    // A Pod whose own nodeSelector asks for arm64 admits one of the pool's architectures, whatever
    // its images run on; Karpenter never creates a node for it from a pool of minValues 2.
    let mut requirements = arch(&["amd64", "arm64"]);
    requirements[0]["minValues"] = json!(2);
    let mut cluster = amd64_cluster(vec![node_pool("both", requirements, json!([]))]);
    let arm = pod(
        &["multi:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "arm64"}}),
    );
    assert_eq!(
        node_aware(&mut cluster, &arm, json!({})).rejection(),
        "image-arch-affinity: the Pod's nodeSelector kubernetes.io/arch=arm64 asks for arm64 nodes, but the cluster \
         has none (setting readNodes: linux Nodes found of amd64; Karpenter NodePools of amd64, arm64 serve only \
         Pods that admit, and whose images run on, more of their architectures (minValues on kubernetes.io/arch)); of those, its \
         images run on: amd64"
    );
    // Without the nodeSelector it admits both: the pool serves it, nothing pinned.
    node_aware(&mut cluster, &pod(&["multi:1"], json!({})), json!({})).assert_accepted_unchanged();
}

#[test]
fn a_pod_is_kept_off_the_architectures_of_pools_its_min_values_leave_out() {
    // No Windows Node; one NodePool (no OS requirement) of five architectures with minValues 2
    // on them. Pinned to amd64, a Pod of a windows/amd64 image is never served by it; unpinned,
    // it admits all five and Karpenter may create windows/arm64 for it. Windows has no Node nor
    // pool that serves it: decided as if it had one, and kept to amd64 (k8s-judge's property,
    // RAPID_SEED=5699276388777265051, case 3,825: it was given a Windows term without an
    // architecture, and Karpenter's scheduler launched windows/arm64).
    let requirements = json!([{"key": "kubernetes.io/arch", "operator": "In",
        "values": ["amd64", "arm64", "arm", "ppc64le", "s390x"], "minValues": 2}]);
    let mut cluster = amd64_cluster(vec![node_pool("all", requirements.clone(), json!([]))]);
    let windows = pod(&["ghcr.io/org/windows:1"], json!({}));
    let settings = || json!({"defaultOperatingSystem": "windows"});
    node_aware(&mut cluster, &windows, settings()).assert_patch(json!([
        add_annotation("amd64"),
        add_required_os(&["amd64"], "windows")
    ]));
    // With a Windows Node of amd64 too: the Nodes alone would not cut it.
    let mut with_node = amd64_cluster(vec![node_pool("all", requirements.clone(), json!([]))]);
    with_node.nodes.push(node("win-1", "windows", "amd64"));
    node_aware(&mut with_node, &windows, settings()).assert_patch(json!([
        add_annotation("amd64"),
        add_required_os(&["amd64"], "windows")
    ]));
    // A Pod whose images run on Linux too keeps its Windows term, kept to amd64.
    let both = pod(&["ghcr.io/org/linux-windows-multi:1"], json!({}));
    let r = node_aware(&mut cluster, &both, settings());
    let expected = apply(
        &both,
        &json!([
            {"op": "add", "path": "/metadata/annotations", "value": {
                "image-arch-affinity.kubewarden.io/architectures": "windows/amd64,linux/amd64,linux/arm64"}},
            {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]},
                    {"matchExpressions": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}}}
        ]),
    );
    assert_eq!(
        r.decision.verdict,
        image_arch_affinity::policy::Verdict::Mutate(expected)
    );
    // Without minValues the pool serves it on amd64: the same pin.
    let mut plain = amd64_cluster(vec![node_pool(
        "all",
        json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]),
        json!([]),
    )]);
    node_aware(&mut plain, &windows, settings()).assert_patch(json!([
        add_annotation("amd64"),
        add_required_os(&["amd64"], "windows")
    ]));
}

#[test]
fn a_pod_is_kept_to_its_os_where_another_has_only_pools_its_min_values_leave_out() {
    // Linux Nodes of amd64; a NodePool (no OS requirement) of amd64, arm64 and s390x with
    // minValues 2. A Pod that states no OS, whose images run on linux/amd64, linux/arm64 and
    // windows/amd64: the pool serves it on Linux (two architectures), not on Windows (one). Pinned
    // to amd64 and arm64 without its OS, it admits two of the pool's architectures on Windows
    // too, and Karpenter may create windows/arm64 for it: it is kept to Linux (k8s-judge's
    // property, RAPID_SEED=2026112701, case 5,884).
    let requirements = json!([{"key": "kubernetes.io/arch", "operator": "In",
        "values": ["amd64", "arm64", "s390x"], "minValues": 2}]);
    let mut cluster = amd64_cluster(vec![node_pool("pool", requirements, json!([]))]);
    let both = pod(&["ghcr.io/org/linux-windows-multi:1"], json!({}));
    node_aware(&mut cluster, &both, json!({})).assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required_os(&["amd64", "arm64"], "linux")
    ]));
}

#[test]
fn a_pod_whose_images_run_anywhere_refused_by_its_own_os_reads_the_node_pools_for_the_others() {
    // Found by tests/scheduling.rs (`node_aware_templates_decide_as_the_cluster_architectures`,
    // SCHEDULING_SEED=1795835996774906726 with SCHEDULING_CASES=300000): a Pod of WebAssembly
    // images, a Windows Pod by defaultOperatingSystem, its terms admitting Linux nodes or arm;
    // Windows and Linux Nodes of s390x; a NodePool of amd64 for any OS. Its own OS refuses it on
    // the Nodes, so Linux decides it, where the NodePool adds amd64 and so amd64's tolerations.
    // With every architecture its own OS would accept it (arm): that hypothesis did not bound
    // the NodePools' decision, yet the two agreed, and the NodePools were never read.
    let object = pod(
        &["ghcr.io/org/wasm-index:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
                {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm"]}]}]}}}}),
    );
    let mut cluster = FixtureCluster::of(vec![
        node("win-s390x", "windows", "s390x"),
        node("linux-s390x", "linux", "s390x"),
    ]);
    cluster.node_pools = Some(vec![node_pool(
        "amd64",
        json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]),
        json!([]),
    )]);
    let run = node_aware(
        &mut cluster,
        &object,
        json!({
            "defaultOperatingSystem": "windows",
            "architectureTolerations": {"amd64": [
                {"key": "pool", "operator": "Equal", "value": "x86", "effect": "NoSchedule"}]},
        }),
    );
    run.assert_patch(json!([{"op": "add", "path": "/spec/tolerations", "value": [
        {"key": "pool", "operator": "Equal", "value": "x86", "effect": "NoSchedule"}]}]));
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=windows,kubernetes.io/arch notin (amd64,arm64,ppc64le,s390x)"),
            list("kubernetes.io/os=windows,kubernetes.io/arch in (amd64,arm64,ppc64le,s390x)"),
            list("kubernetes.io/os=linux"),
            NODE_POOLS_CALL.to_string(),
        ]
    );
}

#[test]
fn a_pod_whose_images_run_anywhere_is_decided_for_another_os_where_its_own_refuses_it() {
    // Found by k8s-judge (RAPID_SEED=18052084633831528540, case 2,077): a Pod of
    // WebAssembly images only, stating no OS, whose required term admits ppc64le alone, was
    // refused in a cluster of amd64 Linux Nodes, though a Windows NodePool of any architecture
    // can create a node that runs it. Its images run on any OS: where its own OS refuses it, the
    // others decide, and it is accepted unchanged (no OS pin: it runs on any).
    let mut registry = FixtureRegistry::new();
    let ppc64le_only = pod(
        &["ghcr.io/org/wasm-index:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["ppc64le"]}]}]}}}}),
    );
    let windows_pool = || {
        node_pool(
            "win",
            json!([{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]),
            json!([]),
        )
    };
    let decide = |cluster: &mut FixtureCluster, registry: &mut FixtureRegistry, object: &Value| {
        run_in_cluster(
            registry,
            cluster,
            "Pod",
            "CREATE",
            object,
            &Value::Null,
            &settings(json!({"readNodes": true})),
        )
    };
    let mut cluster = amd64_cluster(vec![windows_pool()]);
    decide(&mut cluster, &mut registry, &ppc64le_only).assert_accepted_unchanged();
    // The Windows Nodes are read only because its own OS refused it.
    assert_eq!(
        cluster.calls,
        [
            list("kubernetes.io/os=linux,kubernetes.io/arch in (amd64,arm64,ppc64le,s390x)"),
            list("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64,ppc64le,s390x)"),
            list("kubernetes.io/os=windows"),
            NODE_POOLS_CALL.to_string(),
        ]
    );
    // Where the Windows pool cannot create ppc64le either, the refusal names its own OS's
    // Nodes, as before.
    let mut cluster = amd64_cluster(vec![node_pool(
        "win",
        json!([{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
               {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]),
        json!([]),
    )]);
    assert_eq!(
        decide(&mut cluster, &mut registry, &ppc64le_only).rejection(),
        "image-arch-affinity: every required node affinity term of the Pod excludes the \
         architectures its images run on that the cluster has nodes of (amd64): term 0 admits \
         ppc64le. The cluster has no ppc64le nodes (setting readNodes: linux Nodes found of amd64)"
    );
    // A Pod that names its OS in spec.os is not run by the kubelet of another: still refused.
    let mut linux_only = ppc64le_only.clone();
    linux_only["spec"]["os"] = json!({"name": "linux"});
    let mut cluster = amd64_cluster(vec![windows_pool()]);
    assert!(decide(&mut cluster, &mut registry, &linux_only)
        .rejection()
        .starts_with("image-arch-affinity: every required node affinity term of the Pod"));
    // A Pod its own OS accepts reads no Windows Node for it, and is left unchanged: also one
    // whose term some of the clusters the first Node list allows would refuse it in (review).
    let not_arm64 = pod(
        &["ghcr.io/org/wasm-index:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["arm64"]}]}]}}}}),
    );
    for accepted in [pod(&["ghcr.io/org/wasm-index:1"], json!({})), not_arm64] {
        let mut cluster = amd64_cluster(vec![windows_pool()]);
        decide(&mut cluster, &mut registry, &accepted).assert_accepted_unchanged();
        assert!(
            !cluster.calls.contains(&list("kubernetes.io/os=windows")),
            "{:?}",
            cluster.calls
        );
    }
    // An image whose lookup failed (`ignoreImage`) may run on its own OS alone: the Pod is not
    // decided for another OS on the WebAssembly image's word.
    registry.fail("ghcr.io/org/private:1", "manifest unknown");
    let mut with_failed = pod(
        &["ghcr.io/org/wasm-index:1", "ghcr.io/org/private:1"],
        json!({}),
    );
    with_failed["spec"]["affinity"] = ppc64le_only["spec"]["affinity"].clone();
    let mut cluster = amd64_cluster(vec![windows_pool()]);
    assert!(decide(&mut cluster, &mut registry, &with_failed)
        .rejection()
        .starts_with("image-arch-affinity: every required node affinity term of the Pod"));
}

#[test]
fn a_pool_counts_only_the_architectures_the_pod_admits_on_nodes_with_the_beta_labels() {
    // The kubelet of a node a NodePool creates sets `beta.kubernetes.io/arch` (and Karpenter's
    // scheduler reads that key as `kubernetes.io/arch`): a Pod that admits arm64 only on nodes
    // without it is served by no arm64 node of the pool (k8s-judge: Karpenter launched nothing
    // for such a Pod the policy had pinned to the pool's architecture).
    let mut cluster = amd64_cluster(vec![node_pool("graviton", arch(&["arm64"]), json!([]))]);
    let beta = |operator: &str, values: &[&str]| {
        let mut expression = json!({"key": "beta.kubernetes.io/arch", "operator": operator});
        if !values.is_empty() {
            expression["values"] = json!(values);
        }
        pod(
            &["ghcr.io/org/arm64-only:1"],
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expression]}]}}}}),
        )
    };
    for operator in ["DoesNotExist", "NotIn"] {
        let r = node_aware(&mut cluster, &beta(operator, &["arm64"]), json!({}));
        assert_eq!(
            r.rejection(),
            "image-arch-affinity: the Pod's images all run only on arm64, but the cluster's nodes are amd64 \
             (setting readNodes: linux Nodes found of amd64; Karpenter NodePools can create arm64 nodes too, \
             but with the label beta.kubernetes.io/arch, and the Pod admits those architectures only on \
             nodes without it)",
            "{operator}"
        );
        assert_eq!(cluster.calls, arm64_pod_calls());
        cluster.calls.clear();
    }
    // Without a Linux Node, the pool still says the OS has nodes, none of them the Pod's: refused
    // (not decided as if the OS had none, which would pin it to arm64).
    let mut pools_only = FixtureCluster::of(vec![]);
    pools_only.node_pools = cluster.node_pools.clone();
    let r = node_aware(&mut pools_only, &beta("DoesNotExist", &[]), json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's images all run only on arm64, but the cluster has no node the Pod \
         may run on (setting readNodes: no linux Node found; Karpenter NodePools can create arm64 nodes \
         too, but with the label beta.kubernetes.io/arch, and the Pod admits those architectures only on \
         nodes without it)"
    );
    // Where it admits arm64 on nodes with the label, the pool serves it.
    let r = node_aware(&mut cluster, &beta("NotIn", &["s390x"]), json!({}));
    r.assert_patch(json!([add_annotation("arm64"), {"op": "add",
        "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1",
        "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}}]));
}

#[test]
fn min_values_count_the_architectures_the_pod_admits_on_nodes_with_the_beta_labels() {
    // A pool of minValues 2 on amd64 and arm64, an s390x Node, images of amd64 and arm64; the
    // Pod's first term asks for arm64, its second admits only nodes without
    // `beta.kubernetes.io/arch`. On the pool's nodes (their kubelet sets it) no term admits two
    // of its architectures: Karpenter (which relaxes the terms one at a time and reads the beta
    // key as the stable one) creates nothing for it, pinned to arm64 or not. Refused; it was
    // pinned to arm64, counted on nodes without the beta labels.
    let mut requirements = arch(&["amd64", "arm64"]);
    requirements[0]["minValues"] = json!(2);
    let mut cluster = FixtureCluster::of(vec![node("z-1", "linux", "s390x")]);
    cluster.node_pools = Some(vec![node_pool("both", requirements, json!([]))]);
    let terms = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]},
            {"matchExpressions": [{"key": "beta.kubernetes.io/arch", "operator": "DoesNotExist"}]}]}}}});
    let r = node_aware(&mut cluster, &pod(&["multi:1"], terms), json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod's images all run only on amd64, arm64, but the cluster's nodes are s390x \
         (setting readNodes: linux Nodes found of s390x; Karpenter NodePools of amd64, arm64 serve only Pods \
         that admit, and whose images run on, more of their architectures (minValues on kubernetes.io/arch))"
    );
}

#[test]
fn a_pod_karpenter_ignores_is_served_by_no_node_pool() {
    // Karpenter's provisioner ignores a Pod with matchFields, or a requirement on
    // kubernetes.io/hostname (Provisioner.Validate): an arm64 NodePool creates no node for it,
    // so an arm64-only Pod that no Node runs is refused, naming why (k8s-judge's control plane,
    // karpenter.Env.Places: such Pods stayed Pending).
    let mut cluster = amd64_cluster(vec![node_pool("graviton", arch(&["arm64"]), json!([]))]);
    let names = |expression: Value| {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [expression]}}}})
    };
    let fields = names(json!({"matchFields": [
        {"key": "metadata.name", "operator": "NotIn", "values": ["amd-1"]}]}));
    let hostname = json!({"nodeSelector": {"kubernetes.io/hostname": "arm-1"}});
    for (spec, reason) in [
        (fields, "a required node affinity term with matchFields"),
        (
            hostname,
            "a requirement on kubernetes.io/hostname or a karpenter.sh label, or a value it refuses",
        ),
    ] {
        let arm = pod(&["ghcr.io/org/arm64-only:1"], spec);
        let r = node_aware(&mut cluster, &arm, json!({}));
        assert_eq!(
            r.rejection(),
            format!(
                "image-arch-affinity: the Pod's images all run only on arm64, but the cluster's nodes are amd64 \
                 (setting readNodes: linux Nodes found of amd64; Karpenter NodePools can create arm64 nodes, \
                 but none for this Pod: Karpenter's provisioner ignores a Pod with {reason})"
            )
        );
    }
    // So is a Pod that prefers most to avoid Karpenter's nodes, or asks for a capacity type no
    // cloud offers (Karpenter reads its heaviest preference as a requirement, and checks the
    // capacity type's values).
    let avoiding = json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
        {"weight": 90, "preference": {"matchExpressions": [
            {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]}}]}}});
    let capacity = json!({"nodeSelector": {"karpenter.sh/capacity-type": "cheap"}});
    for spec in [avoiding, capacity] {
        let arm = pod(&["ghcr.io/org/arm64-only:1"], spec);
        assert!(node_aware(&mut cluster, &arm, json!({}))
            .rejection()
            .contains("but none for this Pod: Karpenter's provisioner ignores a Pod with"));
    }
    // Accepted with a warning under onNoCommonArchitecture: accept, cut to a warning's length.
    let arm = pod(
        &["ghcr.io/org/arm64-only:1"],
        json!({"nodeSelector": {"kubernetes.io/hostname": "arm-1"}}),
    );
    let r = node_aware(
        &mut cluster,
        &arm,
        json!({"onNoCommonArchitecture": "accept"}),
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the Pod's images all run only on arm64, but the cluster's nodes are amd64 (setting \
          readNodes: linux Nodes found of amd64; Karpenter  … ue it refuses) (accepted without an architecture \
          constraint: setting onNoCommonArchitecture: accept)"]
    );
    // A DaemonSet's Pods go to every Node its template admits, those the pool creates for other
    // Pods included (Karpenter creates none for them): the pool counts, as before.
    let template = pod(
        &["ghcr.io/org/arm64-only:1"],
        json!({"nodeSelector": {"kubernetes.io/hostname": "arm-1"}}),
    );
    node_aware_daemon_set(&mut cluster, &template).assert_accepted_unchanged();
    // Karpenter's well-known labels of its domain are read: the pool serves the Pod.
    let selected = pod(
        &["ghcr.io/org/arm64-only:1"],
        json!({"nodeSelector": {"karpenter.sh/capacity-type": "spot"}}),
    );
    node_aware(&mut cluster, &selected, json!({}))
        .assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    // Its images run on amd64 too: pinned to amd64, off the nodes the pool creates for other
    // Pods, which the scheduler may give it.
    let multi = pod(
        &["ghcr.io/org/amd64-only:1"],
        json!({"nodeSelector": {"kubernetes.io/hostname": "amd-1"}}),
    );
    node_aware(&mut cluster, &multi, json!({})).assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}}}
    ]));
}
