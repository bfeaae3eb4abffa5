//! Windows OS builds (setting `pinWindowsBuild`): pinned from the images' `os.version`, and
//! checked against a bound Pod's Windows node.

mod common;
use common::*;
use serde_json::{json, Value};

fn windows_index(builds: &[(&str, &str)]) -> String {
    let entries: Vec<Value> = builds
        .iter()
        .map(|(arch, version)| {
            let mut platform = json!({"architecture": arch, "os": "windows"});
            if !version.is_empty() {
                platform["os.version"] = json!(version);
            }
            json!({"mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "digest": DIGEST, "size": 1000, "platform": platform})
        })
        .collect();
    json!({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
        "manifests": entries})
    .to_string()
}

fn registry() -> FixtureRegistry {
    let mut registry = FixtureRegistry::new();
    registry.index(
        "ghcr.io/org/win-both:1",
        &windows_index(&[("amd64", "10.0.17763.6054"), ("amd64", "10.0.20348.2582")]),
    );
    registry.index(
        "ghcr.io/org/win-2022:1",
        &windows_index(&[("amd64", "10.0.20348.2527")]),
    );
    registry.index(
        "ghcr.io/org/win-2019:1",
        &windows_index(&[("amd64", "10.0.17763.6054")]),
    );
    registry.index("ghcr.io/org/win-any:1", &windows_index(&[("amd64", "")]));
    registry
}

fn windows_pod(images: &[&str], extra: Value) -> Value {
    let mut spec = json!({"os": {"name": "windows"}});
    for (key, value) in extra.as_object().unwrap() {
        spec[key] = value.clone();
    }
    pod(images, spec)
}

fn evaluate(object: &Value, settings_json: Value) -> Run {
    run_with(&mut registry(), object, &settings(settings_json))
}

fn pinned(arch: &[&str], builds: &[&str]) -> Value {
    json!({"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": arch},
            {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": builds}]}]}}}})
}

#[test]
fn the_builds_every_image_has_are_pinned_beside_the_architecture() {
    let r = evaluate(
        &windows_pod(
            &["ghcr.io/org/win-both:1", "ghcr.io/org/win-2022:1"],
            json!({}),
        ),
        json!({"pinWindowsBuild": true}),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        pinned(&["amd64"], &["10.0.20348"])
    ]));
    let r = evaluate(
        &windows_pod(&["ghcr.io/org/win-both:1"], json!({})),
        json!({"pinWindowsBuild": true}),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        pinned(&["amd64"], &["10.0.17763", "10.0.20348"])
    ]));
}

#[test]
fn images_without_os_version_run_on_any_build() {
    let r = evaluate(
        &windows_pod(
            &["ghcr.io/org/win-any:1", "ghcr.io/org/win-2019:1"],
            json!({}),
        ),
        json!({"pinWindowsBuild": true}),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        pinned(&["amd64"], &["10.0.17763"])
    ]));
    // No image says: only the architecture.
    let r = evaluate(
        &windows_pod(&["ghcr.io/org/win-any:1"], json!({})),
        json!({"pinWindowsBuild": true}),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
}

