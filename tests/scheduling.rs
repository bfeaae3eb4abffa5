//! Scheduling equivalence: the policy's decision judged against a scheduler oracle over a universe
//! of nodes, for generated Pods and generated workload templates.
//!
//! The oracle is Kubernetes' node matching as the API reference states it (PodSpec.nodeSelector,
//! NodeAffinity.requiredDuringSchedulingIgnoredDuringExecution, NodeSelectorTerm,
//! NodeSelectorRequirement), written here without reading `src/`:
//! - a node matches the nodeSelector when it has every key with exactly that value;
//! - the node selector terms are ORed; a term's matchExpressions and matchFields are ANDed; a
//!   term with neither matches no node; no required node affinity constrains nothing, and one
//!   with no terms (`{}`, `nodeSelectorTerms: []`) matches no node (the API server refuses it);
//! - `In`: the label is present and its value one of the values; `NotIn`: absent, or not one of
//!   them; `Exists` / `DoesNotExist`: present / absent; `Gt` / `Lt`: present, and its value, read as
//!   an integer, greater / less than the single value read as an integer;
//! - matchFields select on the node's fields: `metadata.name` with `In` / `NotIn`.
//!
//! The universe: every architecture (those of the images, riscv64, 386, which `Gt` / `Lt` can
//! admit, and loong64, which no requirement names) x OS, with and without the beta labels, every value of one
//! other label (`tier`, including absent) and every node name, so every name carries every
//! architecture. A Pod runs on the nodes of its OS (`spec.os.name`, else its nodeSelector's
//! `kubernetes.io/os` or `beta.kubernetes.io/os`, else `defaultOperatingSystem`: the operator's
//! statement of which nodes the Pods that do not say run on) and, when `schedulableArchitectures`
//! is set, of those architectures (the cluster has no others).
//!
//! An image runs on a node when it has a build of the node's OS and architecture, or when it is a
//! WebAssembly image (only `wasi/wasm`-like builds, or a Spin artifact: a WebAssembly shim runs it
//! on any node), or has a WebAssembly build and the Pod's `runtimeClassName` is one of
//! `wasmRuntimeClasses` (generated images, settings and Pods have all three). The images are the
//! containers' and the image volumes' (`spec.volumes[].image.reference`); a platform-less
//! artifact (a model) that an image volume mounts runs on any node.
//!
//! For every Pod the skip rules of docs/design.md do not exempt:
//! - rejected (or, with `onNoCommonArchitecture: accept`, warned about and left unchanged) <=>
//!   no node the Pod admits has an architecture every image runs on;
//! - accepted => the resulting Pod admits exactly the nodes the original admits whose
//!   architecture every image runs on, has the `architectureTolerations` of exactly those
//!   architectures that it did not have, and run again it is accepted with no patch;
//! - every value the user wrote is kept (the result contains the original);
//! - with `matchNodeLabels: [zone]` and a Pod labelled `zone`, "exactly the nodes" is further
//!   those whose `zone` is the Pod's (the universe has every zone for every other label);
//! - the preferred term for the annotation's architecture (else `preferredArchitecture`'s) is
//!   added exactly when the nodes the result admits have more than one architecture, that one
//!   among them, and the Pod had no preferred term on `kubernetes.io/arch`; else the preferred
//!   terms are left as they were;
//! - a workload template is changed only under `workloadTemplates: mutate` (a DaemonSet's also
//!   under `daemonSetTemplates: mutate`): under `validate` (the default) an accepted template has
//!   no patch, and a DaemonSet is warned about exactly when its template admits a node whose
//!   architecture its images do not run on.
//!
//! The seed is random, printed, and can be set with `SCHEDULING_SEED=<u64>`;
//! `SCHEDULING_CASES` sets the number of cases per property (default 10000).

mod common;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use common::{run_request, run_update, FixtureRegistry};
use image_arch_affinity::policy::Verdict;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{json, Map, Value};

// ---- the oracle ----

/// A node: its name and labels.
#[derive(Debug, Clone)]
struct Node {
    name: String,
    labels: BTreeMap<&'static str, String>,
}

impl Node {
    fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }
    fn arch(&self) -> &str {
        self.label("kubernetes.io/arch").unwrap_or_default()
    }
    fn os(&self) -> &str {
        self.label("kubernetes.io/os").unwrap_or_default()
    }
}

fn strings(values: &Value) -> Vec<&str> {
    values
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// NodeSelectorRequirement against a label's value (`None`: no such label).
fn requirement_matches(requirement: &Value, value: Option<&str>) -> bool {
    let values = strings(&requirement["values"]);
    let integer = |text: &str| text.parse::<i64>().ok();
    let compare = |ordering: std::cmp::Ordering| match (value.and_then(integer), values.as_slice())
    {
        (Some(value), [bound]) => integer(bound).is_some_and(|bound| value.cmp(&bound) == ordering),
        _ => false,
    };
    match requirement["operator"].as_str() {
        Some("In") => value.is_some_and(|v| values.contains(&v)),
        Some("NotIn") => value.is_none_or(|v| !values.contains(&v)),
        Some("Exists") => value.is_some(),
        Some("DoesNotExist") => value.is_none(),
        Some("Gt") => compare(std::cmp::Ordering::Greater),
        Some("Lt") => compare(std::cmp::Ordering::Less),
        _ => false,
    }
}

fn term_matches(term: &Value, node: &Node) -> bool {
    let list = |name: &str| term[name].as_array().map(Vec::as_slice).unwrap_or_default();
    let (expressions, fields) = (list("matchExpressions"), list("matchFields"));
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions.iter().all(|expression| {
        requirement_matches(
            expression,
            node.label(expression["key"].as_str().unwrap_or_default()),
        )
    }) && fields.iter().all(|field| {
        field["key"] == "metadata.name"
            && matches!(field["operator"].as_str(), Some("In") | Some("NotIn"))
            && requirement_matches(field, Some(&node.name))
    })
}

/// Whether the scheduler may place a Pod with this spec on `node`.
fn admits(spec: &Value, node: &Node) -> bool {
    let selector_ok = spec["nodeSelector"].as_object().is_none_or(|selector| {
        selector
            .iter()
            .all(|(key, value)| value.as_str().is_some() && node.label(key) == value.as_str())
    });
    let required =
        &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    let terms_ok = required.is_null()
        || required["nodeSelectorTerms"]
            .as_array()
            .is_some_and(|terms| terms.iter().any(|term| term_matches(term, node)));
    selector_ok && terms_ok
}

const ARCHES: [&str; 5] = ["amd64", "arm64", "arm", "s390x", "ppc64le"];
/// Node architectures: those of the images, and two no image has, one of them an integer (which
/// `Gt` / `Lt` on the architecture can admit).
const NODE_ARCHES: [&str; 7] = [
    "amd64", "arm64", "arm", "s390x", "ppc64le", "riscv64", "386",
];
/// An architecture of nodes that no requirement names (a cluster can have architectures no Pod
/// mentions: `NotIn` admits them).
const UNNAMED_ARCH: &str = "loong64";
const OSES: [&str; 2] = ["linux", "windows"];
const NAMES: [&str; 3] = ["node-1", "node-7", "other"];
const TIERS: [Option<&str>; 6] = [None, Some("0"), Some("1"), Some("2"), Some("3"), Some("02")];
/// Values of the `zone` label, which `matchNodeLabels` copies from the Pod's labels. No generated
/// requirement names it, so every architecture has every zone whatever the other labels.
const ZONES: [&str; 2] = ["a", "b"];

fn universe() -> Vec<Node> {
    let mut nodes = Vec::new();
    for os in OSES {
        for arch in NODE_ARCHES.into_iter().chain([UNNAMED_ARCH]) {
            for beta in [true, false] {
                for (tier, zone) in TIERS.iter().flat_map(|t| ZONES.map(|z| (*t, z))) {
                    for name in NAMES {
                        let mut labels = BTreeMap::new();
                        labels.insert("zone", zone.to_string());
                        labels.insert("kubernetes.io/arch", arch.to_string());
                        labels.insert("kubernetes.io/os", os.to_string());
                        if beta {
                            labels.insert("beta.kubernetes.io/arch", arch.to_string());
                            labels.insert("beta.kubernetes.io/os", os.to_string());
                        }
                        if let Some(tier) = tier {
                            labels.insert("tier", tier.to_string());
                        }
                        nodes.push(Node {
                            name: name.to_string(),
                            labels,
                        });
                    }
                }
            }
        }
    }
    nodes
}

// ---- generated cases ----

#[derive(Debug, Clone)]
struct Image {
    /// Its native platforms (none for a WebAssembly-only image).
    platforms: Vec<(Option<&'static str>, &'static str)>,
    single: bool,
    fails: bool,
    wasm: Wasm,
}

/// The WebAssembly builds of a generated image.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wasm {
    None,
    /// A `wasi/wasm` entry next to the native ones: run where the Pod's RuntimeClass is one of
    /// `wasmRuntimeClasses`, else the native entries count.
    Entry,
    /// Only WebAssembly builds (`wasi/wasm` and `wasip2/wasm` entries, or a `wasip1/wasm`
    /// config): runs on any node.
    Only,
    /// A Spin application artifact: runs on any node.
    Spin,
}

/// The RuntimeClass whose handler is a WebAssembly shim when the settings list it.
const WASM_CLASS: &str = "wasmtime-spin-v2";

