//! Workloads: the Pod template checked (and, on request, pinned) at apply time.

mod common;
use common::*;
use serde_json::{json, Value};

const KINDS: [(&str, &str); 7] = [
    ("Deployment", "/spec/template"),
    ("ReplicaSet", "/spec/template"),
    ("StatefulSet", "/spec/template"),
    ("DaemonSet", "/spec/template"),
    ("Job", "/spec/template"),
    ("ReplicationController", "/spec/template"),
    ("CronJob", "/spec/jobTemplate/spec/template"),
];

/// A workload of `kind` whose Pod template runs `images`.
fn workload(kind: &str, images: &[&str]) -> Value {
    let pod = pod(images, json!({}));
    let template = json!({"metadata": {"labels": {"app": "w"}}, "spec": pod["spec"]});
    let spec = if kind == "CronJob" {
        json!({"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}})
    } else {
        json!({"replicas": 2, "selector": {"matchLabels": {"app": "w"}}, "template": template})
    };
    json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w", "namespace": "default"}, "spec": spec})
}

fn pin_template(at: &str, architectures: &[&str]) -> Value {
    json!([
        {"op": "add", "path": format!("{at}/metadata/annotations"), "value": {
            "image-arch-affinity.kubewarden.io/architectures": architectures.join(",")}},
        {"op": "add", "path": format!("{at}/spec/affinity"), "value": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": architectures}]}]}}}}
    ])
}

#[test]
fn every_kind_is_rejected_at_apply_time_when_its_images_share_no_architecture() {
    let mut registry = FixtureRegistry::new();
    for (kind, _) in KINDS {
        for operation in ["CREATE", "UPDATE"] {
            let object = workload(
                kind,
                &["ghcr.io/org/arm64-only:1", "ghcr.io/org/amd64-only:1"],
            );
            let r = run_request(
                &mut registry,
                kind,
                operation,
                &object,
                &settings(json!({})),
            );
            assert_eq!(
                r.rejection(),
                "image-arch-affinity: no linux node architecture runs every image of this Pod template: \
                 \"ghcr.io/org/arm64-only:1\" runs on arm64; \"ghcr.io/org/amd64-only:1\" runs on amd64. \
                 Use images built for a common architecture",
                "{kind} {operation}"
            );
        }
    }
}

#[test]
fn template_constraints_that_admit_none_of_the_images_architectures_are_rejected() {
    let mut object = workload("Deployment", &["multi:1"]);
    object["spec"]["template"]["spec"]["nodeSelector"] = json!({"kubernetes.io/arch": "s390x"});
    let r = run_request(
        &mut FixtureRegistry::new(),
        "Deployment",
        "CREATE",
        &object,
        &settings(json!({})),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod template's nodeSelector kubernetes.io/arch=s390x asks for an architecture that its images do not run on; they all run on: amd64, arm64"
    );
}

#[test]
fn validate_mode_never_mutates_a_workload() {
    let mut registry = FixtureRegistry::new();
    for (kind, _) in KINDS {
        let r = run_request(
            &mut registry,
            kind,
            "CREATE",
            &workload(kind, &["multi:1"]),
            &settings(json!({})),
        );
        r.assert_accepted_unchanged();
        assert_eq!(
            r.calls,
            ["v1/oci_manifest docker.io/library/multi:1"],
            "{kind}"
        );
    }
}

#[test]
fn mutate_mode_pins_the_template_of_every_kind() {
    let mut registry = FixtureRegistry::new();
    for (kind, at) in KINDS {
        let r = run_request(
            &mut registry,
            kind,
            "CREATE",
            &workload(kind, &["multi:1", "list:1"]),
            &settings(json!({"workloadTemplates": "mutate"})),
        );
        r.assert_patch(pin_template(at, &["amd64", "arm64"]));
    }
}

#[test]
fn update_without_image_or_scheduling_change_costs_no_lookup() {
    let mut registry = FixtureRegistry::new();
    for (kind, _) in KINDS {
        let old = workload(
            kind,
            &["ghcr.io/org/arm64-only:1", "ghcr.io/org/amd64-only:1"],
        );
        let mut scaled = old.clone();
        scaled["spec"]["replicas"] = json!(5);
        scaled["metadata"]["labels"] = json!({"new": "label"});
        let r = run_update(
            &mut registry,
            kind,
            "UPDATE",
            &scaled,
            &old,
            &settings(json!({})),
        );
        r.assert_accepted_unchanged();
        assert_eq!(r.calls, Vec::<String>::new(), "{kind}");
    }
}

#[test]
fn update_with_an_image_change_is_checked() {
    let old = workload("Deployment", &["multi:1"]);
    let new = workload("Deployment", &["multi:1", "ghcr.io/org/arm64-only:1"]);
    let r = run_update(
        &mut FixtureRegistry::new(),
        "Deployment",
        "UPDATE",
        &new,
        &old,
        &settings(json!({"workloadTemplates": "mutate"})),
    );
    assert_eq!(r.calls.len(), 3);
    r.assert_patch(pin_template("/spec/template", &["arm64"]));
    // A scheduling change alone is checked too.
    let mut moved = old.clone();
    moved["spec"]["template"]["spec"]["nodeSelector"] = json!({"kubernetes.io/arch": "s390x"});
    let r = run_update(
        &mut FixtureRegistry::new(),
        "Deployment",
        "UPDATE",
        &moved,
        &old,
        &settings(json!({})),
    );
    assert_eq!(r.calls, ["v1/oci_manifest docker.io/library/multi:1"]);
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod template's nodeSelector kubernetes.io/arch=s390x asks for an \
         architecture that its images do not run on; they all run on: amd64, arm64"
    );
}

#[test]
fn controller_owned_replicasets_and_jobs_were_checked_with_their_owner() {
    let mut registry = FixtureRegistry::new();
    for (kind, owner) in [("ReplicaSet", "Deployment"), ("Job", "CronJob")] {
        let mut object = workload(
            kind,
            &["ghcr.io/org/arm64-only:1", "ghcr.io/org/amd64-only:1"],
        );
        object["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": owner, "name": "o", "uid": "1", "controller": true}]);
        let r = run_request(&mut registry, kind, "CREATE", &object, &settings(json!({})));
        r.assert_accepted_unchanged();
        assert!(r.calls.is_empty());
    }
}

