//! Clusters of several operating systems (setting `clusterOperatingSystems`, or the Nodes read
//! with `readNodes`): the Pod is kept to Nodes of its own OS as well as to its images'
//! architectures, with the fewest expressions.

mod common;
use common::*;
use serde_json::{json, Value};

/// A cluster of amd64 and arm64 nodes, of Linux and Windows.
fn mixed_settings(extra: Value) -> Value {
    let mut settings = json!({"clusterOperatingSystems": ["linux", "windows"],
        "schedulableArchitectures": ["amd64", "arm64"]});
    for (key, value) in extra.as_object().unwrap() {
        settings[key] = value.clone();
    }
    settings
}

fn terms(run: &Run) -> Value {
    match &run.decision.verdict {
        image_arch_affinity::policy::Verdict::Mutate(pod) => pod["spec"]["affinity"]
            ["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            .clone(),
        other => panic!("not mutated: {other:?}"),
    }
}

#[test]
fn a_linux_pod_in_a_cluster_of_linux_and_windows_nodes_is_pinned_to_linux_and_its_architectures() {
    let r = run(
        &pod(&["ghcr.io/org/amd64-only:1"], json!({})),
        mixed_settings(json!({})),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        add_required_os(&["amd64"], "linux")
    ]));
    // Multi-arch images: the OS alone, and no annotation (no architecture pinned).
    let r = run(&pod(&["multi:1"], json!({})), mixed_settings(json!({})));
    r.assert_patch(json!([add_required_os(&[], "linux")]));
    // A cluster of one OS: nothing for the multi-arch Pod, the architecture alone otherwise.
    let one = json!({"schedulableArchitectures": ["amd64", "arm64"]});
    run(&pod(&["multi:1"], json!({})), one.clone()).assert_accepted_unchanged();
    let one = json!({"clusterOperatingSystems": ["linux"], "schedulableArchitectures": ["amd64", "arm64"]});
    run(&pod(&["multi:1"], json!({})), one.clone()).assert_accepted_unchanged();
    run(&pod(&["ghcr.io/org/amd64-only:1"], json!({})), one)
        .assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
}

#[test]
fn a_windows_pod_stating_its_os_in_spec_os_only_is_pinned_to_windows() {
    // spec.os is checked by the API server and the kubelet, never by the scheduler.
    let r = run(
        &pod(
            &["ghcr.io/org/windows:1"],
            json!({"os": {"name": "windows"}}),
        ),
        mixed_settings(json!({})),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        add_required_os(&["amd64"], "windows")
    ]));
    // With a nodeSelector on kubernetes.io/os (or its beta label), the architecture alone.
    for key in ["kubernetes.io/os", "beta.kubernetes.io/os"] {
        let r = run(
            &pod(
                &["ghcr.io/org/windows:1"],
                json!({"os": {"name": "windows"}, "nodeSelector": {key: "windows"}}),
            ),
            mixed_settings(json!({})),
        );
        r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    }
}

#[test]
fn only_the_terms_that_admit_nodes_of_another_os_get_the_os_expression() {
    // Term 0 already asks for Linux; term 1 does not; term 2 is empty (it matches nothing).
    let required = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        {}]}});
    let r = run(
        &pod(
            &["ghcr.io/org/amd64-only:1"],
            json!({"affinity": {"nodeAffinity": required}}),
        ),
        mixed_settings(json!({})),
    );
    assert_eq!(
        terms(&r),
        json!([
            {"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]},
            {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
            {}])
    );
    // `NotIn [windows]` keeps a term off Windows Nodes as well: nothing added there.
    let not_windows = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "NotIn", "values": ["windows"]}]}]}});
    let r = run(
        &pod(
            &["multi:1"],
            json!({"affinity": {"nodeAffinity": not_windows}}),
        ),
        mixed_settings(json!({})),
    );
    r.assert_accepted_unchanged();
    // The OS expression follows the architecture and the matchNodeLabels ones.
    let mut labelled = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    labelled["metadata"]["labels"]["team"] = json!("blue");
    let r = run(
        &labelled,
        mixed_settings(json!({"matchNodeLabels": ["team"]})),
    );
    assert_eq!(
        terms(&r),
        json!([{"matchExpressions": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "team", "operator": "In", "values": ["blue"]},
            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}])
    );
}