fn image_strategy() -> impl Strategy<Value = Image> {
    // Random platforms (often no architecture in common with the other images or with the Pod's
    // constraints), or a multi-architecture Linux image as most are.
    let multi_arch = prop::sample::subsequence(ARCHES.to_vec(), 3..6).prop_map(|arches| {
        arches
            .into_iter()
            .map(|arch| (Some("linux"), arch))
            .collect::<Vec<_>>()
    });
    (
        prop_oneof![1 => prop::collection::vec(
            (
                prop::sample::select(vec![
                    Some("linux"),
                    Some("linux"),
                    Some("linux"),
                    Some("windows"),
                    None,
                ]),
                prop::sample::select(vec![
                    "amd64", "amd64", "amd64", "arm64", "arm64", "arm64", "arm", "s390x", "ppc64le",
                ]),
            ),
            1..6,
        ), 6 => multi_arch],
        any::<bool>(),
        prop::bool::weighted(0.04),
        prop::sample::select(
            [Wasm::None; 14]
                .into_iter()
                .chain([Wasm::Entry, Wasm::Entry, Wasm::Only, Wasm::Spin])
                .collect::<Vec<_>>(),
        ),
    )
        .prop_map(|(platforms, single, fails, wasm)| match wasm {
            Wasm::None => Image {
                single: single && platforms.len() == 1 && platforms[0].0.is_some(),
                platforms,
                fails,
                wasm,
            },
            Wasm::Entry => Image {
                single: false,
                platforms,
                fails,
                wasm,
            },
            Wasm::Only | Wasm::Spin => Image {
                single,
                platforms: Vec::new(),
                fails,
                wasm,
            },
        })
}

fn image_name(index: usize) -> String {
    format!("registry.example.com/gen/image{index}:1")
}

/// A platform-less artifact (a model) that image volumes mount: it constrains nothing.
const ARTIFACT: &str = "registry.example.com/gen/model:1";

fn registry_for(images: &[Image]) -> FixtureRegistry {
    let mut registry = FixtureRegistry::default();
    registry.artifact(
        ARTIFACT,
        &json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "artifactType": "application/vnd.cncf.model.manifest.v1+json",
            "config": {"mediaType": "application/vnd.cncf.model.config.v1+json", "digest": "sha256:x", "size": 1},
            "layers": [{"mediaType": "application/vnd.cncf.model.weight.v1.raw", "digest": "sha256:x", "size": 1}]}),
        None,
    );
    for (index, image) in images.iter().enumerate() {
        let name = image_name(index);
        if image.fails {
            registry.fail(
                &name,
                "Host error: 500 Internal Server Error\nStack backtrace:\n 0: x",
            );
        } else if image.wasm == Wasm::Spin {
            let manifest = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.fermyon.spin.application.v1+config", "digest": "sha256:x", "size": 1},
                "layers": [{"mediaType": "application/vnd.wasm.content.layer.v1+wasm", "digest": "sha256:x", "size": 1}]});
            registry.artifact(&name, &manifest, None);
        } else if image.single {
            let (os, arch) = match image.wasm {
                Wasm::Only => (Some("wasip1"), "wasm"),
                _ => image.platforms[0],
            };
            registry.single(
                &name,
                &json!({"manifest": {}, "digest": "sha256:x", "config": {"os": os, "architecture": arch}})
                    .to_string(),
            );
        } else {
            let wasm: &[(Option<&str>, &str)] = match image.wasm {
                Wasm::Entry => &[(Some("wasi"), "wasm")],
                Wasm::Only => &[(Some("wasi"), "wasm"), (Some("wasip2"), "wasm")],
                Wasm::None | Wasm::Spin => &[],
            };
            let entries: Vec<Value> = image
                .platforms
                .iter()
                .chain(wasm)
                .map(|(os, arch)| {
                    let mut platform = json!({"architecture": arch});
                    if let Some(os) = os {
                        platform["os"] = json!(os);
                    }
                    json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:x", "size": 1, "platform": platform})
                })
                .collect();
            registry.index(
                &name,
                &json!({"schemaVersion": 2, "manifests": entries}).to_string(),
            );
        }
    }
    registry
}

const ARCH: &str = "kubernetes.io/arch";
const BETA_ARCH: &str = "beta.kubernetes.io/arch";
const OS: &str = "kubernetes.io/os";
const BETA_OS: &str = "beta.kubernetes.io/os";

/// Values that a requirement on `key` may name.
fn values_for(key: &'static str) -> Vec<&'static str> {
    match key {
        ARCH | BETA_ARCH => NODE_ARCHES.to_vec(),
        OS | BETA_OS => vec!["linux", "linux", "windows"],
        _ => vec!["1", "2"],
    }
}

fn expression_strategy() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        ARCH, ARCH, ARCH, ARCH, BETA_ARCH, OS, BETA_OS, "tier", "tier", "tier",
    ])
    .prop_flat_map(|key| {
        (
            prop::sample::select(vec![
                "In",
                "In",
                "In",
                "In",
                "NotIn",
                "NotIn",
                "NotIn",
                "NotIn",
                "Exists",
                "Exists",
                "DoesNotExist",
                "Gt",
                "Lt",
            ]),
            prop::sample::subsequence(values_for(key), 1..values_for(key).len().min(3) + 1),
            // Bounds at and below 0: integer label values have no sign, so `Lt 0` admits none.
            prop::sample::select(vec!["1", "2", "0", "-1"]),
        )
            .prop_map(move |(operator, values, bound)| match operator {
                "Exists" | "DoesNotExist" => json!({"key": key, "operator": operator}),
                "Gt" | "Lt" => json!({"key": key, "operator": operator, "values": [bound]}),
                _ => json!({"key": key, "operator": operator, "values": values}),
            })
    })
}

fn field_strategy() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["In", "In", "NotIn"]),
        prop::sample::select(vec!["node-1", "node-7"]),
    )
        .prop_map(|(operator, name)| {
            json!({"key": "metadata.name", "operator": operator, "values": [name]})
        })
}

fn term_strategy() -> impl Strategy<Value = Value> {
    (
        prop_oneof![1 => Just(Vec::new()), 8 => prop::collection::vec(expression_strategy(), 1..3)],
        prop::option::weighted(0.3, prop::collection::vec(field_strategy(), 1..3)),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(expressions, fields, extra)| {
            let mut term = Map::new();
            if !expressions.is_empty() || fields.is_none() {
                term.insert("matchExpressions".into(), json!(expressions));
            }
            if let Some(fields) = fields {
                term.insert("matchFields".into(), json!(fields));
            }
            if extra {
                term.insert("x-unknown-term-field".into(), json!({"keep": true}));
            }
            Value::Object(term)
        })
}

fn selector_strategy() -> impl Strategy<Value = Option<Value>> {
    prop::option::weighted(
        0.4,
        (
            prop::option::weighted(
                0.45,
                prop::sample::select(vec![
                    "amd64", "amd64", "arm64", "arm64", "arm", "s390x", "ppc64le", "riscv64",
                ]),
            ),
            prop::option::weighted(0.1, prop::sample::select(NODE_ARCHES.to_vec())),
            prop::option::weighted(
                0.2,
                prop::sample::select(vec!["linux", "linux", "linux", "windows"]),
            ),
            prop::option::weighted(
                0.1,
                prop::sample::select(vec!["linux", "linux", "linux", "windows"]),
            ),
            prop::option::weighted(0.2, prop::sample::select(vec!["1", "2", "3"])),
        )
            .prop_map(|(arch, beta_arch, os, beta_os, tier)| {
                let mut selector = Map::new();
                for (key, value) in [
                    (ARCH, arch),
                    (BETA_ARCH, beta_arch),
                    (OS, os),
                    (BETA_OS, beta_os),
                    ("tier", tier),
                ] {
                    if let Some(value) = value {
                        selector.insert(key.into(), json!(value));
                    }
                }
                Value::Object(selector)
            }),
    )
}

/// The required node affinity: absent, `{}`, no terms, or terms.
fn required_strategy() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        8 => Just(None),
        1 => Just(Some(json!({}))),
        1 => Just(Some(json!({"nodeSelectorTerms": []}))),
        18 => prop::collection::vec(term_strategy(), 1..4).prop_map(|terms| Some(json!({"nodeSelectorTerms": terms}))),
    ]
}

fn settings_strategy() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            2 => Just(Vec::new()),
            1 => prop::sample::subsequence(ARCHES.to_vec(), 1..5)
        ],
        prop::sample::select(vec!["ignoreImage", "ignoreImage", "accept", "reject"]),
        prop::sample::select(vec!["reject", "reject", "accept"]),
        prop::option::of(prop::sample::select(ARCHES.to_vec())),
        any::<bool>(),
        prop::sample::select(vec!["linux"; 15].into_iter().chain(["windows"]).collect::<Vec<_>>()),
        // workloadTemplates, daemonSetTemplates: `validate` (the default, also when absent) or `mutate`.
        prop::sample::select(vec![None, Some("validate")].into_iter().chain([Some("mutate"); 10]).collect::<Vec<_>>()),
        prop::sample::select(vec![None, Some("validate"), Some("mutate"), Some("mutate")]),
        prop::bool::weighted(0.3),
        (prop::bool::weighted(0.5), prop::bool::weighted(0.4)),
    )
        .prop_map(|(schedulable, lookup, no_common, preferred, tolerations, os, workloads, daemon_sets, match_labels, (wasm_classes, several_oses))| {
            let mut settings = json!({"schedulableArchitectures": schedulable, "onLookupFailure": lookup,
                "onNoCommonArchitecture": no_common, "defaultOperatingSystem": os});
            // A cluster of Linux and Windows nodes (clusterOperatingSystems), else of the Pods'
            // own OS only.
            if several_oses {
                settings["clusterOperatingSystems"] = json!(["linux", "windows"]);
            }
            if wasm_classes {
                settings["wasmRuntimeClasses"] = json!(["wasmedge", WASM_CLASS]);
            }
            if let Some(mode) = workloads {
                settings["workloadTemplates"] = json!(mode);
            }
            if let Some(mode) = daemon_sets {
                settings["daemonSetTemplates"] = json!(mode);
            }
            if match_labels {
                settings["matchNodeLabels"] = json!(["zone"]);
            }
            if let Some(preferred) = preferred {
                if schedulable.is_empty() || schedulable.contains(&preferred) {
                    settings["preferredArchitecture"] = json!(preferred);
                }
            }
            if tolerations {
                settings["architectureTolerations"] = json!(TOLERATIONS.clone());
            }
            settings
        })
}