#[test]
fn daemonset_validate_warns_about_the_architectures_it_will_fail_on() {
    let object = workload("DaemonSet", &["ghcr.io/org/amd64-only:1"]);
    let r = run_request(
        &mut FixtureRegistry::new(),
        "DaemonSet",
        "CREATE",
        &object,
        &settings(json!({"schedulableArchitectures": ["amd64", "arm64", "s390x"]})),
    );
    r.assert_accepted_unchanged();
    assert_eq!(
        r.decision.warnings,
        ["image-arch-affinity: this DaemonSet's images run only on amd64: its Pods will fail on the arm64, s390x nodes. \
          Add a required node affinity on kubernetes.io/arch, or set daemonSetTemplates: mutate"]
    );
    let unknown = run_request(
        &mut FixtureRegistry::new(),
        "DaemonSet",
        "CREATE",
        &object,
        &settings(json!({})),
    );
    assert_eq!(
        unknown.decision.warnings,
        ["image-arch-affinity: this DaemonSet's images run only on amd64: its Pods will fail on any node whose architecture is not amd64. \
          Add a required node affinity on kubernetes.io/arch, or set daemonSetTemplates: mutate"]
    );
}

#[test]
fn daemonset_without_warning_when_covered_or_already_constrained() {
    let covered = run_request(
        &mut FixtureRegistry::new(),
        "DaemonSet",
        "CREATE",
        &workload("DaemonSet", &["multi:1"]),
        &settings(json!({"schedulableArchitectures": ["amd64", "arm64"]})),
    );
    covered.assert_accepted_unchanged();
    assert!(covered.decision.warnings.is_empty());
    let mut constrained = workload("DaemonSet", &["ghcr.io/org/amd64-only:1"]);
    constrained["spec"]["template"]["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}});
    let r = run_request(
        &mut FixtureRegistry::new(),
        "DaemonSet",
        "CREATE",
        &constrained,
        &settings(json!({"schedulableArchitectures": ["amd64", "arm64"]})),
    );
    r.assert_accepted_unchanged();
    assert!(r.decision.warnings.is_empty(), "{r:?}");
}

#[test]
fn daemonset_mutate_setting_pins_only_daemonsets() {
    let settings = settings(
        json!({"daemonSetTemplates": "mutate", "schedulableArchitectures": ["amd64", "arm64"]}),
    );
    let mut registry = FixtureRegistry::new();
    let r = run_request(
        &mut registry,
        "DaemonSet",
        "CREATE",
        &workload("DaemonSet", &["ghcr.io/org/amd64-only:1"]),
        &settings,
    );
    r.assert_patch(pin_template("/spec/template", &["amd64"]));
    assert!(r.decision.warnings.is_empty());
    let deployment = run_request(
        &mut registry,
        "Deployment",
        "CREATE",
        &workload("Deployment", &["ghcr.io/org/amd64-only:1"]),
        &settings,
    );
    deployment.assert_accepted_unchanged();
    // Idempotent: the pinned DaemonSet, applied again, changes nothing and warns about nothing.
    let pinned = apply(
        &workload("DaemonSet", &["ghcr.io/org/amd64-only:1"]),
        r.patch.as_ref().unwrap(),
    );
    let again = run_request(&mut registry, "DaemonSet", "CREATE", &pinned, &settings);
    again.assert_accepted_unchanged();
    assert!(again.decision.warnings.is_empty());
}

/// A DaemonSet of `images` whose template has these required node affinity terms.
fn daemon_set_with_terms(images: &[&str], terms: Value) -> Value {
    let mut object = workload("DaemonSet", images);
    object["spec"]["template"]["spec"]["affinity"] = json!({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
    object
}

fn daemon_set_warnings(object: &Value, settings_json: Value) -> Vec<String> {
    let r = run_request(
        &mut FixtureRegistry::new(),
        "DaemonSet",
        "CREATE",
        object,
        &settings(settings_json),
    );
    r.assert_accepted_unchanged();
    r.decision.warnings
}

fn arch_term(operator: &str, values: &[&str]) -> Value {
    json!({"matchExpressions": [{"key": "kubernetes.io/arch", "operator": operator, "values": values}]})
}

#[test]
fn daemonset_warning_leaves_out_the_architectures_its_template_excludes() {
    let amd64_only = ["ghcr.io/org/amd64-only:1"];
    let warning = |failing: &str| {
        vec![format!(
            "image-arch-affinity: this DaemonSet's images run only on amd64: its Pods will fail on {failing}. \
             Add a required node affinity on kubernetes.io/arch, or set daemonSetTemplates: mutate"
        )]
    };
    let known = json!({"schedulableArchitectures": ["amd64", "arm64", "s390x"]});
    // NotIn: the excluded s390x nodes get no Pod, so only arm64 fails.
    let not_in = daemon_set_with_terms(&amd64_only, json!([arch_term("NotIn", &["s390x"])]));
    assert_eq!(
        daemon_set_warnings(&not_in, known.clone()),
        warning("the arm64 nodes")
    );
    // An In that partly overlaps the images' architectures.
    let partial = daemon_set_with_terms(&amd64_only, json!([arch_term("In", &["amd64", "arm64"])]));
    assert_eq!(
        daemon_set_warnings(&partial, known.clone()),
        warning("the arm64 nodes")
    );
    // ORed terms admit the union of what each admits.
    let ored = daemon_set_with_terms(
        &amd64_only,
        json!([arch_term("In", &["amd64"]), arch_term("In", &["s390x"])]),
    );
    assert_eq!(
        daemon_set_warnings(&ored, known.clone()),
        warning("the s390x nodes")
    );
    // Every other schedulable architecture excluded: nothing fails, no warning.
    let excluded = daemon_set_with_terms(
        &amd64_only,
        json!([arch_term("NotIn", &["arm64", "s390x"])]),
    );
    assert_eq!(
        daemon_set_warnings(&excluded, known.clone()),
        Vec::<String>::new()
    );
    // Schedulable architectures unknown: an In names exactly the failing ones, a NotIn is left
    // out of the nodes it fails on.
    assert_eq!(
        daemon_set_warnings(&partial, json!({})),
        warning("the arm64 nodes")
    );
    assert_eq!(
        daemon_set_warnings(&not_in, json!({})),
        warning("any node whose architecture is not amd64, s390x")
    );
}

#[test]
fn daemonset_warning_with_long_architecture_lists_fits_256_characters() {
    // Every architecture a node can report but amd64: the listing is cut in its middle.
    let object = daemon_set_with_terms(
        &["ghcr.io/org/amd64-only:1"],
        json!([arch_term(
            "In",
            image_arch_affinity::platform::KNOWN_ARCHITECTURES
        )]),
    );
    let warnings = daemon_set_warnings(&object, json!({}));
    assert_eq!(
        warnings,
        ["image-arch-affinity: this DaemonSet's images run only on amd64: its Pods will fail on the \
          386, arm, arm64, loong64, mips, mips64, mips64l … e, riscv64, s390x, wasm nodes. \
          Add a required node affinity on kubernetes.io/arch, or set daemonSetTemplates: mutate"]
    );
    assert_eq!(warnings[0].chars().count(), 256);
    // Values no node reports: they admit no node, so nothing fails there.
    let values: Vec<String> = (1..=5)
        .map(|i| format!("label-value-that-is-not-an-architecture-number-{i}"))
        .collect();
    let mut admitted = vec!["amd64"];
    admitted.extend(values.iter().map(String::as_str));
    let object = daemon_set_with_terms(
        &["ghcr.io/org/amd64-only:1"],
        json!([arch_term("In", &admitted)]),
    );
    assert_eq!(
        daemon_set_warnings(&object, json!({})),
        Vec::<String>::new()
    );
}

// ---- one constraint model: templates decided like Pods ----

fn deployment_with(spec: Value) -> Value {
    let mut object = workload("Deployment", &["multi:1"]);
    if let (Some(target), Some(extra)) = (
        object["spec"]["template"]["spec"].as_object_mut(),
        spec.as_object(),
    ) {
        for (key, value) in extra {
            target.insert(key.clone(), value.clone());
        }
    }
    object
}

#[test]
fn template_node_selector_with_terms_admitting_none_of_the_images_is_rejected() {
    let object = deployment_with(json!({"nodeSelector": {"kubernetes.io/arch": "arm64"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]}]}}}}));
    for mode in ["validate", "mutate"] {
        let r = run_request(
            &mut FixtureRegistry::new(),
            "Deployment",
            "CREATE",
            &object,
            &settings(json!({"workloadTemplates": mode})),
        );
        assert_eq!(
            r.rejection(),
            "image-arch-affinity: every required node affinity term of the Pod template (with its nodeSelector kubernetes.io/arch=arm64) \
             excludes the architectures its images run on (amd64, arm64): term 0 admits s390x",
            "{mode}"
        );
    }
}

