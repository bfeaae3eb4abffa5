//! A Pod (or a Pod template) as the decision reads it (`Pod`, read once from its JSON), and the
//! readings it is made of: which Pods to leave alone, which OS counts, which images it runs, its
//! required terms, its tolerations and the labels and annotations the policy reads.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::image::ImageRef;
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

/// What a Pod UPDATE brings, and what bounds it.
#[derive(Debug, Default, PartialEq)]
pub struct Update<'a> {
    /// The images of the containers, init containers and ephemeral containers the UPDATE adds or
    /// gives another image (image volumes cannot change) that the old Pod has not already run,
    /// in any spelling of the same reference (`busybox` is `docker.io/library/busybox:latest`),
    /// each once: a bound Pod has run those its statuses show started (`ran`), a Pod not yet
    /// placed every image it named. Another container's image that never started on the Pod's
    /// node is new there.
    pub new: Vec<PodImage<'a>>,
    /// A bound Pod's images the kubelet has shown to run on its node (`started_images`), read
    /// only where the UPDATE changes an image; none for a Pod not yet placed.
    pub ran: Vec<PodImage<'a>>,
}

/// What the UPDATE from `old` to `new` brings (`Update`). Most UPDATEs change no image: nothing
/// is read then but the two lists of containers.
pub fn update<'a>(new: &'a Value, old: &'a Value) -> Update<'a> {
    let changed = changed_images(new, old);
    if changed.is_empty() {
        return Update::default();
    }
    let bound = old["spec"]["nodeName"]
        .as_str()
        .is_some_and(|n| !n.is_empty());
    let ran = match bound {
        true => started_images(old),
        false => Vec::new(),
    };
    // What the Pod has run, then each image brought once.
    let mut seen: BTreeSet<String> = match bound {
        true => ran
            .iter()
            .map(|image| canonical_text(image.reference))
            .collect(),
        false => container_images(old).map(canonical_text).collect(),
    };
    let new = changed
        .into_iter()
        .filter(|reference| seen.insert(canonical_text(reference)))
        .map(|reference| PodImage {
            reference,
            volume: None,
        })
        .collect();
    Update { new, ran }
}

/// The images of the new object's containers that the old object's container of the same kind
/// and name did not name (in any spelling): those of the containers the UPDATE adds or gives
/// another image.
fn changed_images<'a>(new: &'a Value, old: &Value) -> Vec<&'a str> {
    containers(new)
        .filter_map(|(list, container)| {
            let image = container["image"].as_str()?;
            let kept = old["spec"][list]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .any(|before| {
                    before["name"] == container["name"]
                        && before["image"].as_str().is_some_and(|b| {
                            b == image || canonical_text(b) == canonical_text(image)
                        })
                });
            (!kept).then_some(image)
        })
        .collect()
}

/// The images the kubelet has shown to run on the Pod's node: those of its containers, init
/// containers and ephemeral containers whose status (the stored one, which a spec UPDATE cannot
/// change) says the container's current run started, runs, or exited 0, for the image the spec
/// names (compared in canonical form); the run before (`lastState`) may be of another image. A
/// container that never started (`exec format error`) proves nothing, nor
/// does a Pod no kubelet has reported on: a Pod admitted where its images do not run (a
/// DaemonSet's, one created bound, one created while the policy was down) bounds nothing.
pub fn started_images(pod: &Value) -> Vec<PodImage<'_>> {
    let mut images: Vec<PodImage> = Vec::new();
    for (list, statuses) in [
        ("initContainers", "initContainerStatuses"),
        ("containers", "containerStatuses"),
        ("ephemeralContainers", "ephemeralContainerStatuses"),
    ] {
        let statuses = pod["status"][statuses]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for container in pod["spec"][list]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let Some(reference) = container["image"].as_str() else {
                continue;
            };
            let name = container["name"].as_str();
            let status = statuses
                .iter()
                .find(|status| name.is_some() && status["name"].as_str() == name);
            if status.is_some_and(|status| ran(status, reference))
                && !images.iter().any(|image| image.reference == reference)
            {
                images.push(PodImage {
                    reference,
                    volume: None,
                });
            }
        }
    }
    images
}

/// Whether a container status shows `reference` ran: its current run started, runs, or exited
/// 0, with the status's image the same reference.
fn ran(status: &Value, reference: &str) -> bool {
    let same_image = status["image"]
        .as_str()
        .and_then(canonical)
        .is_some_and(|image| Some(image) == canonical(reference));
    same_image
        && (status["started"] == true
            || status["state"]["running"].is_object()
            || status["state"]["terminated"]["exitCode"].as_i64() == Some(0))
}

/// The references the Pod's containers, init containers and ephemeral containers run, in order.
fn container_images(pod: &Value) -> impl Iterator<Item = &str> {
    containers(pod).filter_map(|(_, container)| container["image"].as_str())
}

/// The Pod's containers, init containers and ephemeral containers, each with its list's name.
fn containers(pod: &Value) -> impl Iterator<Item = (&'static str, &Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |list| {
            pod["spec"][list]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(move |container| (list, container))
        })
}

