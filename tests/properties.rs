//! Properties of the decision over generated Pods, settings and registries. The oracles here are
//! written independently of the policy's code: node matching follows the Kubernetes semantics of
//! node selector terms, and the common architectures are recomputed from the generated images.
//! The full scheduling equivalence (every node-selection input, named-node terms, workload
//! templates) is in `tests/scheduling.rs`.

mod common;

use std::collections::BTreeSet;

use common::{run_with, FixtureRegistry, Run};
use image_arch_affinity::policy::Verdict;
use image_arch_affinity::settings::Settings;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const ARCHES: [&str; 5] = ["amd64", "arm64", "arm", "s390x", "ppc64le"];
const ZONES: [&str; 2] = ["a", "b"];
const LABEL_KEYS: [&str; 4] = [
    "kubernetes.io/arch",
    "beta.kubernetes.io/arch",
    "zone",
    "team",
];

/// A generated image: its platforms as (os, arch); served as an index or a single manifest.
#[derive(Debug, Clone)]
struct Image {
    platforms: Vec<(Option<&'static str>, &'static str)>,
    single: bool,
    attestations: usize,
    fails: bool,
}

fn image_strategy() -> impl Strategy<Value = Image> {
    (
        prop::collection::vec(
            (
                prop::sample::select(vec![Some("linux"), Some("windows"), None]),
                prop::sample::select(ARCHES.to_vec()),
            ),
            1..4,
        ),
        any::<bool>(),
        0..3usize,
        prop::bool::weighted(0.1),
    )
        .prop_map(|(platforms, single, attestations, fails)| Image {
            single: single && platforms.len() == 1 && platforms[0].0.is_some(),
            platforms,
            attestations,
            fails,
        })
}

fn name(index: usize) -> String {
    format!("registry.example.com/gen/image{index}:1")
}

fn registry_for(images: &[Image], reverse_entries: bool) -> FixtureRegistry {
    let mut registry = FixtureRegistry::default();
    for (index, image) in images.iter().enumerate() {
        let name = name(index);
        if image.fails {
            registry.fail(&name, "Host error: 500 Internal Server Error");
        } else if image.single {
            let (os, arch) = image.platforms[0];
            registry.single(
                &name,
                &json!({"manifest": {}, "digest": "sha256:x", "config": {"os": os, "architecture": arch}}).to_string(),
            );
        } else {
            let mut entries: Vec<Value> = image
                .platforms
                .iter()
                .map(|(os, arch)| {
                    let mut platform = json!({"architecture": arch});
                    if let Some(os) = os {
                        platform["os"] = json!(os);
                    }
                    json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:x", "size": 1, "platform": platform})
                })
                .collect();
            for _ in 0..image.attestations {
                entries.push(
                    json!({"platform": {"architecture": "unknown", "os": "unknown"},
                    "annotations": {"vnd.docker.reference.type": "attestation-manifest"}}),
                );
            }
            if reverse_entries {
                entries.reverse();
            }
            registry.index(
                &name,
                &json!({"schemaVersion": 2, "manifests": entries}).to_string(),
            );
        }
    }
    registry
}

fn expression_strategy() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(LABEL_KEYS.to_vec()),
        prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist"]),
        prop::sample::subsequence(
            ARCHES
                .iter()
                .chain(ZONES.iter())
                .copied()
                .collect::<Vec<_>>(),
            1..3,
        ),
    )
        .prop_map(|(key, operator, values)| match operator {
            "Exists" | "DoesNotExist" => json!({"key": key, "operator": operator}),
            _ => json!({"key": key, "operator": operator, "values": values}),
        })
}

fn term_strategy() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(expression_strategy(), 0..3),
        any::<bool>(),
    )
        .prop_map(|(expressions, extra)| {
            let mut term = json!({"matchExpressions": expressions});
            if extra {
                term["x-unknown-term-field"] = json!({"keep": true});
            }
            term
        })
}

#[derive(Debug, Clone)]
struct Case {
    images: Vec<Image>,
    containers: Vec<usize>,
    init_containers: Vec<usize>,
    node_selector: Option<&'static str>,
    terms: Option<Vec<Value>>,
    preferred: bool,
    tolerations: bool,
    settings: Value,
}