static TOLERATIONS: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    json!({
        "arm64": [{"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}],
        "s390x": [{"key": "mainframe", "operator": "Exists"}],
        "amd64": [{"key": "pool", "operator": "Equal", "value": "x86", "effect": "NoSchedule"}]})
});

#[derive(Debug, Clone)]
struct Case {
    images: Vec<Image>,
    /// The Pod (or the Pod template: its `metadata` and `spec`).
    pod: Value,
    settings: Value,
    /// Skip rules: bound to a node, controlled by a DaemonSet, an UPDATE.
    exempt: Option<&'static str>,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    prop::collection::vec(image_strategy(), 1..3).prop_flat_map(|images| {
        let count = images.len();
        (
            Just(images),
            prop::collection::vec(0..count, 1..4),
            prop::collection::vec(0..count, 0..2),
            selector_strategy(),
            required_strategy(),
            prop::sample::select(vec![None, None, None, None, None, None, None, None, None, None, Some(""), Some("linux"), Some("linux"), Some("windows")]),
            (
                prop::sample::select(vec![None, None, None, Some("tier"), Some("tier"), Some(ARCH)]),
                any::<bool>(),
                prop::option::weighted(0.3, prop::sample::select(vec!["arm64", "amd64", "s390x", "bogus"])),
                prop::option::weighted(0.6, prop::sample::select(ZONES.to_vec())),
            ),
            settings_strategy(),
            (
                prop_oneof![30 => Just(None), 1 => Just(Some("nodeName")), 1 => Just(Some("daemonSet")), 1 => Just(Some("update"))],
                prop::sample::select(vec![None, None, Some(WASM_CLASS), Some("runc")]),
                // Image volumes: of the generated images, and a platform-less artifact.
                prop_oneof![2 => Just(Vec::new()), 1 => prop::collection::vec(0..count, 1..3)],
                prop::bool::weighted(0.2),
            ),
        )
            .prop_map(
                |(images, containers, init, selector, required, os_name, (preferred, tolerations, annotation, zone), settings, (exempt, runtime_class, volumes, artifact))| {
                    let container = |i: &usize| json!({"name": format!("c{i}"), "image": image_name(*i), "x-unknown": [1, 2]});
                    let mut spec = json!({"containers": containers.iter().map(container).collect::<Vec<_>>(),
                        "x-unknown-spec": {"deep": {"er": 1}}});
                    if !init.is_empty() {
                        spec["initContainers"] = json!(init.iter().map(container).collect::<Vec<_>>());
                    }
                    let volume = |(i, reference): (usize, String)| json!({"name": format!("v{i}"), "image": {"reference": reference, "pullPolicy": "IfNotPresent", "x-unknown": 1}});
                    let references = volumes.iter().map(|i| image_name(*i)).chain(artifact.then(|| ARTIFACT.to_string()));
                    let volumes: Vec<Value> = references.enumerate().map(volume).collect();
                    if !volumes.is_empty() {
                        spec["volumes"] = json!(volumes);
                    }
                    if let Some(selector) = selector {
                        spec["nodeSelector"] = selector;
                    }
                    let mut node_affinity = Map::new();
                    if let Some(required) = required {
                        node_affinity.insert("requiredDuringSchedulingIgnoredDuringExecution".into(), required);
                    }
                    if let Some(key) = preferred {
                        let value = if key == ARCH { "s390x" } else { "1" };
                        node_affinity.insert("preferredDuringSchedulingIgnoredDuringExecution".into(),
                            json!([{"weight": 3, "preference": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}}]));
                    }
                    if !node_affinity.is_empty() {
                        spec["affinity"] = json!({"nodeAffinity": node_affinity, "podAffinity": {"x": 1}});
                    }
                    if let Some(name) = os_name {
                        spec["os"] = json!({"name": name});
                    }
                    if let Some(class) = runtime_class {
                        spec["runtimeClassName"] = json!(class);
                    }
                    if tolerations {
                        spec["tolerations"] = json!([{"key": "mainframe", "operator": "Exists"}, {"key": "other", "operator": "Exists", "x-unknown": 1}]);
                    }
                    let mut metadata = json!({"name": "p", "labels": {"team": "blue"}, "x-unknown-meta": 1});
                    if let Some(zone) = zone {
                        metadata["labels"]["zone"] = json!(zone);
                    }
                    if let Some(annotation) = annotation {
                        metadata["annotations"] = json!({"image-arch-affinity.kubewarden.io/preferred-architecture": annotation});
                    }
                    match exempt {
                        Some("nodeName") => spec["nodeName"] = json!("node-1"),
                        Some("daemonSet") => metadata["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u", "controller": true}]),
                        _ => {}
                    }
                    Case {
                        images,
                        pod: json!({"metadata": metadata, "spec": spec}),
                        settings,
                        exempt,
                    }
                },
            )
    })
}

// ---- the property ----

/// The OS of the nodes the Pod runs on (see the module's documentation): `spec.os.name`, else
/// the one OS of all the nodes its constraints admit, else `defaultOperatingSystem`.
fn pod_os<'a>(spec: &'a Value, settings: &'a Value, nodes: &'a [Node]) -> &'a str {
    if let Some(os) = spec["os"]["name"].as_str().filter(|os| !os.is_empty()) {
        return os;
    }
    let oses: BTreeSet<&str> = nodes
        .iter()
        .filter(|node| admits(spec, node))
        .map(Node::os)
        .collect();
    match oses.into_iter().collect::<Vec<_>>().as_slice() {
        [only] => only,
        _ => settings["defaultOperatingSystem"]
            .as_str()
            .unwrap_or("linux"),
    }
}

/// The generated images the Pod uses (by index): its containers' and init containers', and its
/// image volumes'.
fn used_images(case: &Case) -> BTreeSet<usize> {
    let spec = &case.pod["spec"];
    spec["containers"]
        .as_array()
        .into_iter()
        .chain(spec["initContainers"].as_array())
        .flatten()
        .filter_map(|c| c["image"].as_str())
        .chain(
            spec["volumes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v["image"]["reference"].as_str()),
        )
        .filter_map(|image| (0..case.images.len()).find(|i| image_name(*i) == image))
        .collect()
}

/// Whether the Pod names its OS in `spec.os.name` (non-empty): the kubelet refuses it on a node
/// of another OS.
fn named_os(spec: &Value) -> bool {
    spec["os"]["name"].as_str().is_some_and(|os| !os.is_empty())
}

/// Whether the Pod chooses its OS: `spec.os.name`, or a nodeSelector on the OS (non-empty).
fn chooses_os(spec: &Value) -> bool {
    [
        &spec["os"]["name"],
        &spec["nodeSelector"][OS],
        &spec["nodeSelector"][BETA_OS],
    ]
    .into_iter()
    .any(|value| value.as_str().is_some_and(|os| !os.is_empty()))
}

/// Whether an image runs on nodes of `os` (a platform without an OS runs on any; WebAssembly
/// builds on every node, those next to native ones under a WebAssembly RuntimeClass).
fn runs_on_os(image: &Image, os: &str, wasm_runtime: bool) -> bool {
    match image.wasm {
        Wasm::Only | Wasm::Spin => true,
        Wasm::Entry if wasm_runtime => true,
        Wasm::Entry | Wasm::None => image
            .platforms
            .iter()
            .any(|(platform_os, _)| platform_os.is_none_or(|o| o == os)),
    }
}

/// Whether `result` holds every value of `original`: objects keep their keys, arrays their items
/// as a prefix, everything else is equal.
fn contains(result: &Value, original: &Value) -> bool {
    match (result, original) {
        (Value::Object(result), Value::Object(original)) => original
            .iter()
            .all(|(key, value)| result.get(key).is_some_and(|r| contains(r, value))),
        (Value::Array(result), Value::Array(original)) => {
            result.len() >= original.len()
                && original.iter().zip(result).all(|(o, r)| contains(r, o))
        }
        _ => result == original,
    }
}

#[derive(Default)]
struct Counts {
    cases: Cell<usize>,
    named_node: Cell<usize>,
    /// Decided cases with a WebAssembly image, and of those, the ones under a RuntimeClass of
    /// `wasmRuntimeClasses`.
    webassembly: Cell<usize>,
    wasm_runtime: Cell<usize>,
    /// Cases whose Pod has image volumes.
    volumes: Cell<usize>,
    exempt: Cell<usize>,
    rejected: Cell<usize>,
    mutated: Cell<usize>,
    /// Pinned results judged over nodes of another OS than the Pod's (clusterOperatingSystems).
    other_os: Cell<usize>,
    /// Cases whose Pod may run on the nodes of several OSes (images built for each).
    several_oses: Cell<usize>,
}

fn bump(cell: &Cell<usize>) {
    cell.set(cell.get() + 1);
}

/// Where the Pod sits in a request of `kind`, and the request's object.
fn wrap(kind: &str, pod: &Value) -> Value {
    match kind {
        "Pod" => {
            let mut pod = pod.clone();
            pod["apiVersion"] = json!("v1");
            pod["kind"] = json!("Pod");
            pod
        }
        "CronJob" => json!({"apiVersion": "batch/v1", "kind": kind, "metadata": {"name": "w"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": pod}}}}),
        _ => json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"},
            "spec": {"replicas": 2, "template": pod}}),
    }
}

fn unwrap<'a>(kind: &str, object: &'a Value) -> &'a Value {
    match kind {
        "Pod" => object,
        "CronJob" => &object["spec"]["jobTemplate"]["spec"]["template"],
        _ => &object["spec"]["template"],
    }
}