#[test]
fn images_that_share_no_build_are_rejected_naming_each() {
    let r = evaluate(
        &windows_pod(
            &["ghcr.io/org/win-2019:1", "ghcr.io/org/win-2022:1"],
            json!({}),
        ),
        json!({"pinWindowsBuild": true}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: no Windows OS build runs every image of this Pod: \"ghcr.io/org/win-2019:1\" is \
         built for 10.0.17763; \"ghcr.io/org/win-2022:1\" is built for 10.0.20348. A Windows node runs a \
         process-isolated container only on the OS build it was built for (node.kubernetes.io/windows-build; \
         setting pinWindowsBuild)"
    );
}

#[test]
fn a_pod_whose_own_terms_admit_none_of_its_images_builds_is_rejected() {
    // Its term keeps it to 10.0.17763; its image is built for 10.0.20348 only. Pinned, the term
    // would admit no node (k8s-judge's property, RAPID_SEED=12002119307861415192, the case
    // alone, through a gated Pod's UPDATE).
    let own = |builds: Value| {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": builds}]}]}}}})
    };
    let r = evaluate(
        &windows_pod(&["ghcr.io/org/win-2022:1"], own(json!(["10.0.17763"]))),
        json!({"pinWindowsBuild": true}),
    );
    let refused = "image-arch-affinity: the Pod's own constraints admit no Windows \
         node of its images' OS builds: 10.0.20348 (node.kubernetes.io/windows-build; setting \
         pinWindowsBuild)";
    assert_eq!(r.rejection(), refused);
    // So is one whose nodeSelector keeps it to another build.
    let r = evaluate(
        &windows_pod(
            &["ghcr.io/org/win-2022:1"],
            json!({"nodeSelector": {"node.kubernetes.io/windows-build": "10.0.17763"}}),
        ),
        json!({"pinWindowsBuild": true}),
    );
    assert_eq!(r.rejection(), refused);
    // Where one of the builds it admits is its image's, it is pinned as any Pod.
    let r = evaluate(
        &windows_pod(
            &["ghcr.io/org/win-2022:1"],
            own(json!(["10.0.17763", "10.0.20348"])),
        ),
        json!({"pinWindowsBuild": true}),
    );
    let term = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions";
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": format!("{term}/1"),
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}},
        {"op": "add", "path": format!("{term}/2"),
         "value": {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}}
    ]));
}

#[test]
fn without_the_setting_or_on_linux_no_build_is_pinned() {
    let r = evaluate(
        &windows_pod(
            &["ghcr.io/org/win-2019:1", "ghcr.io/org/win-2022:1"],
            json!({}),
        ),
        json!({}),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    let r = evaluate(
        &pod(&["multi:1"], json!({})),
        json!({"pinWindowsBuild": true}),
    );
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"])
    ]));
}

#[test]
fn the_pin_is_idempotent_and_a_term_on_the_build_is_kept() {
    let pod = windows_pod(&["ghcr.io/org/win-2022:1"], json!({}));
    let settings_json = json!({"pinWindowsBuild": true});
    let r = evaluate(&pod, settings_json.clone());
    let once = apply(&pod, r.patch.as_ref().unwrap());
    evaluate(&once, settings_json.clone()).assert_accepted_unchanged();
    let own = windows_pod(
        &["ghcr.io/org/win-2022:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}]}]}}}}),
    );
    let r = evaluate(&own, settings_json);
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1",
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}}
    ]));
}

#[test]
fn a_term_naming_builds_an_image_lacks_is_narrowed_to_the_images_builds() {
    // The Pod's own term admits 10.0.17763 and 10.0.20348; its image is built for 10.0.20348
    // only: the term gets the image's builds too, or the Pod could land on a 17763 node (k8s-judge's
    // property, RAPID_SEED=2493206812580528281, case 5654: a gated Pod's earlier pin).
    let own = windows_pod(
        &["ghcr.io/org/win-2022:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node.kubernetes.io/windows-build", "operator": "In",
                "values": ["10.0.17763", "10.0.20348"]}]}]}}}}),
    );
    let r = evaluate(&own, json!({"pinWindowsBuild": true}));
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1",
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/2",
         "value": {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}}
    ]));
}

#[test]
fn a_term_that_excludes_a_build_still_gets_the_images_builds() {
    // `NotIn [10.0.20348]` keeps the Pod off one build, not within it: it may still land on a
    // 10.0.26100 node, which its image (10.0.17763 and 10.0.20348) does not run on. The term
    // gets the image's builds, as any term without an `In` on the build would.
    let own = windows_pod(
        &["ghcr.io/org/win-both:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node.kubernetes.io/windows-build", "operator": "NotIn",
                "values": ["10.0.20348"]}]}]}}}}),
    );
    let r = evaluate(&own, json!({"pinWindowsBuild": true}));
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1",
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/2",
         "value": {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.17763", "10.0.20348"]}}
    ]));
}