/// A reference in canonical form (`busybox` is `docker.io/library/busybox:latest`); none where
/// it does not parse.
fn canonical(reference: &str) -> Option<String> {
    ImageRef::parse(reference).ok().map(|r| r.to_string())
}

/// A reference in canonical form, or as written where it does not parse.
fn canonical_text(reference: &str) -> String {
    canonical(reference).unwrap_or_else(|| reference.to_string())
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
    fn an_update_brings_the_changed_containers_images_its_pod_has_not_run() {
        let old = json!({
            "spec": {
                "nodeName": "node-1",
                "containers": [
                    {"name": "app", "image": "ghcr.io/org/app:1"},
                    {"name": "sidecar", "image": "ghcr.io/org/sidecar:1"},
                    {"name": "never", "image": "ghcr.io/org/never:1"}
                ]
            },
            "status": {"containerStatuses": [
                {"name": "app", "image": "ghcr.io/org/app:1", "started": true},
                {"name": "sidecar", "image": "ghcr.io/org/sidecar:1", "started": true},
                {"name": "never", "image": "ghcr.io/org/never:1", "started": false}
            ]}
        });
        let references = |images: &[PodImage]| -> Vec<String> {
            images.iter().map(|i| i.reference.to_string()).collect()
        };
        // No image changes: nothing is read.
        let mut relabelled = old.clone();
        relabelled["metadata"] = json!({"labels": {"a": "b"}});
        assert_eq!(update(&relabelled, &old), Update::default());
        // The app takes the sidecar's image (run), then the one that never started (new), and
        // a debug container runs the app's image.
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("ghcr.io/org/sidecar:1");
        let brought = update(&new, &old);
        assert_eq!(references(&brought.new), Vec::<String>::new());
        assert_eq!(
            references(&brought.ran),
            ["ghcr.io/org/app:1", "ghcr.io/org/sidecar:1"]
        );
        new["spec"]["containers"][0]["image"] = json!("ghcr.io/org/never:1");
        new["spec"]["ephemeralContainers"] =
            json!([{"name": "debug", "image": "ghcr.io/org/app:1"}]);
        assert_eq!(references(&update(&new, &old).new), ["ghcr.io/org/never:1"]);
        // Not yet placed: every image the old Pod named counts as run.
        let mut pending = old.clone();
        pending["spec"]["nodeName"] = json!(null);
        let mut new = pending.clone();
        new["spec"]["containers"][0]["image"] = json!("ghcr.io/org/never:1");
        new["spec"]["containers"][1]["image"] = json!("docker.io/library/busybox:latest");
        new["spec"]["containers"][2]["image"] = json!("busybox");
        let brought = update(&new, &pending);
        assert_eq!(
            references(&brought.new),
            ["docker.io/library/busybox:latest"]
        );
        assert_eq!(brought.ran, Vec::new());
    }

    #[test]
    fn started_images_are_those_whose_current_run_shows_they_ran() {
        let pod = json!({
            "spec": {
                "initContainers": [{"name": "init", "image": "busybox"}],
                "containers": [
                    {"name": "app", "image": "ghcr.io/org/app:1"},
                    {"name": "crashing", "image": "ghcr.io/org/crash:1"},
                    {"name": "swapped", "image": "ghcr.io/org/new:1"},
                    {"name": "restarted", "image": "ghcr.io/org/restarted:1"},
                    {"image": "ghcr.io/org/nameless:1"}
                ],
                "ephemeralContainers": [{"name": "debugger", "image": "ghcr.io/org/debug:1"}]
            },
            "status": {
                // Another spelling of the same reference; completed.
                "initContainerStatuses": [{"name": "init", "image": "docker.io/library/busybox:latest",
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
                "containerStatuses": [
                    {"name": "app", "image": "ghcr.io/org/app:1", "started": true,
                     "state": {"running": {}}},
                    {"name": "crashing", "image": "ghcr.io/org/crash:1", "started": false,
                     "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                     "lastState": {"terminated": {"exitCode": 1}}},
                    // The status of the image before the swap.
                    {"name": "swapped", "image": "ghcr.io/org/old:1", "started": true,
                     "state": {"running": {}}},
                    // The run before exited 0; this one never started.
                    {"name": "restarted", "image": "ghcr.io/org/restarted:1", "started": false,
                     "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                     "lastState": {"terminated": {"exitCode": 0}}},
                    {"image": "ghcr.io/org/nameless:1", "started": true, "state": {"running": {}}}
                ],
                "ephemeralContainerStatuses": [{"name": "debugger", "image": "ghcr.io/org/debug:1",
                    "state": {"running": {}}}]
            }
        });
        let started: Vec<&str> = started_images(&pod)
            .iter()
            .map(|image| image.reference)
            .collect();
        assert_eq!(
            started,
            ["busybox", "ghcr.io/org/app:1", "ghcr.io/org/debug:1"]
        );
        assert_eq!(started_images(&json!({"spec": pod["spec"]})), []);
    }

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