/// Whether a required node affinity term of `pod` has matchFields (a named-node term).
fn has_fields_term(pod: &Value) -> bool {
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array()
        .is_some_and(|terms| {
            terms
                .iter()
                .any(|t| t["matchFields"].as_array().is_some_and(|f| !f.is_empty()))
        })
}

fn check(case: &Case, kind: &str, nodes: &[Node], counts: &Counts) -> Result<(), TestCaseError> {
    bump(&counts.cases);
    let spec = &case.pod["spec"];
    if has_fields_term(&case.pod) {
        bump(&counts.named_node);
    }
    let settings = common::settings(case.settings.clone());
    let object = wrap(kind, &case.pod);
    let operation = if case.exempt == Some("update") {
        "UPDATE"
    } else {
        "CREATE"
    };
    let mut registry = registry_for(&case.images);
    // Skip rules: a Pod (or template) bound to a node or controlled by a DaemonSet; a Pod UPDATE
    // that runs no new image (a workload's UPDATE is decided like its CREATE; new images after
    // admission: tests/updates.rs).
    let exempt = match case.exempt {
        None => false,
        Some("update") => kind == "Pod",
        Some(_) => true,
    };
    let old = match operation {
        "UPDATE" if kind == "Pod" => object.clone(),
        _ => Value::Null,
    };
    let run = run_update(&mut registry, kind, operation, &object, &old, &settings);
    if exempt {
        bump(&counts.exempt);
        prop_assert_eq!(
            &run.decision.verdict,
            &Verdict::Accept,
            "exempt {:?}",
            case.exempt
        );
        prop_assert!(
            run.calls.is_empty(),
            "an exempt Pod is looked up: {:?}",
            run.calls
        );
        return Ok(());
    }

    // What every image that was looked up runs on: the containers' and the image volumes' (the
    // platform-less artifact constrains nothing).
    let volumes = spec["volumes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if !volumes.is_empty() {
        bump(&counts.volumes);
    }
    let used = used_images(case);
    let failed = used.iter().any(|i| case.images[*i].fails);
    match case.settings["onLookupFailure"].as_str() {
        Some("accept") if failed => {
            prop_assert_eq!(&run.decision.verdict, &Verdict::Accept);
            return Ok(());
        }
        Some("reject") if failed => {
            prop_assert!(
                matches!(run.decision.verdict, Verdict::Reject(_)),
                "{:?}",
                run.decision
            );
            bump(&counts.rejected);
            return Ok(());
        }
        _ => {}
    }
    let known: Vec<&Image> = used
        .iter()
        .map(|i| &case.images[*i])
        .filter(|i| !i.fails)
        .collect();
    if known.is_empty() {
        prop_assert_eq!(&run.decision.verdict, &Verdict::Accept);
        return Ok(());
    }
    // A WebAssembly build runs on any node whose runtime has the shim: an image of only such
    // builds, or one with such a build under a RuntimeClass of `wasmRuntimeClasses`.
    let wasm_runtime = spec["runtimeClassName"]
        .as_str()
        .is_some_and(|class| strings(&case.settings["wasmRuntimeClasses"]).contains(&class));
    if known.iter().any(|image| image.wasm != Wasm::None) {
        bump(&counts.webassembly);
        if wasm_runtime {
            bump(&counts.wasm_runtime);
        }
    }
    let runs_everything = |node: &Node| {
        known.iter().all(|image| {
            match image.wasm {
                Wasm::Only | Wasm::Spin => return true,
                Wasm::Entry if wasm_runtime => return true,
                Wasm::Entry | Wasm::None => {}
            }
            image
                .platforms
                .iter()
                .any(|(os, arch)| os.is_none_or(|os| os == node.os()) && *arch == node.arch())
        })
    };
    let os = pod_os(spec, &case.settings, nodes);
    let schedulable: BTreeSet<&str> = strings(&case.settings["schedulableArchitectures"])
        .into_iter()
        .collect();
    let anywhere = known.iter().all(|image| match image.wasm {
        Wasm::Only | Wasm::Spin => true,
        Wasm::Entry => wasm_runtime,
        Wasm::None => false,
    });
    // Images built for several OSes: a Pod that does not choose its OS (spec.os, the
    // nodeSelector) may run on the nodes of every OS of the cluster (clusterOperatingSystems)
    // that all of its images run on.
    let listed = strings(&case.settings["clusterOperatingSystems"]);
    // Images that run anywhere: the other OSes count only where no node of the Pod's own OS
    // admits it, and only when every image was looked up (src/decide/mod.rs `steps`).
    let own_admits = nodes.iter().any(|n| {
        n.os() == os
            && (schedulable.is_empty() || schedulable.contains(n.arch()))
            && admits(spec, n)
    });
    let oses: BTreeSet<&str> = std::iter::once(os)
        .chain(OSES.into_iter().filter(|other| {
            *other != os
                && (!anywhere || (!own_admits && !failed))
                && !chooses_os(spec)
                && listed.contains(other)
                && known
                    .iter()
                    .all(|image| runs_on_os(image, other, wasm_runtime))
        }))
        .collect();
    if oses.len() > 1 {
        bump(&counts.several_oses);
    }
    let universe: Vec<&Node> = nodes
        .iter()
        .filter(|n| {
            oses.contains(n.os()) && (schedulable.is_empty() || schedulable.contains(n.arch()))
        })
        .collect();
    let admitted = |spec: &Value| -> Vec<usize> {
        (0..universe.len())
            .filter(|i| admits(spec, universe[*i]))
            .collect()
    };
    let original = admitted(spec);
    let runnable: Vec<usize> = original
        .iter()
        .copied()
        .filter(|i| runs_everything(universe[*i]))
        .collect();
    // `matchNodeLabels: [zone]` with a Pod labelled `zone`: the Pod keeps to the nodes of its zone.
    let pod_zone = case.pod["metadata"]["labels"]["zone"]
        .as_str()
        .filter(|_| strings(&case.settings["matchNodeLabels"]).contains(&"zone"));
    let wanted: Vec<usize> = runnable
        .iter()
        .copied()
        .filter(|i| pod_zone.is_none_or(|zone| universe[*i].label("zone") == Some(zone)))
        .collect();

    if runnable.is_empty() {
        match case.settings["onNoCommonArchitecture"].as_str() {
            Some("accept") => {
                prop_assert_eq!(&run.decision.verdict, &Verdict::Accept);
                prop_assert!(
                    run.decision.warnings.iter().any(|w| w.ends_with("(accepted without an architecture constraint: setting onNoCommonArchitecture: accept)")),
                    "no warning: {:?}", run.decision.warnings
                );
            }
            _ => prop_assert!(
                matches!(run.decision.verdict, Verdict::Reject(_)),
                "no admitted node runs every image, yet {:?}",
                run.decision
            ),
        }
        bump(&counts.rejected);
        return Ok(());
    }
    let result = match &run.decision.verdict {
        Verdict::Reject(message) => {
            return Err(TestCaseError::fail(format!(
                "rejected, yet {} admitted nodes run every image: {message}",
                wanted.len()
            )))
        }
        Verdict::Accept => object.clone(),
        Verdict::Mutate(mutated) => {
            bump(&counts.mutated);
            mutated.clone()
        }
    };
    // In a cluster of several OSes (clusterOperatingSystems), the nodes of the others: the result
    // admits none of them, unless its images run anywhere (WebAssembly builds only, or under a
    // WebAssembly RuntimeClass: no OS is pinned), when it admits those the original did (of the
    // Pod's zone, with `matchNodeLabels`).
    let others: Vec<&Node> = nodes
        .iter()
        .filter(|n| !oses.contains(n.os()) && listed.contains(&n.os()))
        .filter(|n| schedulable.is_empty() || schedulable.contains(n.arch()))
        .collect();
    // Pods are always pinned; a workload template only with `workloadTemplates: mutate`, a
    // DaemonSet's also with `daemonSetTemplates: mutate` (docs/design.md "Workloads").
    let mode = |key: &str| case.settings[key] == "mutate";
    let pinned = kind == "Pod"
        || mode("workloadTemplates")
        || (kind == "DaemonSet" && mode("daemonSetTemplates"));
    let daemon_set_warned = run
        .decision
        .warnings
        .iter()
        .any(|w| w.contains("this DaemonSet's images run "));
    if !pinned {
        prop_assert_eq!(
            &run.decision.verdict,
            &Verdict::Accept,
            "a {} template under validate was changed",
            kind
        );
        prop_assert!(
            run.patch.is_none(),
            "a patch under validate: {:?}",
            run.patch
        );
        // A DaemonSet's Pods fail on the nodes its template admits whose architecture its images
        // do not run on: warned about exactly when there are such (schedulable) nodes.
        let failing: BTreeSet<&str> = original
            .iter()
            .map(|i| universe[*i])
            .filter(|node| !runs_everything(node))
            .map(Node::arch)
            .collect();
        prop_assert_eq!(
            daemon_set_warned,
            kind == "DaemonSet" && !failing.is_empty(),
            "DaemonSet warning for failing architectures {:?}: {:?}",
            failing,
            run.decision.warnings
        );
        // And about the nodes of another OS its template admits, unless its images run anywhere.
        let os_warned = run
            .decision
            .warnings
            .iter()
            .any(|w| w.contains("this DaemonSet runs "));
        prop_assert_eq!(
            os_warned,
            kind == "DaemonSet"
                && (!anywhere || named_os(spec))
                && others.iter().any(|node| admits(spec, node)),
            "DaemonSet warning for the nodes of another OS: {:?}",
            run.decision.warnings
        );
        return Ok(());
    }
    prop_assert!(
        !daemon_set_warned,
        "a pinned {} warned: {:?}",
        kind,
        run.decision.warnings
    );
    prop_assert!(
        contains(&result, &object),
        "a value the user wrote was lost: {}",
        result
    );
    let result_pod = unwrap(kind, &result);
    if !others.is_empty() {
        bump(&counts.other_os);
    }
    for node in &others {
        // (A Pod that names its OS in spec.os is kept to it: the kubelet refuses it elsewhere.)
        let expected = anywhere
            && !named_os(spec)
            && admits(spec, node)
            && pod_zone.is_none_or(|zone| node.label("zone") == Some(zone));
        prop_assert_eq!(
            admits(&result_pod["spec"], node),
            expected,
            "a node of another OS ({:?}); result spec {}",
            node.labels,
            result_pod["spec"]
        );
    }
    let now = admitted(&result_pod["spec"]);
    prop_assert_eq!(
        &now,
        &wanted,
        "the result admits other nodes than the original's that run every image; result spec {}",
        result_pod["spec"]
    );
    // The tolerations of exactly the architectures it may run on.
    let finally: BTreeSet<&str> = now.iter().map(|i| universe[*i].arch()).collect();
    // The preferred term (README settings): for the annotation's architecture, else the setting's,
    // added when the Pod may finally run on several architectures including it and has no
    // preferred term on kubernetes.io/arch.
    let preferred_terms = |spec: &Value| {
        spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"].clone()
    };
    let preferred_before = preferred_terms(spec);
    let had_arch_preference = preferred_before.as_array().is_some_and(|terms| {
        terms.iter().any(|term| {
            term["preference"]["matchExpressions"]
                .as_array()
                .is_some_and(|list| list.iter().any(|e| e["key"] == ARCH))
        })
    });
    let preferred = case.pod["metadata"]["annotations"]
        ["image-arch-affinity.kubewarden.io/preferred-architecture"]
        .as_str()
        .filter(|arch| NODE_ARCHES.contains(arch))
        .or(case.settings["preferredArchitecture"].as_str());
    let preferred_after = match preferred {
        Some(arch) if finally.len() > 1 && finally.contains(arch) && !had_arch_preference => {
            let mut terms = preferred_before.as_array().cloned().unwrap_or_default();
            terms.push(json!({"weight": 50, "preference": {"matchExpressions": [
                {"key": ARCH, "operator": "In", "values": [arch]}]}}));
            Value::Array(terms)
        }
        _ => preferred_before.clone(),
    };
    prop_assert_eq!(
        preferred_terms(&result_pod["spec"]),
        preferred_after,
        "preferred terms for {:?} over {:?}",
        preferred,
        finally
    );
    let configured = &case.settings["architectureTolerations"];
    let before = spec["tolerations"].as_array().cloned().unwrap_or_default();
    let after = result_pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let wanted_tolerations: Vec<&Value> = finally
        .iter()
        .filter_map(|arch| configured[*arch].as_array())
        .flatten()
        .collect();
    for toleration in &wanted_tolerations {
        prop_assert!(
            after.contains(toleration),
            "missing toleration {} for {:?}",
            toleration,
            finally
        );
    }
    for added in &after[before.len()..] {
        prop_assert!(
            wanted_tolerations.contains(&added),
            "toleration {} added for none of {:?}",
            added,
            finally
        );
    }
    // Idempotent: the result, run again, is accepted as it is.
    if matches!(run.decision.verdict, Verdict::Mutate(_)) {
        let mut registry = registry_for(&case.images);
        let again = run_request(&mut registry, kind, operation, &result, &settings);
        prop_assert_eq!(
            &again.decision.verdict,
            &Verdict::Accept,
            "second run on {}",
            result_pod["spec"]
        );
    }
    Ok(())
}