#[test]
fn refusals_and_images_that_run_anywhere_are_as_in_a_cluster_of_one_os() {
    // The Pod asks for arm64 that its images do not run on: the same refusal either way.
    let asks_arm = pod(
        &["ghcr.io/org/amd64-only:1"],
        json!({"nodeSelector": {"kubernetes.io/arch": "arm64"}}),
    );
    assert_eq!(
        run(&asks_arm, mixed_settings(json!({}))).rejection(),
        run(&asks_arm, json!({})).rejection()
    );
    // A bound Pod (checked against its node with readNodes only): unchanged.
    run(
        &pod(&["ghcr.io/org/amd64-only:1"], json!({"nodeName": "n1"})),
        mixed_settings(json!({})),
    )
    .assert_accepted_unchanged();
    // A WebAssembly image (run by a shim on any node): no OS is pinned either.
    let mut registry = FixtureRegistry::new();
    run_with(
        &mut registry,
        &pod(&["ghcr.io/org/wasm-index:1"], json!({})),
        &settings(mixed_settings(json!({}))),
    )
    .assert_accepted_unchanged();
    // Unless the Pod names its OS in spec.os, which the kubelet checks: kept to it, the OS alone.
    run_with(
        &mut registry,
        &pod(
            &["ghcr.io/org/wasm-index:1"],
            json!({"os": {"name": "linux"}}),
        ),
        &settings(mixed_settings(json!({}))),
    )
    .assert_patch(json!([add_required_os(&[], "linux")]));
}

#[test]
fn a_pod_of_an_os_cluster_operating_systems_does_not_list_is_refused_before_any_lookup() {
    // No node runs it: refused before any lookup, not pinned to its OS to wait for ever.
    let linux_only = json!({"clusterOperatingSystems": ["linux"]});
    let windows_pod = pod(
        &["ghcr.io/org/windows:1"],
        json!({"os": {"name": "windows"}}),
    );
    let r = run(&windows_pod, linux_only.clone());
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod runs only on windows nodes, but the cluster's nodes are of linux (setting clusterOperatingSystems)"
    );
    assert_eq!(r.calls, Vec::<String>::new());
    // Its required terms (or nodeSelector) choose the OS just as well.
    let by_terms = pod(
        &["ghcr.io/org/windows:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]}}}}),
    );
    assert_eq!(
        run(&by_terms, linux_only.clone()).rejection(),
        r.rejection()
    );
    // onNoCommonArchitecture: accept: accepted unchanged, with the reason as a warning.
    let r = run(
        &windows_pod,
        json!({"clusterOperatingSystems": ["linux"], "onNoCommonArchitecture": "accept"}),
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.decision.warnings, vec!["image-arch-affinity: the Pod runs only on windows nodes, but the cluster's nodes are of linux (setting clusterOperatingSystems) (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)".to_string()]);
    // Without the list, the cluster is taken to have the Pod's own OS: pinned as before.
    run(
        &windows_pod,
        json!({"schedulableArchitectures": ["amd64", "arm64"]}),
    )
    .assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
}