#[test]
fn template_arch_and_beta_arch_selector_naming_different_architectures_is_rejected() {
    let object = deployment_with(
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64", "beta.kubernetes.io/arch": "arm64"}}),
    );
    let r = run_request(
        &mut FixtureRegistry::new(),
        "Deployment",
        "CREATE",
        &object,
        &settings(json!({})),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod template's nodeSelector beta.kubernetes.io/arch=arm64, kubernetes.io/arch=amd64 \
         admits no linux node of any architecture; its images all run on: amd64, arm64"
    );
}

#[test]
fn template_node_selector_picking_a_tainted_pool_gets_its_tolerations() {
    let object = deployment_with(json!({"nodeSelector": {"kubernetes.io/arch": "arm64"}}));
    let tolerations = json!({"architectureTolerations": {
        "arm64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}],
        "amd64": [{"key": "pool", "value": "x86", "effect": "NoSchedule"}]}});
    let mut mutate = tolerations.clone();
    mutate["workloadTemplates"] = json!("mutate");
    let r = run_request(
        &mut FixtureRegistry::new(),
        "Deployment",
        "CREATE",
        &object,
        &settings(mutate),
    );
    r.assert_patch(json!([
        {"op": "add", "path": "/spec/template/metadata/annotations", "value": {
            "image-arch-affinity.kubewarden.io/architectures": "amd64,arm64"}},
        {"op": "add", "path": "/spec/template/spec/tolerations", "value": [
            {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]},
    ]));
    // validate: accepted as it is; its Pods get the tolerations when they are created.
    let r = run_request(
        &mut FixtureRegistry::new(),
        "Deployment",
        "CREATE",
        &object,
        &settings(tolerations),
    );
    r.assert_accepted_unchanged();
}

#[test]
fn daemonset_warning_reads_the_template_nodeselector_and_terms_as_one() {
    // The template's nodeSelector and its terms together admit amd64, arm64 and s390x of the
    // schedulable architectures; the images run on amd64 only: the warning names the other two.
    let mut object = daemon_set_with_terms(
        &["ghcr.io/org/amd64-only:1"],
        json!([arch_term("NotIn", &["ppc64le"])]),
    );
    object["spec"]["template"]["spec"]["nodeSelector"] = json!({"tier": "1"});
    assert_eq!(
        daemon_set_warnings(&object, json!({"schedulableArchitectures": ["amd64", "arm64", "ppc64le", "s390x"]})),
        ["image-arch-affinity: this DaemonSet's images run only on amd64: its Pods will fail on the arm64, s390x nodes. \
          Add a required node affinity on kubernetes.io/arch, or set daemonSetTemplates: mutate"]
    );
}

#[test]
fn a_daemon_set_of_an_os_cluster_operating_systems_does_not_list_is_warned_not_refused() {
    // Charts ship a Linux and a Windows DaemonSet side by side: in a cluster the settings say is
    // of Linux, the Windows one creates no Pod. Under either template mode: unchanged, warned;
    // a Deployment of it is refused (its Pods would wait for ever).
    let mut windows = workload("DaemonSet", &["ghcr.io/org/windows:1"]);
    windows["spec"]["template"]["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "windows"});
    for mode in ["validate", "mutate"] {
        assert_eq!(
            daemon_set_warnings(
                &windows,
                json!({"clusterOperatingSystems": ["linux"], "daemonSetTemplates": mode})
            ),
            ["image-arch-affinity: the Pod template runs only on windows nodes, but the cluster's nodes \
              are of linux (setting clusterOperatingSystems): the DaemonSet creates no Pod (accepted unchanged)"]
        );
    }
    let mut deployment = windows.clone();
    deployment["kind"] = json!("Deployment");
    let r = run_request(
        &mut FixtureRegistry::new(),
        "Deployment",
        "CREATE",
        &deployment,
        &settings(json!({"clusterOperatingSystems": ["linux"]})),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod template runs only on windows nodes, but the cluster's nodes are \
         of linux (setting clusterOperatingSystems)"
    );
}

// ---- the decision a template records for its Pods ----

const DECISION: &str = image_arch_affinity::policy::DECISION_ANNOTATION;

/// The Pod the ReplicaSet controller makes from the Deployment `deployment`'s template, as the
/// API server hands it to the policy: its own tolerations added (DefaultTolerationSeconds).
fn pod_of(deployment: &Value) -> Value {
    let template = &deployment["spec"]["template"];
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": template["metadata"].clone(), "spec": template["spec"].clone()});
    pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "w-1", "uid": "1", "controller": true}]);
    pod["spec"]["tolerations"] = json!([
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]);
    pod
}