fn settings_strategy() -> impl Strategy<Value = Value> {
    (
        prop::sample::subsequence(ARCHES.to_vec(), 0..4),
        prop::sample::select(vec!["ignoreImage", "accept", "reject"]),
        prop::sample::select(vec!["reject", "accept"]),
        prop::option::of(prop::sample::select(ARCHES.to_vec())),
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(vec!["linux", "windows"]),
    )
        .prop_map(|(schedulable, lookup, no_common, preferred, tolerations, labels, os)| {
            let mut settings = json!({"schedulableArchitectures": schedulable, "onLookupFailure": lookup,
                "onNoCommonArchitecture": no_common, "defaultOperatingSystem": os});
            if let Some(preferred) = preferred {
                if schedulable.is_empty() || schedulable.contains(&preferred) {
                    settings["preferredArchitecture"] = json!(preferred);
                }
            }
            if tolerations {
                settings["architectureTolerations"] = json!({
                    "arm64": [{"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}],
                    "s390x": [{"key": "mainframe", "operator": "Exists"}]});
            }
            if labels {
                settings["matchNodeLabels"] = json!(["team"]);
            }
            settings
        })
}

fn case_strategy() -> impl Strategy<Value = Case> {
    prop::collection::vec(image_strategy(), 1..4).prop_flat_map(|images| {
        let count = images.len();
        (
            Just(images),
            prop::collection::vec(0..count, 1..5),
            prop::collection::vec(0..count, 0..2),
            prop::option::weighted(0.15, prop::sample::select(ARCHES.to_vec())),
            prop::option::weighted(0.5, prop::collection::vec(term_strategy(), 0..3)),
            any::<bool>(),
            any::<bool>(),
            settings_strategy(),
        )
            .prop_map(
                |(
                    images,
                    containers,
                    init_containers,
                    node_selector,
                    terms,
                    preferred,
                    tolerations,
                    settings,
                )| Case {
                    images,
                    containers,
                    init_containers,
                    node_selector,
                    terms,
                    preferred,
                    tolerations,
                    settings,
                },
            )
    })
}

fn pod_of(case: &Case, reverse_containers: bool) -> Value {
    let container =
        |i: &usize| json!({"name": format!("c{i}"), "image": name(*i), "x-unknown": [1, 2]});
    let mut containers: Vec<Value> = case.containers.iter().map(container).collect();
    if reverse_containers {
        containers.reverse();
    }
    let mut spec = json!({"containers": containers, "x-unknown-spec": {"deep": {"er": 1}}});
    if !case.init_containers.is_empty() {
        spec["initContainers"] = json!(case
            .init_containers
            .iter()
            .map(container)
            .collect::<Vec<_>>());
    }
    if let Some(arch) = case.node_selector {
        spec["nodeSelector"] = json!({"kubernetes.io/arch": arch});
    }
    let mut node_affinity = Map::new();
    if let Some(terms) = &case.terms {
        node_affinity.insert(
            "requiredDuringSchedulingIgnoredDuringExecution".into(),
            json!({"nodeSelectorTerms": terms}),
        );
    }
    if case.preferred {
        node_affinity.insert(
            "preferredDuringSchedulingIgnoredDuringExecution".into(),
            json!([{"weight": 3, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]),
        );
    }
    if !node_affinity.is_empty() {
        spec["affinity"] = json!({"nodeAffinity": node_affinity, "podAffinity": {"x": 1}});
    }
    if case.tolerations {
        spec["tolerations"] = json!([{"key": "mainframe", "operator": "Exists"}, {"key": "other", "operator": "Exists", "x-unknown": 1}]);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"team": "blue"}, "x-unknown-meta": 1}, "spec": spec})
}

fn settings_of(case: &Case) -> Settings {
    common::settings(case.settings.clone())
}

fn evaluate(case: &Case, reverse_containers: bool, reverse_entries: bool) -> (Value, Run) {
    let pod = pod_of(case, reverse_containers);
    let mut registry = registry_for(&case.images, reverse_entries);
    let run = run_with(&mut registry, &pod, &settings_of(case));
    (pod, run)
}