#[test]
fn a_template_under_mutate_is_pinned_like_a_pod() {
    let template = pod(&["ghcr.io/org/amd64-only:1"], json!({}));
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"template": {"metadata": template["metadata"], "spec": template["spec"]}}});
    let r = run_in_cluster(
        &mut FixtureRegistry::new(),
        &mut FixtureCluster::of(Vec::new()),
        "Deployment",
        "CREATE",
        &deployment,
        &Value::Null,
        &settings(mixed_settings(json!({"workloadTemplates": "mutate"}))),
    );
    let patch = r.patch.expect("a patch");
    assert_eq!(
        patch[1]["value"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
        json!({"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]})
    );
    assert_eq!(patch[1]["path"], "/spec/template/spec/affinity");
}

#[test]
fn with_read_nodes_other_os_nodes_that_cannot_be_read_follow_on_lookup_failure() {
    // The Linux Nodes are read (first call); the Windows list fails.
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("win-1", "windows", "amd64"),
    ]);
    cluster.failure = Some(
        "Host error: error invoking host capability kubernetes.list_resources_all: connection refused"
            .to_string(),
    );
    cluster.fail_from = Some(1);
    let multi = pod(&["multi:1"], json!({}));
    let node_aware = |cluster: &mut FixtureCluster, extra: Value| {
        let mut settings_json = extra;
        settings_json["readNodes"] = json!(true);
        cluster.calls.clear();
        run_in_cluster(
            &mut FixtureRegistry::new(),
            cluster,
            "Pod",
            "CREATE",
            &multi,
            &Value::Null,
            &settings(settings_json),
        )
    };
    // ignoreImage: pinned to its OS, with a warning; the NodePool list fails too, so it is
    // decided as if pools could create nodes of every architecture (pinned to the images').
    let r = node_aware(&mut cluster, json!({}));
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required_os(&["amd64", "arm64"], "linux")
    ]));
    assert_eq!(
        r.decision.warnings,
        [
            "image-arch-affinity: the cluster's windows Nodes could not be read, so the Pod is pinned to its OS \
          (linux) as in a cluster of several: error invoking host capability kubernetes.list_resources_all: \
          connection refused",
            "image-arch-affinity: the cluster's Karpenter NodePools could not be read, so the Pod is decided as \
          if they could create nodes of any OS and architecture: error invoking host capability \
          kubernetes.list_resources_all: connection refused"
        ]
    );
    let r = node_aware(&mut cluster, json!({"onLookupFailure": "accept"}));
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the Pod was not pinned because the cluster's windows Nodes could not be read: \
          error invoking host capability kubernetes.list_resources_all: connection refused"]
    );
    let r = node_aware(&mut cluster, json!({"onLookupFailure": "reject"}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot read the cluster's windows Nodes: error invoking host capability \
         kubernetes.list_resources_all: connection refused (setting onLookupFailure: reject)"
    );
    // An autoscaled Windows pool says the cluster has Windows Nodes: no Windows list (the
    // NodePool list, which a cluster without Karpenter answers with not found, is read last).
    cluster.failure = None;
    let r = node_aware(
        &mut cluster,
        json!({"autoscaledArchitectures": [{"os": "windows", "architectures": ["amd64"]}]}),
    );
    r.assert_patch(json!([add_required_os(&[], "linux")]));
    assert_eq!(cluster.calls.len(), 3);
    assert_eq!(cluster.calls[1], NODE_POOLS_CALL);
}

#[test]
fn a_daemon_set_under_validate_is_warned_about_the_nodes_of_the_other_os() {
    let template = pod(&["multi:1"], json!({}));
    let daemon_set = |spec: Value| {
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "d", "namespace": "default"},
            "spec": {"template": {"metadata": template["metadata"], "spec": spec}}})
    };
    let evaluate = |object: &Value| {
        run_in_cluster(
            &mut FixtureRegistry::new(),
            &mut FixtureCluster::of(Vec::new()),
            "DaemonSet",
            "CREATE",
            object,
            &Value::Null,
            &settings(mixed_settings(json!({}))),
        )
    };
    let r = evaluate(&daemon_set(template["spec"].clone()));
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: this DaemonSet runs linux images, and the cluster has windows nodes its template \
          admits: its Pods will fail there. Add a nodeSelector kubernetes.io/os: linux, or set daemonSetTemplates: mutate"]
    );
    // With the nodeSelector it advises: no warning.
    let mut spec = template["spec"].clone();
    spec["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    let r = evaluate(&daemon_set(spec));
    r.assert_accepted_unchanged();
    assert_eq!(r.decision.warnings, Vec::<String>::new());
    // Nor where the only term that admits a Windows node asks for ppc64le, which the cluster has
    // no node of (tests/scheduling.rs, SCHEDULING_SEED=1795830280422484177: it was warned).
    let mut spec = template["spec"].clone();
    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["ppc64le"]}]}]}}});
    let r = evaluate(&daemon_set(spec));
    r.assert_accepted_unchanged();
    assert_eq!(r.decision.warnings, Vec::<String>::new());
}

#[test]
fn a_failed_other_os_read_keeps_the_warnings_gathered_before_it() {
    // An index entry no node reports (a warning), then the Windows list fails (accept).
    let mut cluster = FixtureCluster::of(vec![node("amd-1", "linux", "amd64")]);
    cluster.failure = Some("Host error: connection refused".to_string());
    cluster.fail_from = Some(1);
    let mut registry = FixtureRegistry::new();
    registry.index(
        "ghcr.io/org/odd:1",
        r#"{"schemaVersion":2,"manifests":[{"platform":{"os":"linux","architecture":"amd64"}},{"platform":{"os":"linux","architecture":"x y"}}]}"#,
    );
    let r = run_in_cluster(
        &mut registry,
        &mut cluster,
        "Pod",
        "CREATE",
        &pod(&["ghcr.io/org/odd:1"], json!({})),
        &Value::Null,
        &settings(json!({"readNodes": true, "onLookupFailure": "accept"})),
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.decision.warnings.len(), 2, "{:?}", r.decision.warnings);
    assert!(
        r.decision.warnings[0].contains("\"x y\""),
        "{:?}",
        r.decision.warnings
    );
    assert_eq!(
        r.decision.warnings[1],
        "image-arch-affinity: the Pod was not pinned because the cluster's windows Nodes could not be read: connection refused"
    );
}