/// A Deployment of `images` pinned under `mutate` (with `settings_json` besides) in `cluster`,
/// as stored.
fn pinned_in(cluster: &mut FixtureCluster, images: &[&str], settings_json: &Value) -> Value {
    let deployment = workload("Deployment", images);
    let r = run_in_cluster(
        &mut FixtureRegistry::new(),
        cluster,
        "Deployment",
        "CREATE",
        &deployment,
        &Value::Null,
        &settings(settings_json.clone()),
    );
    let (_, record) = split_record(r.patch.as_ref().expect("the template is pinned"));
    assert!(record.is_some(), "{r:?}");
    apply(
        &deployment,
        r.patch.as_ref().expect("the template is pinned"),
    )
}

fn pinned_deployment(images: &[&str], settings_json: &Value) -> Value {
    pinned_in(&mut FixtureCluster::default(), images, settings_json)
}

#[test]
fn a_pod_made_from_a_pinned_template_reuses_its_decision_without_a_lookup() {
    let mutate = json!({"workloadTemplates": "mutate", "templateDecisionSeconds": 3600});
    let deployment = pinned_deployment(&["multi:1", "ghcr.io/org/arm64-only:1"], &mutate);
    let mut registry = FixtureRegistry::new();
    let r = run_with(
        &mut registry,
        &pod_of(&deployment),
        &settings(mutate.clone()),
    );
    r.assert_accepted_unchanged();
    assert_eq!(r.decision.warnings, Vec::<String>::new());
    assert_eq!(r.calls, Vec::<String>::new());
    // With readNodes, no Node is read either.
    let mut node_aware = mutate.clone();
    node_aware["readNodes"] = json!(true);
    let mut cluster = FixtureCluster::of(vec![
        node("amd-1", "linux", "amd64"),
        node("arm-1", "linux", "arm64"),
    ]);
    let deployment = pinned_in(
        &mut cluster,
        &["multi:1", "ghcr.io/org/arm64-only:1"],
        &node_aware,
    );
    cluster.calls.clear();
    let r = common::node_aware(&mut cluster, &pod_of(&deployment), mutate);
    r.assert_accepted_unchanged();
    assert_eq!((r.calls.len(), cluster.calls.len()), (0, 0));
}

