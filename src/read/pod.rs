//! A Pod (or a Pod template) as the decision reads it (`Pod`, read once from its JSON), and the
//! readings it is made of: which Pods to leave alone, which OS counts, which images it runs, its
//! required terms, its tolerations and the labels and annotations the policy reads.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::platform::{
    Architectures, ARCH_LABEL, BETA_ARCH_LABEL, BETA_OS_LABEL, NODE_OPERATING_SYSTEMS, OS_LABEL,
};
use crate::read::constraint::Constraints;
use crate::read::node_pools::ignored_by_karpenter;
use crate::read::terms::{read_term, writable_paths, RequiredTerm, Writable};
use crate::settings::{Settings, Toleration};

/// Annotation in which the policy records the architectures it pinned.
pub const ARCHITECTURES_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/architectures";

/// Pod annotation that names the preferred architecture, overriding the setting.
pub const PREFERRED_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/preferred-architecture";

/// A Pod (or a Pod template) as the decision reads it. Nothing here decides: it is what the Pod
/// says, read once.
#[derive(Debug, Clone)]
pub struct Pod<'a> {
    /// The object and its spec are objects (anything else is left alone).
    pub has_spec: bool,
    /// Why the scheduler does not place it, if it does not (`skip_reason`).
    pub skip: Option<&'static str>,
    /// The Node it is bound to (`bound_node`).
    pub bound_node: Option<&'a str>,
    pub images: Vec<PodImage<'a>>,
    /// Its spec, where messages name the containers that run an image (`containers_running`).
    spec: &'a Value,
    /// The OS it chooses (`chosen_operating_system`).
    pub chosen_os: Option<&'a str>,
    /// It names its OS in `spec.os`: the kubelet refuses it on a node of another OS.
    pub spec_os: bool,
    /// Its constraints on the nodes of its own OS (`Constraints::read_pod`).
    pub constraints: Constraints,
    /// Its constraints on the nodes of each node OS, in `NODE_OPERATING_SYSTEMS`' order.
    by_os: Vec<Constraints>,
    pub runtime_class: Option<&'a str>,
    /// It has scheduling gates: the API server lets its node affinity be narrowed.
    pub gated: bool,
    /// Its tolerations (those that are none left out).
    pub tolerations: Vec<Toleration>,
    pub preferred_annotation: Option<&'a str>,
    /// A preferred term already weighs the architecture.
    pub weighs_architecture: bool,
    /// Its labels with string values.
    labels: Vec<(&'a str, &'a str)>,
    /// Its nodeSelector's entries with string values.
    selector: Vec<(&'a str, &'a str)>,
    /// Its required terms, when `nodeSelectorTerms` is a list.
    pub terms: Option<Vec<RequiredTerm<'a>>>,
    pub writable: Writable,
    /// Why Karpenter's provisioner ignores it (read with `readNodes` only).
    pub karpenter_ignores: Option<&'static str>,
}

impl<'a> Pod<'a> {
    /// Reads a Pod (or a Pod template: an object with `metadata` and `spec`).
    pub fn read(pod: &'a Value, settings: &Settings) -> Pod<'a> {
        let spec = &pod["spec"];
        let strings = |value: &'a Value| -> Vec<(&'a str, &'a str)> {
            value
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
                .collect()
        };
        let chosen_os = chosen_operating_system(pod);
        let constraints =
            Constraints::read_pod(spec, chosen_os, &settings.default_operating_system);
        let by_os = NODE_OPERATING_SYSTEMS
            .iter()
            .map(|os| match *os == constraints.os {
                true => constraints.clone(),
                false => Constraints::read(spec, os),
            })
            .collect();
        Pod {
            has_spec: pod.is_object() && spec.is_object(),
            skip: skip_reason(pod),
            bound_node: bound_node(pod),
            images: images(pod),
            spec,
            chosen_os,
            spec_os: spec["os"]["name"].as_str().is_some_and(|os| !os.is_empty()),
            constraints,
            by_os,
            runtime_class: spec["runtimeClassName"].as_str(),
            gated: spec["schedulingGates"]
                .as_array()
                .is_some_and(|gates| !gates.is_empty()),
            tolerations: tolerations(pod),
            preferred_annotation: pod["metadata"]["annotations"][PREFERRED_ANNOTATION].as_str(),
            weighs_architecture: weighs_architecture(spec),
            labels: strings(&pod["metadata"]["labels"]),
            selector: strings(&spec["nodeSelector"]),
            terms: required_terms(spec).map(|terms| terms.iter().map(read_term).collect()),
            writable: writable_paths(pod),
            karpenter_ignores: ignored_by_karpenter(pod).filter(|_| settings.read_nodes),
        }
    }