/// Kubernetes semantics: does a node with these labels match a node selector term?
fn term_matches(term: &Value, labels: &Map<String, Value>) -> bool {
    let expressions = term["matchExpressions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if expressions.is_empty() && term["matchFields"].as_array().is_none_or(Vec::is_empty) {
        return false;
    }
    expressions.iter().all(|expression| {
        let key = expression["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = expression["values"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let label = labels.get(key).and_then(Value::as_str);
        match expression["operator"].as_str() {
            Some("In") => label.is_some_and(|l| values.contains(&l)),
            Some("NotIn") => label.is_none_or(|l| !values.contains(&l)),
            Some("Exists") => label.is_some(),
            Some("DoesNotExist") => label.is_none(),
            _ => false,
        }
    })
}

/// The architectures of nodes the Pod could be scheduled on by its nodeSelector and required
/// terms, over every node we can imagine (each architecture, zone and team).
fn schedulable_on(pod: &Value) -> BTreeSet<&'static str> {
    let spec = &pod["spec"];
    let mut result = BTreeSet::new();
    for arch in ARCHES {
        for zone in ZONES {
            for team in ["blue", "red"] {
                let labels: Map<String, Value> = serde_json::from_value(json!({
                    "kubernetes.io/arch": arch, "beta.kubernetes.io/arch": arch, "zone": zone, "team": team}))
                .unwrap();
                let selector_ok = spec["nodeSelector"]
                    .as_object()
                    .is_none_or(|s| s.iter().all(|(k, v)| labels.get(k) == Some(v)));
                let terms = spec["affinity"]["nodeAffinity"]
                    ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                    .as_array();
                let terms_ok = match terms {
                    None => true,
                    Some(terms) if terms.is_empty() => true,
                    Some(terms) => terms.iter().any(|t| term_matches(t, &labels)),
                };
                if selector_ok && terms_ok {
                    result.insert(arch);
                }
            }
        }
    }
    result
}