#[test]
fn a_pod_bound_to_a_windows_node_of_another_build_is_rejected() {
    let mut cluster = FixtureCluster::of(vec![node("win-1", "windows", "amd64")]);
    cluster.runtime_classes = vec![("hyperv".into(), "runhcs-wcow-hypervisor".into())];
    let run = |cluster: &mut FixtureCluster, image: &str, extra: Value, settings_json: Value| {
        let mut extra = extra;
        extra["nodeName"] = json!("win-1");
        run_in_cluster(
            &mut registry(),
            cluster,
            "Pod",
            "CREATE",
            &windows_pod(&[image], extra),
            &Value::Null,
            &settings(settings_json),
        )
    };
    let refused = "image-arch-affinity: the Pod is bound to node \"win-1\" (windows/amd64, OS build 10.0.20348), \
        which its images have no build for: \"ghcr.io/org/win-2019:1\" runs only on windows/amd64 10.0.17763. Its \
        containers cannot start there (a process-isolated Windows container needs the node's architecture and \
        OS build)";
    // With readNodes the Node's build counts, with pinWindowsBuild or without.
    for settings_json in [
        json!({"readNodes": true, "pinWindowsBuild": true}),
        json!({"readNodes": true}),
    ] {
        let r = run(
            &mut cluster,
            "ghcr.io/org/win-2019:1",
            json!({}),
            settings_json.clone(),
        );
        assert_eq!(r.rejection(), refused);
        run(
            &mut cluster,
            "ghcr.io/org/win-2022:1",
            json!({}),
            settings_json.clone(),
        )
        .assert_accepted_unchanged();
        run(
            &mut cluster,
            "ghcr.io/org/win-any:1",
            json!({}),
            settings_json,
        )
        .assert_accepted_unchanged();
    }
    // Hyper-V isolation runs an image of any build: the RuntimeClass is read, and the Pod
    // accepted; one of process isolation is refused.
    cluster.calls.clear();
    let hyperv = json!({"runtimeClassName": "hyperv"});
    run(
        &mut cluster,
        "ghcr.io/org/win-2019:1",
        hyperv,
        json!({"readNodes": true}),
    )
    .assert_accepted_unchanged();
    assert_eq!(
        cluster.calls,
        [
            format!("get_resource v1/Node win-1 masks {MASKS}"),
            "get_resource node.k8s.io/v1/RuntimeClass hyperv masks handler".to_string()
        ]
    );
    cluster.runtime_classes = vec![("hyperv".into(), "runhcs-wcow-process".into())];
    let r = run(
        &mut cluster,
        "ghcr.io/org/win-2019:1",
        json!({"runtimeClassName": "hyperv"}),
        json!({"readNodes": true}),
    );
    assert_eq!(r.rejection(), refused);
}

const MASKS: &str = "status.nodeInfo.architecture,status.nodeInfo.operatingSystem";

fn list(selector: &str) -> String {
    format!("list_resources_all v1/Node {selector} masks {MASKS}")
}

/// The NodePool list (a cluster without Karpenter answers not found).
fn pools() -> String {
    NODE_POOLS_CALL.to_string()
}

/// A Windows Node of `arch` reporting `build` (`None`: without the label).
fn windows_node(name: &str, arch: &str, build: Option<&str>) -> Value {
    let mut node = node(name, "windows", arch);
    let labels = node["metadata"]["labels"].as_object_mut().unwrap();
    match build {
        Some(build) => labels.insert("node.kubernetes.io/windows-build".to_string(), json!(build)),
        None => labels.remove("node.kubernetes.io/windows-build"),
    };
    node
}

fn node_aware(cluster: &mut FixtureCluster, images: &[&str], extra: Value) -> Run {
    let mut settings_json = json!({"readNodes": true, "pinWindowsBuild": true});
    for (key, value) in extra.as_object().unwrap() {
        settings_json[key] = value.clone();
    }
    run_in_cluster(
        &mut registry(),
        cluster,
        "Pod",
        "CREATE",
        &windows_pod(images, json!({})),
        &Value::Null,
        &settings(settings_json),
    )
}

const OTHER_ARCH: &str = "kubernetes.io/os=windows,kubernetes.io/arch notin (amd64)";