fn seed() -> u64 {
    std::env::var("SCHEDULING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

fn cases() -> u32 {
    std::env::var("SCHEDULING_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
}

/// Runs the property over generated Pods placed in requests of `kinds`, and prints what it covered.
fn property(what: &str, kinds: Vec<&'static str>) {
    let seed = seed();
    let bytes: Vec<u8> = std::iter::repeat_n(seed.to_le_bytes(), 4)
        .flatten()
        .collect();
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let nodes = universe();
    let counts = Counts::default();
    let started = Instant::now();
    let result = runner.run(
        &(case_strategy(), prop::sample::select(kinds)),
        |(case, kind)| check(&case, kind, &nodes, &counts),
    );
    // Written to stderr directly, so that every `cargo test` shows it.
    let _ = writeln!(
        std::io::stderr(),
        "scheduling equivalence, {what}: {} cases ({} with a named-node matchFields term, {} decided with a WebAssembly image, {} of them \
         under a wasmRuntimeClass, {} with image volumes, {} exempt, {} rejected or warned, {} mutated, {} accepted judged over the nodes of \
         another OS, {} that may run on several OSes) over {} nodes in {:.1} s, seed {seed} (SCHEDULING_SEED={seed} repeats it)",
        counts.cases.get(),
        counts.named_node.get(),
        counts.webassembly.get(),
        counts.wasm_runtime.get(),
        counts.volumes.get(),
        counts.exempt.get(),
        counts.rejected.get(),
        counts.mutated.get(),
        counts.other_os.get(),
        counts.several_oses.get(),
        nodes.len(),
        started.elapsed().as_secs_f64()
    );
    if let Err(error) = result {
        panic!("{error}\nseed {seed}: SCHEDULING_SEED={seed} cargo test --test scheduling");
    }
    // No vacuous run: from 1,000 cases, at least 5% of them judged over another OS's nodes.
    let cases = counts.cases.get();
    assert!(
        cases < 1000 || counts.other_os.get() * 20 >= cases,
        "only {} of {cases} cases judged over the nodes of another OS (seed {seed})",
        counts.other_os.get()
    );
    // And at least 1% whose Pod may run on several OSes.
    assert!(
        cases < 1000 || counts.several_oses.get() * 100 >= cases,
        "only {} of {cases} cases whose Pod may run on several OSes (seed {seed})",
        counts.several_oses.get()
    );
}

#[test]
fn pods_admit_exactly_the_nodes_that_run_their_images() {
    property("Pods", vec!["Pod"]);
}

#[test]
fn workload_templates_admit_exactly_the_nodes_that_run_their_images() {
    property(
        "workload templates",
        vec![
            "Deployment",
            "StatefulSet",
            "DaemonSet",
            "Job",
            "CronJob",
            "ReplicaSet",
            "ReplicationController",
        ],
    );
}

// ---- readNodes: one verdict ----
//
// With `readNodes`, a Pod (or template) gets exactly the verdict it gets with
// `schedulableArchitectures` set to the architectures of the cluster's Nodes of its OS plus its
// `autoscaledArchitectures` pools: same accept, pin, rejection and message, apart from the
// setting the message names. Over random clusters with at least one Node or pool of the Pod's
// OS (Nodes of every architecture and OS, with and without beta labels, some known only by their
// status) and the generated Pods and templates above (those bound to a node aside: with
// `readNodes` they are checked against it). Every Node call is a list whose selector is one of
// the fixed set (`selectors::all`), at most two per evaluation.

/// A cluster: Nodes (OS, architecture, beta labels, known only by `status.nodeInfo`) and the
/// autoscaled pools of each OS.
#[derive(Debug, Clone)]
struct ClusterSpec {
    nodes: Vec<(&'static str, &'static str, bool, bool)>,
    pools: Vec<(&'static str, Vec<&'static str>)>,
    node_pools: Vec<NodePoolSpec>,
}

/// A Karpenter NodePool: what its template's requirements (or labels) say of the OS and the
/// architecture (`None`: no requirement), what `NotIn` excludes, one of `POOL_TAINTS` or none,
/// and whether it is Ready.
#[derive(Debug, Clone)]
struct NodePoolSpec {
    os: Option<&'static str>,
    arches: Option<Vec<&'static str>>,
    not_in: Vec<&'static str>,
    taint: Option<usize>,
    ready: bool,
    as_labels: bool,
}

/// The taints a NodePool's template may carry: one the Pod's tolerations (`mainframe Exists`) or
/// `architectureTolerations` of s390x tolerate; one only those of arm64 tolerate; one nothing
/// tolerates; one that never excludes a Pod (`PreferNoSchedule`).
const POOL_TAINTS: [(&str, &str, &str); 4] = [
    ("mainframe", "x", "NoSchedule"),
    ("kubernetes.io/arch", "arm64", "NoSchedule"),
    ("dedicated", "gpu", "NoExecute"),
    ("soft", "", "PreferNoSchedule"),
];

fn node_pool_strategy() -> impl Strategy<Value = NodePoolSpec> {
    (
        prop::option::weighted(0.6, prop::sample::select(OSES.to_vec())),
        prop::option::weighted(
            0.7,
            prop::sample::subsequence(CLUSTER_ARCHES.to_vec(), 1..3),
        ),
        prop::sample::subsequence(CLUSTER_ARCHES.to_vec(), 0..2),
        prop::option::weighted(0.4, 0..POOL_TAINTS.len()),
        prop::bool::weighted(0.85),
        prop::bool::ANY,
    )
        .prop_map(|(os, arches, not_in, taint, ready, as_labels)| {
            // A pool tainted for one architecture's `architectureTolerations` is of that
            // architecture: where it may create others, a Pod given that toleration tolerates
            // it on all of them, and is decided so (tests/node_pools.rs,
            // `a_toleration_the_policy_adds_for_one_architecture_opens_a_pool_of_another`),
            // which the per-architecture model here does not say.
            let (arches, not_in) = match taint {
                Some(0) => (Some(vec!["s390x"]), Vec::new()),
                Some(1) => (Some(vec!["arm64"]), Vec::new()),
                _ => (arches, not_in),
            };
            NodePoolSpec {
                os,
                // Labels state one value each.
                arches: arches.map(|a| if as_labels { a[..1].to_vec() } else { a }),
                not_in,
                taint,
                ready,
                as_labels,
            }
        })
}

impl NodePoolSpec {
    /// The NodePool as the API server serves it.
    fn object(&self, index: usize) -> Value {
        let mut requirements = vec![
            json!({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}),
        ];
        let mut labels = json!({"team": "blue"});
        if let Some(os) = self.os {
            match self.as_labels {
                true => labels["kubernetes.io/os"] = json!(os),
                false => requirements
                    .push(json!({"key": "kubernetes.io/os", "operator": "In", "values": [os]})),
            }
        }
        if let Some(arches) = &self.arches {
            match self.as_labels {
                true => labels["kubernetes.io/arch"] = json!(arches[0]),
                false => requirements.push(
                    json!({"key": "kubernetes.io/arch", "operator": "In", "values": arches, "minValues": 1}),
                ),
            }
        }
        if !self.not_in.is_empty() {
            requirements.push(
                json!({"key": "kubernetes.io/arch", "operator": "NotIn", "values": self.not_in}),
            );
        }
        let taints: Vec<Value> = self
            .taint
            .map(|t| POOL_TAINTS[t])
            .map(|(key, value, effect)| json!({"key": key, "value": value, "effect": effect}))
            .into_iter()
            .collect();
        let mut pool =
            common::node_pool(&format!("pool-{index}"), json!(requirements), json!(taints));
        pool["spec"]["template"]["metadata"] = json!({"labels": labels});
        pool["spec"]["template"]["spec"]["startupTaints"] = json!([{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}]);
        if !self.ready {
            pool["status"]["conditions"][2]["status"] = json!("False");
        }
        pool
    }

    /// The architectures of `os` it can create nodes of for `pod` (docs/karpenter.md): none
    /// unless Ready and of `os`; no requirement is every architecture; less `NotIn`; only where the Pod tolerates its taint (its tolerations, or
    /// `architectureTolerations` of that architecture); not those the Pod admits only on nodes
    /// without the beta labels (whatever their other labels and name): the kubelet of a node the
    /// pool creates sets them.
    fn architectures(&self, os: &str, pod: &Value, settings: &Value) -> BTreeSet<&'static str> {
        if !self.ready || self.os.is_some_and(|o| o != os) {
            return BTreeSet::new();
        }
        let any: Vec<&'static str> = image_arch_affinity::platform::KNOWN_ARCHITECTURES.to_vec();
        let pod_tolerates_mainframe = pod["spec"]["tolerations"]
            .as_array()
            .is_some_and(|list| list.iter().any(|t| t["key"] == "mainframe"));
        let arch_tolerations = settings.get("architectureTolerations").is_some();
        self.arches
            .clone()
            .unwrap_or(any)
            .into_iter()
            .filter(|arch| !self.not_in.contains(arch))
            .filter(|arch| match self.taint {
                None | Some(3) => true,
                Some(0) => pod_tolerates_mainframe || (arch_tolerations && *arch == "s390x"),
                Some(1) => arch_tolerations && *arch == "arm64",
                _ => false,
            })
            .filter(|arch| {
                let spec = &pod["spec"];
                admits_a_node(spec, os, arch, true) || !admits_a_node(spec, os, arch, false)
            })
            .collect()
    }
}

/// Whether a Pod with this spec admits a node of `os` and `arch`, with the beta labels or
/// without, of any other labels and name (those of the universe).
fn admits_a_node(spec: &Value, os: &str, arch: &str, beta: bool) -> bool {
    TIERS.iter().any(|tier| {
        ZONES.iter().any(|zone| {
            NAMES.iter().any(|name| {
                let mut labels = BTreeMap::from([
                    ("zone", zone.to_string()),
                    ("kubernetes.io/arch", arch.to_string()),
                    ("kubernetes.io/os", os.to_string()),
                ]);
                if beta {
                    labels.insert("beta.kubernetes.io/arch", arch.to_string());
                    labels.insert("beta.kubernetes.io/os", os.to_string());
                }
                if let Some(tier) = tier {
                    labels.insert("tier", tier.to_string());
                }
                let node = Node {
                    name: name.to_string(),
                    labels,
                };
                admits(spec, &node)
            })
        })
    })
}

const CLUSTER_ARCHES: [&str; 7] = [
    "amd64", "arm64", "arm", "s390x", "ppc64le", "riscv64", "loong64",
];

fn cluster_strategy() -> impl Strategy<Value = ClusterSpec> {
    let os = || prop::sample::select(vec!["linux", "linux", "linux", "windows"]);
    (
        prop::collection::vec(
            (
                os(),
                prop::sample::select(CLUSTER_ARCHES.to_vec()),
                prop::bool::weighted(0.8),
                prop::bool::weighted(0.1),
            ),
            0..7,
        ),
        prop::collection::btree_map(
            os(),
            prop::sample::subsequence(CLUSTER_ARCHES.to_vec(), 1..3),
            0..2,
        ),
        prop::collection::vec(node_pool_strategy(), 0..3),
    )
        .prop_map(|(nodes, pools, node_pools)| ClusterSpec {
            nodes,
            pools: pools.into_iter().collect(),
            node_pools,
        })
}

impl ClusterSpec {
    /// The architectures of `os`'s Nodes and pools: what `schedulableArchitectures` would say.
    fn architectures(&self, os: &str) -> BTreeSet<&'static str> {
        let nodes = self.nodes.iter().filter(|n| n.0 == os).map(|n| n.1);
        let pools = self
            .pools
            .iter()
            .filter(|p| p.0 == os)
            .flat_map(|p| p.1.iter().copied());
        nodes.chain(pools).collect()
    }

    /// The architectures of `os` its NodePools can create nodes of for the Pod.
    fn node_pool_architectures(
        &self,
        os: &str,
        pod: &Value,
        settings: &Value,
    ) -> BTreeSet<&'static str> {
        self.node_pools
            .iter()
            .flat_map(|pool| pool.architectures(os, pod, settings))
            .collect()
    }

    fn fixture(&self) -> common::FixtureCluster {
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, (os, arch, beta, status_only))| {
                let mut node = common::node(&format!("node-{i}"), os, arch);
                let labels = node["metadata"]["labels"].as_object_mut().unwrap();
                if !beta {
                    labels.remove("beta.kubernetes.io/arch");
                    labels.remove("beta.kubernetes.io/os");
                }
                if *status_only {
                    labels.remove("kubernetes.io/arch");
                    labels.remove("beta.kubernetes.io/arch");
                }
                node
            });
        let mut fixture = common::FixtureCluster::of(nodes.collect());
        // No NodePool: a cluster without Karpenter's CRDs, half the time.
        if !self.node_pools.is_empty() || self.nodes.len().is_multiple_of(2) {
            fixture.node_pools = Some(
                self.node_pools
                    .iter()
                    .enumerate()
                    .map(|(i, pool)| pool.object(i))
                    .collect(),
            );
        }
        fixture
    }
}

