//! Registry answers and Pod values are untrusted: a value no node can carry never
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

// ---- properties over hostile values ----

use image_arch_affinity::policy::Verdict;
use image_arch_affinity::read::selectors;
use image_arch_affinity::settings::names::check_label_value;
use proptest::prelude::*;

/// A value from a registry or a Pod: mostly ones nodes report, often one no node reports
/// (spaces, selector syntax, 64+ characters, unknown names, any string).
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["amd64", "arm64", "arm", "s390x", "ppc64le", "riscv64", "x86_64", "aarch64"]).prop_map(String::from),
        1 => prop::sample::select(vec!["arm 64", "s390x),pool in (zz", "amd64,arm64", "sparc64", "", "unknown", "ARM64", "amd64 "]).prop_map(String::from),
        1 => "[a-z0-9]{60,70}",
        1 => ".{0,20}",
    ]
}

fn os_value() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec!["linux", "linux", "windows", ""]).prop_map(String::from),
        1 => prop::sample::select(vec!["plan9", "Linux", "linux),x in (y", "unknown"]).prop_map(String::from),
        1 => ".{0,12}",
    ]
}

fn build_value() -> impl Strategy<Value = Option<String>> {
    prop::option::weighted(
        0.3,
        prop_oneof![
            3 => prop::sample::select(vec!["10.0.20348.2527", "10.0.17763.1", "10.0.26100"]).prop_map(String::from),
            1 => prop::sample::select(vec!["10.0.20348),node.kubernetes.io/windows-build in (1", "10.0", "10.0.99999999999"]).prop_map(String::from),
            1 => ".{0,24}",
        ],
    )
}

#[derive(Debug, Clone)]
struct Hostile {
    /// Per image: its index entries (os, architecture, os.version).
    images: Vec<Vec<(String, String, Option<String>)>>,
    /// nodeSelector `kubernetes.io/arch` / `kubernetes.io/os`, a term's arch values and operator.
    selector_arch: Option<String>,
    selector_os: Option<String>,
    term: Option<(&'static str, Vec<String>)>,
    /// The Pod's labels copied by matchNodeLabels.
    zone: String,
    read_nodes: bool,
    pin_windows_build: bool,
    nodes: Vec<(String, String, Option<String>)>,
}

fn hostile() -> impl Strategy<Value = Hostile> {
    (
        prop::collection::vec(
            prop::collection::vec((os_value(), value(), build_value()), 1..5),
            1..3,
        ),
        prop::option::weighted(0.3, value()),
        prop::option::weighted(0.1, os_value()),
        prop::option::weighted(
            0.4,
            (
                prop::sample::select(vec!["In", "NotIn"]),
                prop::collection::vec(value(), 1..4),
            ),
        ),
        prop_oneof![3 => Just("a".to_string()), 1 => ".{0,70}"],
        any::<bool>(),
        prop::bool::weighted(0.3),
        prop::collection::vec((os_value(), value(), build_value()), 0..6),
    )
        .prop_map(
            |(
                images,
                selector_arch,
                selector_os,
                term,
                zone,
                read_nodes,
                pin_windows_build,
                nodes,
            )| Hostile {
                images,
                selector_arch,
                selector_os,
                term,
                zone,
                read_nodes,
                pin_windows_build,
                nodes,
            },
        )
}

/// Every string a patch adds as a node label value (expression values, toleration values).
/// The label values in a patch's node selector requirements and tolerations, but those of the
/// requirements the Pod wrote itself (`own`: copied whole into the term of another OS when its
/// images run on several).
fn label_values(value: &Value, own: &[Value], found: &mut Vec<String>) {
    match value {
        Value::Object(_) if own.contains(value) => {}
        Value::Object(map) => {
            if map.contains_key("operator") {
                for v in map
                    .get("values")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    found.extend(v.as_str().map(String::from));
                }
                found.extend(map.get("value").and_then(Value::as_str).map(String::from));
            }
            map.values().for_each(|v| label_values(v, own, found));
        }
        Value::Array(items) => items.iter().for_each(|v| label_values(v, own, found)),
        _ => {}
    }
}