    /// Its constraints on the nodes of `os` (a node OS).
    pub fn on(&self, os: &str) -> Option<&Constraints> {
        let at = NODE_OPERATING_SYSTEMS.iter().position(|o| *o == os)?;
        self.by_os.get(at)
    }

    /// A label's value.
    pub fn label(&self, key: &str) -> Option<&'a str> {
        find(&self.labels, key)
    }

    /// The nodeSelector's value for `key`, when it is a string.
    pub fn selector_value(&self, key: &str) -> Option<&'a str> {
        find(&self.selector, key)
    }

    /// The containers that run `reference`: each kind (`container`, `init container`,
    /// `ephemeral container`) with the name.
    pub fn containers_running(&self, reference: &str) -> Vec<(&'static str, &'a str)> {
        [
            ("initContainers", "init container"),
            ("containers", "container"),
            ("ephemeralContainers", "ephemeral container"),
        ]
        .into_iter()
        .flat_map(|(list, kind)| {
            let containers = self.spec[list].as_array().map(Vec::as_slice);
            containers
                .unwrap_or_default()
                .iter()
                .filter(|container| container["image"].as_str() == Some(reference))
                .map(move |container| (kind, container["name"].as_str().unwrap_or_default()))
        })
        .collect()
    }

    /// Whether it keeps to nodes whose label `key` holds one of `values`: its nodeSelector names
    /// one, or each counted required term has an `In` expression on `key` with values among
    /// them (a pin the policy wrote at creation). A term counts where it matches anything,
    /// admits Nodes with an architecture label (not `only_unlabelled`), and `counts` keeps it by
    /// its index (one that admits a node of the OS judged: not the Linux term of a Pod pinned to
    /// a Windows build). Without a counted term, it does not keep to them.
    pub fn node_label_within(
        &self,
        key: &str,
        values: &Architectures,
        counts: impl Fn(usize) -> bool,
    ) -> bool {
        if let Some(value) = self.selector_value(key) {
            return values.contains(value);
        }
        let Some(terms) = &self.terms else {
            return false;
        };
        let mut counted = terms.iter().enumerate().filter(|(index, term)| {
            !term.matches_nothing && !term.only_unlabelled && counts(*index)
        });
        let within =
            |(_, term): (usize, &RequiredTerm)| term.keeps_within(key, |v| values.contains(v));
        match counted.next() {
            Some(first) => within(first) && counted.all(within),
            None => false,
        }
    }
}

/// The value of `key` among `entries`.
fn find<'a>(entries: &[(&'a str, &'a str)], key: &str) -> Option<&'a str> {
    entries.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// Why a Pod needs no lookup and no change, if it does not.
pub fn skip_reason(pod: &Value) -> Option<&'static str> {
    let spec = &pod["spec"];
    if spec["nodeName"]
        .as_str()
        .is_some_and(|name| !name.is_empty())
    {
        return Some("spec.nodeName is set: the Pod is already bound to a node");
    }
    let controlled_by_daemonset =
        pod["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|owners| {
                owners.iter().any(|owner| {
                    owner["controller"].as_bool() == Some(true) && owner["kind"] == "DaemonSet"
                })
            });
    if controlled_by_daemonset {
        return Some("the Pod is controlled by a DaemonSet, which picks its nodes itself");
    }
    None
}