/// The architectures every looked-up image runs on for the Pod's OS (images that fail are left
/// out, as with `onLookupFailure: ignoreImage`), within the schedulable ones.
fn expected_common(case: &Case) -> BTreeSet<&str> {
    let os = case.settings["defaultOperatingSystem"]
        .as_str()
        .unwrap_or("linux");
    let used: BTreeSet<usize> = case
        .containers
        .iter()
        .chain(&case.init_containers)
        .copied()
        .collect();
    let mut common: Option<BTreeSet<&str>> = None;
    for index in used {
        let image = &case.images[index];
        if image.fails {
            continue;
        }
        let arches: BTreeSet<&str> = image
            .platforms
            .iter()
            .filter(|(platform_os, _)| platform_os.is_none_or(|o| o == os))
            .map(|(_, arch)| *arch)
            .collect();
        common = Some(match common {
            None => arches,
            Some(c) => c.intersection(&arches).copied().collect(),
        });
    }
    let mut common = common.unwrap_or_default();
    let schedulable: BTreeSet<&str> = case.settings["schedulableArchitectures"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !schedulable.is_empty() {
        common = common.intersection(&schedulable).copied().collect();
    }
    common
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, .. ProptestConfig::default() })]

    /// Every outcome is well formed, a mutation only adds, and a second run changes nothing.
    #[test]
    fn mutations_only_add_and_are_idempotent(case in case_strategy()) {
        let (pod, run) = evaluate(&case, false, false);
        match &run.decision.verdict {
            Verdict::Reject(message) => prop_assert!(message.starts_with("image-arch-affinity: ")),
            Verdict::Accept => {}
            Verdict::Mutate(_) => {
                let patch = run.patch.clone().unwrap();
                for op in patch.as_array().unwrap() {
                    prop_assert_eq!(&op["op"], "add", "the patch removes or replaces: {}", op);
                }
                let patched = common::apply(&pod, &patch);
                let mut registry = registry_for(&case.images, false);
                let again = run_with(&mut registry, &patched, &settings_of(&case));
                prop_assert_eq!(&again.decision.verdict, &Verdict::Accept, "second run on {}", patched);
            }
        }
        for warning in &run.decision.warnings {
            prop_assert!(warning.starts_with("image-arch-affinity: "));
        }
    }

    /// Once the policy accepted a Pod it could pin (every lookup worked), the Pod can only be
    /// scheduled on architectures all its images run on.
    #[test]
    fn accepted_pods_land_only_on_common_architectures(case in case_strategy()) {
        prop_assume!(case.images.iter().all(|i| !i.fails));
        let (pod, run) = evaluate(&case, false, false);
        let common = expected_common(&case);
        let result = match &run.decision.verdict {
            Verdict::Reject(_) => return Ok(()),
            Verdict::Accept => pod.clone(),
            Verdict::Mutate(object) => object.clone(),
        };
        // With `onNoCommonArchitecture: accept` the operator lets such Pods through, with a
        // warning.
        let accepted_without_constraint = run.decision.warnings.iter().any(|w| w.contains("onNoCommonArchitecture: accept"));
        if accepted_without_constraint {
            return Ok(());
        }
        if common.is_empty() {
            prop_assert!(accepted_without_constraint, "no common architecture but accepted: {:?}", run);
            return Ok(());
        }
        let reachable = schedulable_on(&result);
        let schedulable: BTreeSet<&str> = case.settings["schedulableArchitectures"].as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let reachable: BTreeSet<&str> = if schedulable.is_empty() {
            reachable
        } else {
            reachable.intersection(&schedulable).copied().collect()
        };
        prop_assert!(reachable.is_subset(&common), "reachable {:?} common {:?} result {}", reachable, common, result["spec"]);
    }

    /// Nothing the user wrote is lost: every input term keeps its expressions (as a prefix), every
    /// toleration stays, in order.
    #[test]
    fn user_constraints_are_kept(case in case_strategy()) {
        let (pod, run) = evaluate(&case, false, false);
        let Verdict::Mutate(result) = &run.decision.verdict else { return Ok(()) };
        let path = |v: &Value| v["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].clone();
        if let Some(before) = path(&pod).as_array() {
            let after = path(result);
            for (index, term) in before.iter().enumerate() {
                let old = term["matchExpressions"].as_array().cloned().unwrap_or_default();
                let new = after[index]["matchExpressions"].as_array().cloned().unwrap_or_default();
                prop_assert_eq!(&new[..old.len()], &old[..]);
                prop_assert_eq!(&after[index]["x-unknown-term-field"], &term["x-unknown-term-field"]);
            }
        }
        let before = pod["spec"]["tolerations"].as_array().cloned().unwrap_or_default();
        let after = result["spec"]["tolerations"].as_array().cloned().unwrap_or_default();
        prop_assert_eq!(&after[..before.len()], &before[..]);
        prop_assert_eq!(&result["spec"]["x-unknown-spec"], &pod["spec"]["x-unknown-spec"]);
        prop_assert_eq!(&result["spec"]["containers"], &pod["spec"]["containers"]);
    }

    /// The order of containers and of index entries does not change the decision.
    #[test]
    fn order_does_not_matter(case in case_strategy()) {
        let (_, straight) = evaluate(&case, false, false);
        let (_, reversed_entries) = evaluate(&case, false, true);
        prop_assert_eq!(&straight.decision, &reversed_entries.decision);
        let (_, reversed_containers) = evaluate(&case, true, false);
        match (&straight.decision.verdict, &reversed_containers.decision.verdict) {
            (Verdict::Reject(_), Verdict::Reject(_)) | (Verdict::Accept, Verdict::Accept) => {}
            (Verdict::Mutate(_), Verdict::Mutate(_)) => prop_assert_eq!(&straight.patch, &reversed_containers.patch),
            (a, b) => prop_assert!(false, "{:?} vs {:?}", a, b),
        }
    }

    /// A Pod whose every required term already admits only common architectures, with no
    /// tolerations, preference or label settings, gets nothing added.
    #[test]
    fn nothing_added_when_already_pinned(case in case_strategy(), arch in prop::sample::select(ARCHES.to_vec())) {
        let mut case = case;
        case.node_selector = None;
        case.terms = Some(vec![json!({"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}]})]);
        for key in ["architectureTolerations", "preferredArchitecture", "matchNodeLabels"] {
            case.settings.as_object_mut().unwrap().remove(key);
        }
        let (_, run) = evaluate(&case, false, false);
        prop_assert!(!matches!(run.decision.verdict, Verdict::Mutate(_)), "{:?}", run);
    }
}

/// Keys that the sparse reading treats specially (and some it does not), so that generated
/// objects put every kind of value where the policy reads and edits.
const KEYS: [&str; 16] = [
    "metadata",
    "spec",
    "containers",
    "initContainers",
    "image",
    "affinity",
    "nodeAffinity",
    "tolerations",
    "annotations",
    "labels",
    "nodeSelector",
    "template",
    "os",
    "ownerReferences",
    "x-unknown",
    "kubernetes.io/arch",
];
const IMAGES: [&str; 4] = ["multi:1", "list:1", "ghcr.io/org/amd64-only:1", "busybox"];

/// Any JSON value, objects keyed from `KEYS`.
fn json_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        // Floats with a short decimal form: serde_json (without its float_roundtrip feature, which
        // would cost the module 54 KB) may read long ones off by one unit in the last place, on both
        // paths alike; the API server sends no floats in the fields the policy rewrites.
        (-1_000_000i64..1_000_000).prop_map(|n| Value::from(n as f64 / 8.0)),
        prop::sample::select(IMAGES.to_vec()).prop_map(Value::from),
        "[a-z\"\\\\é\n]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(KEYS.to_vec()), inner, 0..5).prop_map(
                |map| Value::Object(map.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            ),
        ]
    })
}