/// `ghcr.io/org/linux-windows-multi:1`: linux/amd64, linux/arm64 and windows/amd64 in one index.
const LINUX_AND_WINDOWS: &str = "ghcr.io/org/linux-windows-multi:1";

#[test]
fn images_built_for_linux_and_windows_keep_both_oses_each_with_its_architectures() {
    // A Pod that states no OS: one term per OS, each with the architectures of that OS
    // (Linux's are all the cluster's, so the OS alone); the annotation names the platforms
    // of the OSes whose architectures were pinned.
    let r = run(
        &pod(&[LINUX_AND_WINDOWS], json!({})),
        mixed_settings(json!({})),
    );
    r.assert_patch(json!([
        add_annotation("windows/amd64"),
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
                {"matchExpressions": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]}}}}
    ]));
    // Each OS with the same architectures (a cluster of amd64 and s390x nodes): no OS to tell
    // apart, the architecture alone, and the annotation names both platforms.
    let amd64 = json!({"clusterOperatingSystems": ["linux", "windows"], "schedulableArchitectures": ["amd64", "s390x"]});
    run(&pod(&[LINUX_AND_WINDOWS], json!({})), amd64).assert_patch(json!([
        add_annotation("linux/amd64,windows/amd64"),
        add_required(&["amd64"])
    ]));
    // Every node runs them (amd64 nodes only): nothing to pin.
    let amd64 = json!({"clusterOperatingSystems": ["linux", "windows"], "schedulableArchitectures": ["amd64"]});
    run(&pod(&[LINUX_AND_WINDOWS], json!({})), amd64).assert_accepted_unchanged();
    // A Pod that chooses its OS keeps to it.
    let r = run(
        &pod(&[LINUX_AND_WINDOWS], json!({"os": {"name": "linux"}})),
        mixed_settings(json!({})),
    );
    r.assert_patch(json!([add_required_os(&[], "linux")]));
    let r = run(
        &pod(
            &[LINUX_AND_WINDOWS],
            json!({"nodeSelector": {"kubernetes.io/os": "windows"}}),
        ),
        mixed_settings(json!({})),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    // A cluster of one OS: as before.
    let one = json!({"schedulableArchitectures": ["amd64", "arm64"]});
    run(&pod(&[LINUX_AND_WINDOWS], json!({})), one).assert_accepted_unchanged();
}

#[test]
fn the_copies_for_another_os_follow_the_terms_the_pod_wrote() {
    // Term 0 admits any node of zone a; term 1 only Windows nodes; term 2 is empty.
    let required = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
            {"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["s390x"]}]},
        {}]}});
    let r = run(
        &pod(
            &[LINUX_AND_WINDOWS],
            json!({"affinity": {"nodeAffinity": required}}),
        ),
        mixed_settings(json!({})),
    );
    assert_eq!(
        terms(&r),
        json!([
            {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a"]},
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
            {"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
                {"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["s390x"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]},
            {},
            {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}])
    );
    // Run again, the result is accepted as it is.
    let again = pod(
        &[LINUX_AND_WINDOWS],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms(&r)}}}}),
    );
    run(&again, mixed_settings(json!({}))).assert_accepted_unchanged();
}

#[test]
fn a_pod_whose_images_run_only_on_another_os_than_its_default_goes_there() {
    // defaultOperatingSystem windows; the nodeSelector admits arm64 nodes only, where the image
    // has a Linux build alone: the Pod goes to Linux (its architecture needs no pin).
    let settings = mixed_settings(json!({"defaultOperatingSystem": "windows"}));
    let arm64 = json!({"nodeSelector": {"kubernetes.io/arch": "arm64"}});
    let r = run(&pod(&[LINUX_AND_WINDOWS], arm64.clone()), settings.clone());
    r.assert_patch(json!([add_required_os(&[], "linux")]));
    // An image with no Windows build at all: the same.
    let r = run(
        &pod(&["ghcr.io/org/amd64-only:1"], json!({})),
        settings.clone(),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        add_required_os(&["amd64"], "linux")
    ]));
    // No OS runs it: the refusal for the Pod's own OS.
    let r = run(&pod(&["ghcr.io/org/amd64-only:1"], arm64), settings);
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: no windows node architecture runs every image of this Pod: \"ghcr.io/org/amd64-only:1\" \
         has no windows build (only linux/amd64). Use images built for a common architecture"
    );
}