/// The node a Pod is bound to: `spec.nodeName`, else, for a Pod controlled by a DaemonSet, the
/// node its required terms name (the DaemonSet controller writes `matchFields` `metadata.name In
/// [node]` into every term; all of them must name the same one node).
pub fn bound_node(pod: &Value) -> Option<&str> {
    let spec = &pod["spec"];
    if let Some(name) = spec["nodeName"].as_str().filter(|name| !name.is_empty()) {
        return Some(name);
    }
    skip_reason(pod)?;
    let terms = required_terms(spec)?;
    let mut named = None;
    for term in terms {
        let fields = term["matchFields"].as_array()?;
        let [field] = fields.as_slice() else {
            return None;
        };
        let [value] = field["values"].as_array().map(Vec::as_slice)? else {
            return None;
        };
        if field["key"] != "metadata.name" || field["operator"] != "In" {
            return None;
        }
        let value = value.as_str().filter(|v| !v.is_empty())?;
        if named.is_some_and(|n| n != value) {
            return None;
        }
        named = Some(value);
    }
    named
}

/// The OS the Pod chooses: `spec.os.name`, else a nodeSelector on `kubernetes.io/os`, else on
/// `beta.kubernetes.io/os`. An empty value counts as absent.
pub fn chosen_operating_system(pod: &Value) -> Option<&str> {
    let spec = &pod["spec"];
    [
        &spec["os"]["name"],
        &spec["nodeSelector"][OS_LABEL],
        &spec["nodeSelector"][BETA_OS_LABEL],
    ]
    .into_iter()
    .filter_map(Value::as_str)
    .find(|os| !os.is_empty())
}

/// An image the Pod needs on its node: a container's, or an image volume's
/// (`spec.volumes[].image.reference`), which the kubelet pulls for the node's platform as it
/// pulls container images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodImage<'a> {
    /// The reference as the Pod spells it.
    pub reference: &'a str,
    /// The image volume that mounts it, when no container runs it (for messages; an image that
    /// no container runs may be an artifact with no platform, which constrains nothing).
    pub volume: Option<&'a str>,
}

/// Every image of the Pod's containers, init containers and ephemeral containers, then of its
/// image volumes, each reference once, in order of appearance (a reference that a container
/// runs and a volume mounts is a container's).
pub fn images(pod: &Value) -> Vec<PodImage<'_>> {
    let spec = &pod["spec"];
    let mut images: Vec<PodImage> = Vec::new();
    // The references taken so far: a Pod author's many thousand cost a set lookup each.
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for container in spec[list].as_array().map(Vec::as_slice).unwrap_or_default() {
            if let Some(reference) = container["image"].as_str() {
                if seen.insert(reference) {
                    images.push(PodImage {
                        reference,
                        volume: None,
                    });
                }
            }
        }
    }
    for volume in spec["volumes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        // The API server refuses an image volume without a reference (a container's empty
        // image is looked up, and fails, as the kubelet would): an empty one is skipped.
        let Some(reference) = volume["image"]["reference"]
            .as_str()
            .filter(|reference| !reference.is_empty())
        else {
            continue;
        };
        if seen.insert(reference) {
            images.push(PodImage {
                reference,
                volume: Some(volume["name"].as_str().unwrap_or_default()),
            });
        }
    }
    images
}

/// The Pod's tolerations (those that are none are left out).
fn tolerations(pod: &Value) -> Vec<Toleration> {
    pod["spec"]["tolerations"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|t| serde_json::from_value(t.clone()).ok())
        .collect()
}

/// Whether any preferred term already weighs the architecture.
fn weighs_architecture(spec: &Value) -> bool {
    spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        .as_array()
        .is_some_and(|terms| {
            terms.iter().any(|term| {
                term["preference"]["matchExpressions"]
                    .as_array()
                    .is_some_and(|list| {
                        list.iter()
                            .any(|e| e["key"] == ARCH_LABEL || e["key"] == BETA_ARCH_LABEL)
                    })
            })
        })
}