#[test]
fn with_nodes_read_images_covering_every_windows_build_pin_only_the_os_after_one_list_more() {
    let mut cluster = FixtureCluster::of(vec![
        windows_node("win-1", "amd64", Some("10.0.20348")),
        windows_node("win-2", "amd64", Some("10.0.17763")),
        node("lin-1", "linux", "amd64"),
    ]);
    let r = node_aware(&mut cluster, &["ghcr.io/org/win-both:1"], json!({}));
    // No build to pin; the Linux Node keeps the Pod, which states its OS in spec.os only, to
    // Windows Nodes.
    r.assert_patch(json!([add_required_os(&[], "windows")]));
    assert_eq!(
        cluster.calls,
        [
            list(OTHER_ARCH),
            list("kubernetes.io/os=windows,kubernetes.io/arch in (amd64)"),
            list("kubernetes.io/os=linux"),
            pools(),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
}

#[test]
fn with_nodes_read_the_pin_is_the_image_builds_some_node_reports() {
    // win-both runs on 2019 and 2022; the cluster has 2022 and 2025 Nodes: pinned to 2022 only.
    let mut cluster = FixtureCluster::of(vec![
        windows_node("win-1", "amd64", Some("10.0.20348")),
        windows_node("win-2", "amd64", Some("10.0.26100")),
    ]);
    let r = node_aware(&mut cluster, &["ghcr.io/org/win-both:1"], json!({}));
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}]}]}}}}
    ]));
    assert_eq!(
        cluster.calls,
        [
            list(OTHER_ARCH),
            list("kubernetes.io/os=windows,kubernetes.io/arch in (amd64)"),
            list("kubernetes.io/os=linux"),
            pools(),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
    // A Node without the label counts as another build: the Pod is pinned off it.
    let mut cluster = FixtureCluster::of(vec![
        windows_node("win-1", "amd64", Some("10.0.20348")),
        windows_node("win-2", "amd64", None),
    ]);
    let r = node_aware(&mut cluster, &["ghcr.io/org/win-2022:1"], json!({}));
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}]}]}}}}
    ]));
    assert_eq!(cluster.calls.len(), 5);
}

#[test]
fn with_nodes_read_a_process_isolated_pod_is_kept_to_its_builds_without_the_setting() {
    // readNodes alone: Windows Nodes of two builds, win-both runs on 2019 and 2022: pinned to the
    // build some Node reports, as under pinWindowsBuild, after the same Node lists.
    let nodes = || {
        FixtureCluster::of(vec![
            windows_node("win-1", "amd64", Some("10.0.20348")),
            windows_node("win-2", "amd64", Some("10.0.26100")),
        ])
    };
    let pinned_2022 = json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}]}]}}}}
    ]);
    let run = |cluster: &mut FixtureCluster, image: &str, extra: Value| {
        run_in_cluster(
            &mut registry(),
            cluster,
            "Pod",
            "CREATE",
            &windows_pod(&[image], extra),
            &Value::Null,
            &settings(json!({"readNodes": true})),
        )
    };
    let mut cluster = nodes();
    run(&mut cluster, "ghcr.io/org/win-both:1", json!({})).assert_patch(pinned_2022);
    assert_eq!(cluster.calls.len(), 5);
    // No Node of the image's build: refused, naming the setting that reads them.
    let r = run(&mut nodes(), "ghcr.io/org/win-2019:1", json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: no Windows amd64 Node has an OS build of the Pod's images: images 10.0.17763; \
         Nodes 10.0.20348, 10.0.26100 (node.kubernetes.io/windows-build; setting readNodes)"
    );
    // A Pod in Hyper-V isolation runs on any build: its RuntimeClass is read first, and only
    // its OS is pinned (the cluster has Linux Nodes too).
    let mut cluster = nodes();
    cluster.nodes.push(node("linux-1", "linux", "amd64"));
    cluster.runtime_classes = vec![("hyperv".into(), "runhcs-wcow-hypervisor".into())];
    let r = run(
        &mut cluster,
        "ghcr.io/org/win-2019:1",
        json!({"runtimeClassName": "hyperv"}),
    );
    r.assert_patch(json!([
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]}}}}
    ]));
    assert_eq!(
        cluster.calls[0],
        "get_resource node.k8s.io/v1/RuntimeClass hyperv masks handler"
    );
}