#[test]
fn a_pod_that_differs_from_its_pinned_template_is_decided_as_any_pod() {
    let mutate = json!({"workloadTemplates": "mutate", "templateDecisionSeconds": 3600});
    let deployment = pinned_deployment(&["multi:1", "ghcr.io/org/arm64-only:1"], &mutate);
    let pod = pod_of(&deployment);
    let mut image = pod.clone();
    image["spec"]["containers"][1]["image"] = json!("ghcr.io/org/amd64-only:1");
    let mut sidecar = pod.clone();
    sidecar["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "proxy", "image": "list:1"}));
    let mut selector = pod.clone();
    selector["spec"]["nodeSelector"] = json!({"kubernetes.io/arch": "amd64"});
    let mut bound = pod.clone();
    bound["spec"]["nodeName"] = json!("node-1");
    let mut stale = pod.clone();
    let record = &mut stale["metadata"]["annotations"][DECISION];
    let (at, print) = record.as_str().unwrap().split_once('/').unwrap();
    *record = json!(format!("{}/{print}", at.parse::<u64>().unwrap() - 3600));
    let cases = [
        // Lookups: an index 1, a single-platform image 2 (manifest and config).
        (&image, &mutate, 2),
        (&sidecar, &mutate, 4),
        (&selector, &mutate, 3),
        // Bound to a node: left to its node, read only with readNodes.
        (&bound, &mutate, 0),
        (&stale, &mutate, 3),
        (
            &pod,
            &json!({"workloadTemplates": "mutate", "templateDecisionSeconds": 60}),
            3,
        ),
    ];
    for (index, (pod, settings_json, lookups)) in cases.into_iter().enumerate() {
        let r = run_with(
            &mut FixtureRegistry::new(),
            pod,
            &settings(settings_json.clone()),
        );
        assert_eq!(r.calls.len(), lookups, "case {index}: {r:?}");
    }
    // The image swapped for one the pin excludes: refused, as any Pod.
    let r = run_with(&mut FixtureRegistry::new(), &image, &settings(mutate));
    assert!(r.rejection().starts_with("image-arch-affinity: "), "{r:?}");
}

#[test]
fn templates_under_validate_record_nothing_and_their_pods_are_looked_up() {
    let deployment = workload("Deployment", &["multi:1", "ghcr.io/org/arm64-only:1"]);
    let r = run_request(
        &mut FixtureRegistry::new(),
        "Deployment",
        "CREATE",
        &deployment,
        &settings(json!({})),
    );
    r.assert_accepted_unchanged();
    let r = run_with(
        &mut FixtureRegistry::new(),
        &pod_of(&deployment),
        &settings(json!({})),
    );
    r.assert_patch(json!([add_annotation("arm64"), add_required(&["arm64"])]));
    assert_eq!(r.calls.len(), 3);
    // Under mutate, templateDecisionSeconds (0 unless set) decides whether a record is written.
    let mutate = |seconds: u64| {
        let settings_json =
            json!({"workloadTemplates": "mutate", "templateDecisionSeconds": seconds});
        run_request(
            &mut FixtureRegistry::new(),
            "Deployment",
            "CREATE",
            &deployment,
            &settings(settings_json),
        )
    };
    mutate(0).assert_patch(pin_template("/spec/template", &["arm64"]));
    mutate(3600).assert_template_patch(pin_template("/spec/template", &["arm64"]));
}

#[test]
fn a_template_decided_unchanged_renews_the_record_it_carries() {
    let mutate = json!({"workloadTemplates": "mutate", "templateDecisionSeconds": 3600});
    // A new tag of the same architectures in `old`'s template: the pin stands.
    let new_tag = |old: &Value| {
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("list:1");
        let r = run_update(
            &mut FixtureRegistry::new(),
            "Deployment",
            "UPDATE",
            &new,
            old,
            &settings(mutate.clone()),
        );
        (new, r)
    };
    let old = pinned_deployment(&["multi:1", "ghcr.io/org/arm64-only:1"], &mutate);
    let (new, r) = new_tag(&old);
    // The record follows the images.
    let (patch, record) = split_record(r.patch.as_ref().expect("the record is renewed"));
    assert_eq!(patch, json!([]));
    let before = &old["spec"]["template"]["metadata"]["annotations"][DECISION];
    assert!(record.is_some() && record.as_deref() != before.as_str());
    let renewed = apply(&new, r.patch.as_ref().unwrap());
    let pod = run_with(
        &mut FixtureRegistry::new(),
        &pod_of(&renewed),
        &settings(mutate.clone()),
    );
    pod.assert_accepted_unchanged();
    assert_eq!(pod.calls, Vec::<String>::new());
    // A template pinned without a record, decided unchanged, is left as it is.
    let mut plain = old.clone();
    plain["spec"]["template"]["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove(DECISION);
    new_tag(&plain).1.assert_accepted_unchanged();
}