/// `(setting readNodes: ...)` and `(setting schedulableArchitectures...)` as `(setting)`: the
/// part of a message that names the setting.
fn without_setting(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("(setting ") {
        out.push_str(&rest[..start]);
        let note = &rest[start..];
        let end = note.find(')').map_or(note.len(), |e| e + 1);
        let named = &note[..end];
        out.push_str(
            if named.starts_with("(setting readNodes")
                || named.starts_with("(setting schedulableArchitectures")
            {
                "(setting)"
            } else {
                named
            },
        );
        rest = &note[end..];
    }
    out.push_str(rest);
    out
}

/// The other OS the cluster has Nodes or pools of, when the Pod does not choose its OS and every
/// image it uses (of those looked up) runs there too: it may run on several OSes.
fn several_oses(case: &Case, os: &str, cluster: &ClusterSpec) -> Option<&'static str> {
    let spec = &case.pod["spec"];
    let other = OSES.into_iter().find(|other| *other != os)?;
    let present = cluster.nodes.iter().any(|node| node.0 == other)
        || cluster.pools.iter().any(|pool| pool.0 == other)
        || !cluster
            .node_pool_architectures(other, &case.pod, &case.settings)
            .is_empty();
    let used: Vec<&Image> = used_images(case)
        .into_iter()
        .map(|i| &case.images[i])
        .filter(|image| !image.fails)
        .collect();
    let runs = !used.is_empty() && used.iter().all(|image| runs_on_os(image, other, true));
    (present && runs && !chooses_os(spec)).then_some(other)
}