#[test]
fn with_nodes_read_no_node_of_an_image_build_rejects_naming_both() {
    let mut cluster = FixtureCluster::of(vec![
        windows_node("win-1", "amd64", Some("10.0.17763")),
        windows_node("win-2", "amd64", Some("10.0.26100")),
        windows_node("win-3", "amd64", None),
    ]);
    let r = node_aware(&mut cluster, &["ghcr.io/org/win-2022:1"], json!({}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: no Windows amd64 Node has an OS build of the Pod's images: images 10.0.20348; \
         Nodes 10.0.17763, 10.0.26100, unlabelled (1) (node.kubernetes.io/windows-build; settings \
         pinWindowsBuild, readNodes)"
    );
    assert_eq!(
        cluster.calls,
        [
            list(OTHER_ARCH),
            list("kubernetes.io/os=windows,kubernetes.io/arch in (amd64)"),
            pools()
        ]
    );
    let mut cluster = FixtureCluster::of(vec![windows_node("win-1", "amd64", Some("10.0.17763"))]);
    let r = node_aware(
        &mut cluster,
        &["ghcr.io/org/win-2022:1"],
        json!({"onNoCommonArchitecture": "accept"}),
    );
    r.assert_accepted_unchanged();
    // The warning is cut in the middle (256 characters), keeping both builds and the settings.
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: no Windows amd64 Node has an OS build of th … es 10.0.20348; Nodes 10.0.17763 \
          (node.kubernetes.io/windows-build; settings pinWindowsBuild, readNodes) (accepted without an \
          architecture constraint: setting onNoCommonArchitecture: accept)"]
    );
}

#[test]
fn with_nodes_read_the_nodes_listed_for_the_architecture_pin_are_reused() {
    // An arm64 Windows Node: the amd64 Pod is pinned, so the amd64 Windows Nodes were read.
    let mut cluster = FixtureCluster::of(vec![
        windows_node("win-1", "amd64", Some("10.0.20348")),
        windows_node("win-2", "amd64", Some("10.0.17763")),
        windows_node("win-arm", "arm64", Some("10.0.26100")),
    ]);
    let r = node_aware(&mut cluster, &["ghcr.io/org/win-2022:1"], json!({}));
    r.assert_patch(json!([
        add_annotation("amd64"),
        pinned(&["amd64"], &["10.0.20348"])
    ]));
    assert_eq!(
        cluster.calls,
        [
            list(OTHER_ARCH),
            list("kubernetes.io/os=windows,kubernetes.io/arch in (amd64)"),
            list("kubernetes.io/os=linux"),
            pools(),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
}

#[test]
fn with_nodes_read_an_autoscaled_windows_pool_pins_the_image_builds_unconfirmed() {
    let mut cluster = FixtureCluster::of(vec![windows_node("win-1", "amd64", Some("10.0.17763"))]);
    let r = node_aware(
        &mut cluster,
        &["ghcr.io/org/win-2022:1"],
        json!({"autoscaledArchitectures": [{"os": "windows", "architectures": ["amd64"]}]}),
    );
    assert_eq!(r.decision.warnings, Vec::<String>::new());
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}]}]}}}}
    ]));
    assert_eq!(
        cluster.calls,
        [
            list(OTHER_ARCH),
            list("kubernetes.io/os=windows,kubernetes.io/arch in (amd64)"),
            list("kubernetes.io/os=linux"),
            pools(),
            list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
        ]
    );
}

#[test]
fn with_nodes_read_images_without_os_version_read_no_build() {
    let mut cluster = FixtureCluster::of(vec![windows_node("win-1", "amd64", Some("10.0.17763"))]);
    let r = node_aware(&mut cluster, &["ghcr.io/org/win-any:1"], json!({}));
    r.assert_accepted_unchanged();
    // And whether Linux Nodes exist (none).
    assert_eq!(
        cluster.calls,
        [list(OTHER_ARCH), list("kubernetes.io/os=linux"), pools()]
    );
}