#[test]
fn with_read_nodes_the_other_os_nodes_are_read_in_one_list() {
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
        node("win-1", "windows", "amd64"),
        node("win-2", "windows", "arm64"),
    ]);
    let r = run_in_cluster(
        &mut FixtureRegistry::new(),
        &mut cluster,
        "Pod",
        "CREATE",
        &pod(&[LINUX_AND_WINDOWS], json!({})),
        &Value::Null,
        &settings(json!({"readNodes": true})),
    );
    assert_eq!(
        terms(&r),
        json!([
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
            {"matchExpressions": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}])
    );
    assert_eq!(cluster.calls.len(), 4, "{:?}", cluster.calls);
    assert_eq!(cluster.calls[2], NODE_POOLS_CALL);
    assert!(
        cluster.calls[1].contains(" kubernetes.io/os=windows "),
        "{:?}",
        cluster.calls
    );
    // Without the Windows arm64 Node, every Node runs the images: nothing to pin.
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
        node("win-1", "windows", "amd64"),
    ]);
    let r = run_in_cluster(
        &mut FixtureRegistry::new(),
        &mut cluster,
        "Pod",
        "CREATE",
        &pod(&[LINUX_AND_WINDOWS], json!({})),
        &Value::Null,
        &settings(json!({"readNodes": true})),
    );
    r.assert_accepted_unchanged();
    assert_eq!(cluster.calls.len(), 3, "{:?}", cluster.calls);
}

#[test]
fn a_daemon_set_under_validate_is_warned_per_os_where_its_images_run_on_several() {
    let template = pod(&[LINUX_AND_WINDOWS], json!({}));
    let object = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"template": {"metadata": template["metadata"], "spec": template["spec"]}}});
    let r = run_in_cluster(
        &mut FixtureRegistry::new(),
        &mut FixtureCluster::of(Vec::new()),
        "DaemonSet",
        "CREATE",
        &object,
        &Value::Null,
        &settings(mixed_settings(json!({}))),
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: this DaemonSet's images run only on windows on amd64: its Pods will fail on the \
          windows arm64 nodes. Add a required node affinity on kubernetes.io/arch, or set daemonSetTemplates: mutate"]
    );
}

#[test]
fn an_image_platforms_entry_is_of_default_operating_system_unless_it_lists_its_own() {
    // An entry names architectures of defaultOperatingSystem: in a cluster of Linux and Windows
    // nodes, a Pod that states no OS is kept to Linux as well as to amd64 (not put on the
    // untainted Windows amd64 nodes).
    let legacy = json!({"imagePlatforms": [
        {"image": "registry.example.com/legacy/*", "architectures": ["amd64"]}]});
    let r = run(
        &pod(&["registry.example.com/legacy/app:3"], json!({})),
        mixed_settings(legacy),
    );
    assert!(r.calls.is_empty(), "{:?}", r.calls);
    r.assert_patch(json!([
        add_annotation("amd64"),
        add_required_os(&["amd64"], "linux")
    ]));
    // `operatingSystems` says which: a Windows entry keeps a Pod of no stated OS to Windows.
    let windows = json!({"imagePlatforms": [{"image": "registry.example.com/legacy/*",
        "architectures": ["amd64"], "operatingSystems": ["windows"]}]});
    let r = run(
        &pod(&["registry.example.com/legacy/app:3"], json!({})),
        mixed_settings(windows),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        add_required_os(&["amd64"], "windows")
    ]));
    // Both: an image of both OSes, as an index of both (a term per OS).
    let both = json!({"imagePlatforms": [{"image": "registry.example.com/legacy/*",
        "architectures": ["arm64"], "operatingSystems": ["linux", "windows"]}]});
    let r = run(
        &pod(&["registry.example.com/legacy/app:3"], json!({})),
        mixed_settings(both),
    );
    r.assert_patch(json!([
        add_annotation("linux/arm64,windows/arm64"),
        add_required(&["arm64"])
    ]));
}