#[derive(Default)]
struct NodeCounts {
    /// Clusters whose other OS was given the Pod's OS's architectures (`several_oses`).
    symmetric: Cell<usize>,
    /// Of those, the clusters left out: the copies of its NodePools create other architectures
    /// for the Pod on the other OS.
    unequal_node_pools: Cell<usize>,
    /// Cases judged without the Pod's matchFields: Karpenter's provisioner ignores such a Pod,
    /// and NodePools create nodes (for other Pods, not for it: no single list states that).
    ignored_by_karpenter: Cell<usize>,
    /// Cases left out: a Pod whose Gt or Lt bound is negative, which Karpenter ignores too, where
    /// NodePools create nodes.
    negative_bounds: Cell<usize>,
    cases: Cell<usize>,
    rejected: Cell<usize>,
    mutated: Cell<usize>,
    lists: [Cell<usize>; 4],
    /// Cases that listed the NodePools, and those whose NodePools could create nodes for them.
    node_pool_reads: Cell<usize>,
    node_pools_used: Cell<usize>,
}

fn check_node_aware(
    case: &Case,
    kind: &str,
    cluster: &ClusterSpec,
    counts: &NodeCounts,
) -> Result<(), TestCaseError> {
    if case.exempt.is_some() {
        return Ok(());
    }
    // Karpenter's provisioner ignores a Pod with matchFields (docs/karpenter.md): its NodePools
    // serve it nothing, but it is kept off their architectures its images do not run on, as nodes
    // they create for other Pods may take it. No schedulableArchitectures states both: where
    // NodePools create nodes, the Pod is judged without its matchFields (counted; a term left
    // with nothing matches no node). tests/node_pools.rs has the Pods Karpenter ignores.
    let stripped;
    let pools_create = OSES.iter().any(|o| {
        !cluster
            .node_pool_architectures(o, &case.pod, &case.settings)
            .is_empty()
    });
    // (Karpenter also ignores a Pod whose Gt or Lt bound is negative: those are left out, counted.)
    let bounds_refused = |pod: &Value| {
        let mut pod = pod.clone();
        let terms = &mut pod["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        for term in terms.as_array_mut().into_iter().flatten() {
            if let Some(term) = term.as_object_mut() {
                term.remove("matchFields");
            }
        }
        image_arch_affinity::read::node_pools::ignored_by_karpenter(&pod).is_some()
    };
    if pools_create && bounds_refused(&case.pod) {
        bump(&counts.negative_bounds);
        return Ok(());
    }
    let case = match pools_create && has_fields_term(&case.pod) {
        true => {
            bump(&counts.ignored_by_karpenter);
            let mut pod = case.pod.clone();
            let terms = &mut pod["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
            for term in terms.as_array_mut().into_iter().flatten() {
                if let Some(term) = term.as_object_mut() {
                    term.remove("matchFields");
                }
            }
            stripped = Case {
                pod,
                ..case.clone()
            };
            &stripped
        }
        false => case,
    };
    let object = wrap(kind, &case.pod);
    let default_os = case.settings["defaultOperatingSystem"]
        .as_str()
        .unwrap_or("linux");
    let os = image_arch_affinity::read::constraint::Constraints::read_pod(
        &case.pod["spec"],
        image_arch_affinity::read::pod::chosen_operating_system(&case.pod),
        default_os,
    )
    .os;
    let mut cluster = cluster.clone();
    if cluster.architectures(&os).is_empty() {
        // At least one Node of the Pod's OS (a Pod of an OS no node runs is refused unread).
        if let Some(os) = ["linux", "windows"].into_iter().find(|o| *o == os) {
            cluster.nodes.push((os, "amd64", true, false));
        }
    }
    // A Pod that states no OS, whose images all run on another OS the cluster has, is decided for
    // each (src/decide/settle.rs `settle`). schedulableArchitectures names the architectures of every
    // OS, so the static settings state such a cluster only where its OSes have the same
    // architectures: the other OS's Nodes and pools are made copies of those of the Pod's OS
    // (counted).
    if let Some(other) = several_oses(case, &os, &cluster) {
        bump(&counts.symmetric);
        cluster.nodes.retain(|node| node.0 != other);
        cluster.pools.retain(|pool| pool.0 != other);
        cluster.node_pools.retain(|pool| pool.os != Some(other));
        let copies: Vec<_> = cluster
            .node_pools
            .iter()
            .filter(|pool| pool.os.is_some())
            .map(|pool| NodePoolSpec {
                os: Some(other),
                ..pool.clone()
            })
            .collect();
        cluster.node_pools.extend(copies);
        let copies: Vec<_> = cluster
            .nodes
            .iter()
            .map(|node| (other, node.1, node.2, node.3))
            .collect();
        cluster.nodes.extend(copies);
        let pools: Vec<_> = cluster
            .pools
            .iter()
            .map(|pool| (other, pool.1.clone()))
            .collect();
        cluster.pools.extend(pools);
        // A NodePool's nodes carry the beta labels: where the Pod admits other architectures of
        // those on one OS than on the other, the copies create others for it, which no single
        // list states (counted, left out).
        let created = |os: &str| cluster.node_pool_architectures(os, &case.pod, &case.settings);
        if created(&os) != created(other) {
            bump(&counts.unequal_node_pools);
            return Ok(());
        }
    }
    bump(&counts.cases);
    // What the cluster's Nodes and pools have, and what its NodePools can create for the Pod:
    // what schedulableArchitectures and clusterOperatingSystems say.
    let from_node_pools = |os: &str| cluster.node_pool_architectures(os, &case.pod, &case.settings);
    let mut all = cluster.architectures(&os);
    let created = from_node_pools(&os);
    if !created.is_subset(&all) {
        bump(&counts.node_pools_used);
    }
    all.extend(created);
    let architectures: Vec<&str> = all.into_iter().collect();
    let mut node_aware = case.settings.clone();
    let mut fixed = case.settings.clone();
    node_aware
        .as_object_mut()
        .unwrap()
        .remove("schedulableArchitectures");
    node_aware["readNodes"] = json!(true);
    node_aware["autoscaledArchitectures"] = json!(cluster
        .pools
        .iter()
        .map(|(os, arches)| json!({"os": os, "architectures": arches}))
        .collect::<Vec<_>>());
    fixed["schedulableArchitectures"] = json!(architectures);
    // The OSes of the cluster's Nodes and pools: what clusterOperatingSystems says (with
    // readNodes, read from them). The setting needs defaultOperatingSystem among them; where it
    // is not, the Pod states its own OS (the cluster has Nodes of it), and the default is moot.
    node_aware
        .as_object_mut()
        .unwrap()
        .remove("clusterOperatingSystems");
    let oses: BTreeSet<&str> = cluster
        .nodes
        .iter()
        .map(|node| node.0)
        .chain(cluster.pools.iter().map(|pool| pool.0))
        .chain(OSES.into_iter().filter(|o| !from_node_pools(o).is_empty()))
        .collect();
    fixed["clusterOperatingSystems"] = json!(oses);
    if !oses.contains(default_os) {
        fixed["defaultOperatingSystem"] = json!(os);
    }
    // The weighted form of a preferred architecture, every other case; a fallback for Pods none
    // of whose images could be looked up, under ignoreImage.
    let weighted = case.pod["metadata"]["labels"]["zone"] == "a";
    for settings in [&mut node_aware, &mut fixed] {
        let map = settings.as_object_mut().unwrap();
        if let (true, Some(preferred)) = (weighted, map.remove("preferredArchitecture")) {
            map.insert("preferredArchitectures".into(), json!([
                {"architecture": preferred, "weight": 70}, {"architecture": "arm64", "weight": 30}]));
        }
        if map
            .get("onLookupFailure")
            .is_some_and(|l| l == "ignoreImage")
        {
            map.insert("fallbackArchitectures".into(), json!([architectures[0]]));
        }
    }
    // A preferred architecture the cluster lacks is never added either way; the setting refuses
    // one outside schedulableArchitectures (or listed twice).
    if fixed["preferredArchitecture"]
        .as_str()
        .is_some_and(|p| !architectures.contains(&p))
    {
        fixed
            .as_object_mut()
            .unwrap()
            .remove("preferredArchitecture");
    }
    for settings in [&mut node_aware, &mut fixed] {
        let list = settings
            .get_mut("preferredArchitectures")
            .and_then(Value::as_array_mut);
        if let Some(list) = list {
            if list[0]["architecture"] == list[1]["architecture"] {
                list.pop();
            }
        }
    }
    if let Some(list) = fixed
        .get_mut("preferredArchitectures")
        .and_then(Value::as_array_mut)
    {
        list.retain(|entry| {
            entry["architecture"]
                .as_str()
                .is_some_and(|a| architectures.contains(&a))
        });
    }
    let evaluate = |settings: &Value| {
        let mut nodes = cluster.fixture();
        let run = common::run_in_cluster(
            &mut registry_for(&case.images),
            &mut nodes,
            kind,
            "CREATE",
            &object,
            &Value::Null,
            &common::settings(settings.clone()),
        );
        (run, nodes.calls)
    };
    let (with_nodes, calls) = evaluate(&node_aware);
    let (with_setting, none) = evaluate(&fixed);
    prop_assert!(none.is_empty());
    let selectors = image_arch_affinity::read::selectors::all();
    let pool_reads = calls
        .iter()
        .filter(|c| *c == common::NODE_POOLS_CALL)
        .count();
    prop_assert!(pool_reads <= 1, "{:?}", calls);
    counts
        .node_pool_reads
        .set(counts.node_pool_reads.get() + pool_reads);
    // The Nodes without an architecture label: read once, last, for a Pod whose terms were
    // changed.
    let unlabelled = |c: &String| c.contains(" !kubernetes.io/arch,!beta.kubernetes.io/arch ");
    prop_assert!(
        calls.iter().filter(|c| unlabelled(c)).count() <= 1,
        "{:?}",
        calls
    );
    prop_assert!(
        calls
            .iter()
            .position(unlabelled)
            .is_none_or(|at| at + 1 == calls.len()),
        "{:?}",
        calls
    );
    let calls: Vec<String> = calls
        .into_iter()
        .filter(|c| c != common::NODE_POOLS_CALL && !unlabelled(c))
        .collect();
    for call in &calls {
        let selector = call
            .strip_prefix("list_resources_all v1/Node ")
            .and_then(|c| c.split(" masks ").next());
        prop_assert!(
            selector.is_some_and(|s| selectors.iter().any(|known| known == s)),
            "a Node call outside the fixed selectors: {}",
            call
        );
    }
    prop_assert!(calls.len() <= 3, "{:?}", calls);
    counts.lists[calls.len()].set(counts.lists[calls.len()].get() + 1);
    let verdict = |run: &common::Run| match &run.decision.verdict {
        Verdict::Reject(message) => Verdict::Reject(without_setting(message)),
        other => other.clone(),
    };
    // With readNodes, the copies of the Pod's terms that keep Nodes without an architecture
    // label reachable (`kubernetes.io/arch DoesNotExist`): only where the cluster has such a
    // Node; the rest is the static settings' decision.
    let mut node_aware_verdict = verdict(&with_nodes);
    let copies = match (&mut node_aware_verdict, &with_setting.decision.verdict) {
        (Verdict::Mutate(object), Verdict::Mutate(fixed)) => remove_added_copies(object, fixed),
        _ => 0,
    };
    let unlabelled_nodes = cluster
        .nodes
        .iter()
        .any(|(_, _, _, status_only)| *status_only);
    prop_assert!(copies == 0 || unlabelled_nodes, "{:?}", with_nodes);
    prop_assert_eq!(
        node_aware_verdict,
        verdict(&with_setting),
        "cluster {:?}",
        cluster
    );
    // The warning about a DaemonSet's nodes of another OS counts only those its template admits,
    // of the architectures that OS's nodes have: schedulableArchitectures states the Pod's OS's
    // for every OS, so it is compared only where the other OSes have those.
    let same_elsewhere = OSES.into_iter().filter(|o| *o != os).all(|other| {
        let mut theirs = cluster.architectures(other);
        theirs.extend(from_node_pools(other));
        theirs.is_empty() || theirs.iter().copied().eq(architectures.iter().copied())
    });
    let compared = |run: &common::Run| -> Vec<String> {
        run.decision
            .warnings
            .iter()
            .filter(|w| same_elsewhere || !w.contains("this DaemonSet runs "))
            .cloned()
            .collect()
    };
    let cut = |run: &common::Run| run.decision.warnings.iter().any(|w| w.contains(" … "));
    if cut(&with_nodes) || cut(&with_setting) {
        // A warning cut to fit 256 characters is cut where the setting's name moves it: the
        // same refusals, compared whole as rejections.
        prop_assert_eq!(compared(&with_nodes).len(), compared(&with_setting).len());
        if case.settings["onNoCommonArchitecture"] == "accept" {
            node_aware["onNoCommonArchitecture"] = json!("reject");
            fixed["onNoCommonArchitecture"] = json!("reject");
            prop_assert_eq!(
                verdict(&evaluate(&node_aware).0),
                verdict(&evaluate(&fixed).0)
            );
        }
    } else {
        let warnings = |run: &common::Run| -> Vec<String> {
            compared(run).iter().map(|w| without_setting(w)).collect()
        };
        prop_assert_eq!(warnings(&with_nodes), warnings(&with_setting));
    }
    match with_nodes.decision.verdict {
        Verdict::Reject(_) => bump(&counts.rejected),
        Verdict::Mutate(_) => bump(&counts.mutated),
        Verdict::Accept => {}
    }
    Ok(())
}

fn node_aware_property(what: &str, kinds: Vec<&'static str>) {
    let seed = seed();
    let bytes: Vec<u8> = std::iter::repeat_n(seed.to_le_bytes(), 4)
        .flatten()
        .collect();
    let config = Config {
        // About one case in ten is bound to a node and left out: at least `cases()` judged.
        cases: cases() + cases() / 8,
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let counts = NodeCounts::default();
    let started = Instant::now();
    let result = runner.run(
        &(
            case_strategy(),
            prop::sample::select(kinds),
            cluster_strategy(),
        ),
        |(case, kind, cluster)| check_node_aware(&case, kind, &cluster, &counts),
    );
    let _ = writeln!(
        std::io::stderr(),
        "readNodes decides as schedulableArchitectures, {what}: {} cases ({} rejected or warned, {} mutated; \
         0/1/2/3 Node lists: {}/{}/{}/{}; {} clusters given the same architectures for each OS, {} of them left out \
         as their NodePools create other architectures for the Pod on each; {} judged without their matchFields, \
         which Karpenter ignores, where NodePools create nodes, {} left out for a negative Gt or Lt bound, which it \
         ignores too; NodePools listed in {}, adding architectures in {}) \
         in {:.1} s, seed {seed} (SCHEDULING_SEED={seed} repeats it)",
        counts.cases.get(),
        counts.rejected.get(),
        counts.mutated.get(),
        counts.lists[0].get(),
        counts.lists[1].get(),
        counts.lists[2].get(),
        counts.lists[3].get(),
        counts.symmetric.get(),
        counts.unequal_node_pools.get(),
        counts.ignored_by_karpenter.get(),
        counts.negative_bounds.get(),
        counts.node_pool_reads.get(),
        counts.node_pools_used.get(),
        started.elapsed().as_secs_f64()
    );
    if let Err(error) = result {
        panic!("{error}\nseed {seed}: SCHEDULING_SEED={seed} cargo test --test scheduling");
    }
    // A run where NodePools seldom mattered would judge them vacuously, as one that left out
    // many clusters would judge few. Shares are asserted from 1,000 cases: in a few hundred (`make
    // check`'s) a share of 3% exceeds 5% by chance.
    let cases = counts.cases.get();
    assert!(
        cases < 1000 || counts.negative_bounds.get() * 20 <= cases,
        "{} cases left out of {cases} for a negative Gt or Lt bound (maximum 5%)",
        counts.negative_bounds.get()
    );
    assert!(
        cases < 1000 || counts.unequal_node_pools.get() * 50 <= cases,
        "{} clusters left out of {cases} as their NodePools create other architectures for the \
         Pod on each OS (maximum 2%)",
        counts.unequal_node_pools.get()
    );
    assert!(
        cases < 1000 || counts.node_pools_used.get() * 20 >= cases,
        "NodePools added architectures in {} of {cases} cases (minimum 5%)",
        counts.node_pools_used.get()
    );
}

#[test]
fn node_aware_pods_decide_as_the_cluster_architectures() {
    node_aware_property("Pods", vec!["Pod"]);
}

#[test]
fn node_aware_templates_decide_as_the_cluster_architectures() {
    node_aware_property(
        "workload templates",
        vec!["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"],
    );
}

/// Removes from `node_aware`'s required terms, anywhere, those after `fixed`'s that have a
/// `kubernetes.io/arch DoesNotExist` expression (the copies readNodes adds for Nodes without the
/// label); returns how many.
fn remove_added_copies(node_aware: &mut Value, fixed: &Value) -> usize {
    let copy = |term: &Value| {
        term["matchExpressions"].as_array().is_some_and(|list| {
            list.iter()
                .any(|e| e["key"] == "kubernetes.io/arch" && e["operator"] == "DoesNotExist")
        })
    };
    match (node_aware, fixed) {
        (Value::Object(map), Value::Object(other)) => {
            let mut removed = 0;
            if let (Some(Value::Array(terms)), Some(Value::Array(theirs))) = (
                map.get_mut("nodeSelectorTerms"),
                other.get("nodeSelectorTerms"),
            ) {
                if terms.len() > theirs.len() && terms[theirs.len()..].iter().all(copy) {
                    removed += terms.len() - theirs.len();
                    terms.truncate(theirs.len());
                }
            }
            for (key, child) in map.iter_mut() {
                removed += remove_added_copies(child, &other[key.as_str()]);
            }
            removed
        }
        (Value::Array(items), Value::Array(theirs)) => items
            .iter_mut()
            .zip(theirs)
            .map(|(item, their)| remove_added_copies(item, their))
            .sum(),
        _ => 0,
    }
}