/// The required node affinity terms, if the Pod has any.
fn required_terms(spec: &Value) -> Option<&Vec<Value>> {
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn skips() {
        assert_eq!(skip_reason(&json!({"spec": {"containers": []}})), None);
        assert!(skip_reason(&json!({"spec": {"nodeName": "n1"}})).is_some());
        assert_eq!(skip_reason(&json!({"spec": {"nodeName": ""}})), None);
        let ds = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u", "controller": true}]}});
        assert!(skip_reason(&ds).is_some());
        let not_controller = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u"}]}});
        assert_eq!(skip_reason(&not_controller), None);
        // A term naming nodes is a constraint like any other: no skip.
        let fields = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}});
        assert_eq!(skip_reason(&fields), None);
    }

    #[test]
    fn bound_nodes() {
        assert_eq!(bound_node(&json!({"spec": {"nodeName": "n1"}})), Some("n1"));
        assert_eq!(bound_node(&json!({"spec": {"nodeName": ""}})), None);
        let ds = |terms: Value| {
            json!({"metadata": {"ownerReferences": [{"kind": "DaemonSet", "controller": true}]},
                "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": terms}}}}})
        };
        let on = |node: &str| json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]});
        assert_eq!(bound_node(&ds(json!([on("n2")]))), Some("n2"));
        assert_eq!(bound_node(&ds(json!([on("n2"), on("n2")]))), Some("n2"));
        assert_eq!(bound_node(&ds(json!([on("n2"), on("n3")]))), None);
        assert_eq!(bound_node(&ds(json!([]))), None);
        assert_eq!(
            bound_node(&ds(
                json!([{"matchExpressions": [{"key": "a", "operator": "Exists"}]}])
            )),
            None
        );
        // Not a DaemonSet's Pod: a term naming a node is a constraint, not a binding.
        let mut pod = ds(json!([on("n2")]));
        pod["metadata"] = json!({});
        assert_eq!(bound_node(&pod), None);
    }

    #[test]
    fn os_choice() {
        assert_eq!(chosen_operating_system(&json!({})), None);
        assert_eq!(
            chosen_operating_system(&json!({"spec": {"os": {"name": "windows"}}})),
            Some("windows")
        );
        assert_eq!(
            chosen_operating_system(
                &json!({"spec": {"nodeSelector": {"kubernetes.io/os": "windows"}}})
            ),
            Some("windows")
        );
        // `spec.os.name: ""` falls back like an absent one.
        assert_eq!(
            chosen_operating_system(
                &json!({"spec": {"os": {"name": ""}, "nodeSelector": {"kubernetes.io/os": "windows"}}})
            ),
            Some("windows")
        );
        assert_eq!(
            chosen_operating_system(&json!({"spec": {"os": {"name": ""}}})),
            None
        );
    }

    #[test]
    fn images_of_every_container_kind_once() {
        let pod = json!({"spec": {
            "initContainers": [{"name": "i", "image": "b"}],
            "containers": [{"name": "a", "image": "a"}, {"name": "a2", "image": "b"}, {"name": "none"}],
            "ephemeralContainers": [{"name": "e", "image": "c"}]}});
        let references: Vec<&str> = images(&pod).iter().map(|i| i.reference).collect();
        assert_eq!(references, ["b", "a", "c"]);
    }

    #[test]
    fn image_volumes_after_the_containers() {
        let pod = json!({"spec": {
            "volumes": [
                {"name": "models", "image": {"reference": "m", "pullPolicy": "IfNotPresent"}},
                {"name": "shared", "image": {"reference": "a"}},
                {"name": "again", "image": {"reference": "m"}},
                {"name": "unset", "image": {}},
                {"name": "empty", "image": {"reference": ""}},
                {"name": "config", "configMap": {"name": "c"}}],
            "containers": [{"name": "a", "image": "a"}]}});
        let volume = |reference, name| PodImage {
            reference,
            volume: Some(name),
        };
        assert_eq!(
            images(&pod),
            [
                PodImage {
                    reference: "a",
                    volume: None
                },
                volume("m", "models"),
            ]
        );
    }
}