fn evaluate_hostile(case: &Hostile) -> (Run, Vec<String>) {
    let mut registry = FixtureRegistry::new();
    let mut images = Vec::new();
    for (index, entries) in case.images.iter().enumerate() {
        let name = format!("ghcr.io/hostile/image{index}:1");
        let platforms: Vec<Value> = entries
            .iter()
            .map(|(os, arch, build)| {
                let mut platform = json!({"os": os, "architecture": arch});
                if let Some(build) = build {
                    platform["os.version"] = json!(build);
                }
                platform
            })
            .collect();
        registry.index(&name, &index_of(&platforms));
        images.push(name);
    }
    let names: Vec<&str> = images.iter().map(String::as_str).collect();
    let mut spec = json!({});
    if let Some(arch) = &case.selector_arch {
        spec["nodeSelector"]["kubernetes.io/arch"] = json!(arch);
    }
    if let Some(os) = &case.selector_os {
        spec["nodeSelector"]["kubernetes.io/os"] = json!(os);
    }
    if let Some((operator, values)) = &case.term {
        spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": operator, "values": values}]}]}}});
    }
    let mut object = pod(&names, spec);
    object["metadata"]["labels"]["zone"] = json!(case.zone);
    let mut nodes = Vec::new();
    for (index, (os, arch, build)) in case.nodes.iter().enumerate() {
        let mut node = node(&format!("n{index}"), "linux", "amd64");
        node["metadata"]["labels"] = json!({"kubernetes.io/os": os, "kubernetes.io/arch": arch});
        if let Some(build) = build {
            node["metadata"]["labels"]["node.kubernetes.io/windows-build"] = json!(build);
        }
        node["status"]["nodeInfo"] = json!({"architecture": arch, "operatingSystem": os});
        nodes.push(node);
    }
    let mut cluster = FixtureCluster::of(nodes);
    // NodePools that name the same hostile values (requirements, labels, taints).
    cluster.node_pools = Some(
        case.nodes
            .iter()
            .enumerate()
            .map(|(index, (os, arch, _))| {
                let mut pool = node_pool(
                    &format!("p{index}"),
                    json!([{"key": "kubernetes.io/arch", "operator": "In", "values": [arch]},
                           {"key": "kubernetes.io/os", "operator": "NotIn", "values": [os, 7]}]),
                    json!([{"key": arch, "value": os, "effect": "NoSchedule"}]),
                );
                pool["spec"]["template"]["metadata"]["labels"] = json!({"kubernetes.io/os": os});
                pool
            })
            .collect(),
    );
    let settings = settings(
        json!({"readNodes": case.read_nodes, "pinWindowsBuild": case.pin_windows_build,
        "matchNodeLabels": ["zone"], "architectureTolerations": {"arm64": [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}]}}),
    );
    let run = run_in_cluster(
        &mut registry,
        &mut cluster,
        "Pod",
        "CREATE",
        &object,
        &Value::Null,
        &settings,
    );
    (run, cluster.calls)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, failure_persistence: None, ..ProptestConfig::default() })]

    /// No patch carries a value that is no label value, and every label selector sent is one of
    /// the fixed set, whatever the registry and the Pod say.
    #[test]
    fn hostile_values_reach_no_patch_and_no_selector(case in hostile()) {
        let (run, calls) = evaluate_hostile(&case);
        let mut values = Vec::new();
        let own: Vec<Value> = case.term.iter().map(|(operator, values)| {
            json!({"key": "kubernetes.io/arch", "operator": operator, "values": values})
        }).collect();
        if let Some(patch) = &run.patch {
            label_values(patch, &own, &mut values);
        }
        for value in &values {
            prop_assert!(check_label_value(value).is_ok(), "patch value {:?} in {:?}", value, run.patch);
        }
        let selectors = selectors::all();
        // The NodePool list, once, with no selector.
        prop_assert!(calls.iter().filter(|c| *c == NODE_POOLS_CALL).count() <= 1, "{:?}", calls);
        let calls: Vec<&String> = calls.iter().filter(|c| *c != NODE_POOLS_CALL).collect();
        for call in &calls {
            let selector = call.strip_prefix("list_resources_all v1/Node ").and_then(|c| c.split(" masks ").next());
            prop_assert!(selector.is_some_and(|s| selectors.iter().any(|k| k == s)), "selector of {}", call);
        }
        // The two lists of the Pod's OS, whether the cluster has Nodes of another, and the
        // Nodes without an architecture label.
        prop_assert!(calls.len() <= 4, "{:?}", calls);
        if let Verdict::Mutate(_) = run.decision.verdict {
            prop_assert!(run.patch.is_some());
        }
    }
}