#[test]
fn with_nodes_read_a_failing_windows_node_list_follows_on_lookup_failure() {
    let mut cluster = FixtureCluster::of(vec![
        windows_node("win-1", "amd64", Some("10.0.20348")),
        windows_node("win-2", "amd64", Some("10.0.17763")),
    ]);
    cluster.failure = Some(
        "Host error: error invoking host capability kubernetes.list_resources_all: connection refused"
            .to_string(),
    );
    cluster.fail_from = Some(1);
    let images = ["ghcr.io/org/win-2022:1"];
    // ignoreImage (the default): the Windows Nodes' list is the Nodes' list: pinned to the
    // architectures and the builds the images share, with a warning.
    let r = node_aware(&mut cluster, &images, json!({}));
    r.assert_patch(json!([
        add_annotation("amd64"),
        pinned(&["amd64"], &["10.0.20348"])
    ]));
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the cluster's Nodes could not be read, so the Pod is pinned to every architecture \
          its images run on: error invoking host capability kubernetes.list_resources_all: connection refused"]
    );
    assert_eq!(cluster.calls.len(), 2);
    let r = node_aware(&mut cluster, &images, json!({"onLookupFailure": "reject"}));
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: cannot read the cluster's windows Nodes: error invoking host capability \
         kubernetes.list_resources_all: connection refused (setting onLookupFailure: reject)"
    );
    let r = node_aware(&mut cluster, &images, json!({"onLookupFailure": "accept"}));
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: the Pod was not pinned to an architecture because the cluster's Nodes could not be \
          read: error invoking host capability kubernetes.list_resources_all: connection refused"]
    );
}

#[test]
fn in_a_cluster_of_two_oses_the_os_expression_follows_the_build() {
    // docs/windows.md, "Clusters of Linux and Windows nodes".
    let r = evaluate(
        &windows_pod(&["ghcr.io/org/win-2022:1"], json!({})),
        json!({"pinWindowsBuild": true, "clusterOperatingSystems": ["linux", "windows"]}),
    );
    let mut expected = pinned(&["amd64"], &["10.0.20348"]);
    expected["value"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0]["matchExpressions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}));
    r.assert_patch(json!([add_annotation("amd64"), expected]));
}

#[test]
fn a_windows_node_pool_may_bring_any_build_so_the_pod_is_kept_to_its_images_builds() {
    // A Karpenter NodePool of Windows nodes names no build: the nodes it launches may be of any
    // (k8s-judge's Karpenter control plane, K8S_E2E_SEED=4733966290523524189: a 10.0.20348 image
    // on a 10.0.17763 Node it launched for another Pod). Pinned whether or not a Windows Node
    // exists, and whatever build the Nodes report (to amd64 too: the pool admits any).
    let pinned_2022 = json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]},
                {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]}}}}
    ]);
    let windows_pool = node_pool(
        "windows",
        json!([{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]),
        json!([]),
    );
    for windows_nodes in [
        vec![],
        vec![windows_node("win-1", "amd64", Some("10.0.20348"))],
    ] {
        let mut nodes = vec![node("amd-1", "linux", "amd64")];
        nodes.extend(windows_nodes);
        let mut cluster = FixtureCluster::of(nodes);
        cluster.node_pools = Some(vec![windows_pool.clone()]);
        let r = run_in_cluster(
            &mut registry(),
            &mut cluster,
            "Pod",
            "CREATE",
            &windows_pod(&["ghcr.io/org/win-2022:1"], json!({})),
            &Value::Null,
            &settings(json!({"readNodes": true})),
        );
        r.assert_patch(pinned_2022.clone());
        assert_eq!(
            cluster.calls,
            [
                list(OTHER_ARCH),
                list("kubernetes.io/os=windows,kubernetes.io/arch in (amd64)"),
                list("kubernetes.io/os=linux"),
                pools(),
                list("!kubernetes.io/arch,!beta.kubernetes.io/arch")
            ]
        );
    }
}