/// A Pod (or Pod template) whose fields are sometimes what the policy expects and sometimes any
/// JSON at all.
fn pod_like_strategy() -> impl Strategy<Value = Value> {
    let container = prop_oneof![
        3 => (prop::sample::select(IMAGES.to_vec()), json_strategy()).prop_map(|(image, extra)| {
            let mut container = json!({"name": "c", "image": image});
            if let Value::Object(extra) = extra {
                for (key, value) in extra.into_iter().filter(|(key, _)| key != "image") {
                    container[key] = value;
                }
            }
            container
        }),
        1 => json_strategy(),
    ];
    (
        prop::collection::vec(container, 0..4),
        json_strategy(),
        json_strategy(),
        json_strategy(),
    )
        .prop_map(|(containers, spec_extra, metadata, top_extra)| {
            let mut spec = json!({"containers": containers});
            if let Value::Object(extra) = spec_extra {
                for (key, value) in extra.into_iter().filter(|(key, _)| key != "containers") {
                    spec[key] = value;
                }
            }
            let mut pod = json!({"apiVersion": "v1", "metadata": metadata, "spec": spec});
            if let Value::Object(extra) = top_extra {
                for (key, value) in extra.into_iter().filter(|(key, _)| key != "spec") {
                    pod[key] = value;
                }
            }
            pod
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Whatever the object holds, reading it sparsely and writing it back decides and mutates
    /// exactly as building it whole (the check is in `common::run_update`, for every run).
    #[test]
    fn sparse_reading_decides_as_the_whole_object(
        pod in pod_like_strategy(),
        old in pod_like_strategy(),
        kind in prop::sample::select(vec!["Pod", "Deployment", "CronJob", "DaemonSet"]),
        update in any::<bool>(),
        mut settings in settings_strategy(),
        templates in prop::sample::select(vec!["validate", "mutate"]),
    ) {
        settings["workloadTemplates"] = json!(templates);
        settings["daemonSetTemplates"] = json!(templates);
        let wrap = |pod: Value| match kind {
            "Pod" => pod,
            "CronJob" => json!({"metadata": {"name": "w"}, "spec": {"jobTemplate": {"spec": {"template": pod}}}}),
            _ => json!({"metadata": {"name": "w"}, "spec": {"replicas": 2, "template": pod}}),
        };
        let (object, old_object) = (wrap(pod), if update { wrap(old) } else { Value::Null });
        let settings: Settings = serde_json::from_value(settings).unwrap();
        common::run_update(
            &mut FixtureRegistry::new(),
            kind,
            if update { "UPDATE" } else { "CREATE" },
            &object,
            &old_object,
            &settings,
        );
    }
}
