//! The cluster's Nodes, as the node-aware mode (setting `readNodes`) reads them: which
//! architectures a Pod's OS has Nodes of, and the node a bound Pod runs on. Plain Rust over the
//! host's JSON answers; the calls go through `cluster::Cluster`.
//!
//! What is read does not grow with the cluster in the common case: the host returns every
//! matching Node's whole `metadata` (field masks cut only `spec` and `status`), so the policy
//! selects few Nodes with label selectors. First the Nodes of the Pod's OS that the Pod admits
//! and whose architecture no image runs on (none when the images cover every architecture the
//! cluster has: nothing to pin, nothing more read); only when there are some (the Pod gets
//! pinned), the Nodes of the images' architectures that the Pod admits, to reject a Pod that no
//! Node can run. Cordoned (`spec.unschedulable`) and tainted Nodes count like the others: cordons
//! come and go (drains, upgrades), and taints are the Pod's tolerations' business
//! (`architectureTolerations`).

use serde::Deserialize;

use crate::cluster::Cluster;
use crate::constraint::Admits;
use crate::platform::{self, Architectures, ARCH_LABEL, OS_LABEL, WINDOWS_BUILD_LABEL};
use crate::resolve::host_error;
use crate::sparse::Text;

/// What the policy reads of a Node besides its metadata (which the host always returns whole):
/// the kubelet's own report of its architecture and OS, for a Node whose labels lack them.
pub const FIELD_MASKS: [&str; 2] = [
    "status.nodeInfo.architecture",
    "status.nodeInfo.operatingSystem",
];

/// One Node as the policy reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    /// `kubernetes.io/os` (else the beta label, else `status.nodeInfo.operatingSystem`).
    pub os: Option<String>,
    /// `kubernetes.io/arch` (else the beta label, else `status.nodeInfo.architecture`).
    pub architecture: Option<String>,
    /// A Windows Node's `node.kubernetes.io/windows-build`.
    pub windows_build: Option<String>,
}

#[derive(Deserialize, Default)]
struct RawList<'a> {
    #[serde(borrow, default)]
    items: Option<Vec<RawNode<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawNode<'a> {
    #[serde(borrow)]
    metadata: RawMetadata<'a>,
    #[serde(borrow)]
    status: RawStatus<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawMetadata<'a> {
    #[serde(borrow)]
    name: Option<Text<'a>>,
    #[serde(borrow)]
    labels: Option<RawLabels<'a>>,
}

/// The four labels the policy reads; the others are skipped without being built.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RawLabels<'a> {
    #[serde(borrow, rename = "kubernetes.io/arch")]
    arch: Option<Text<'a>>,
    #[serde(borrow, rename = "beta.kubernetes.io/arch")]
    beta_arch: Option<Text<'a>>,
    #[serde(borrow, rename = "kubernetes.io/os")]
    os: Option<Text<'a>>,
    #[serde(borrow, rename = "beta.kubernetes.io/os")]
    beta_os: Option<Text<'a>>,
    #[serde(borrow, rename = "node.kubernetes.io/windows-build")]
    windows_build: Option<Text<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawStatus<'a> {
    #[serde(borrow, rename = "nodeInfo")]
    node_info: RawNodeInfo<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawNodeInfo<'a> {
    #[serde(borrow)]
    architecture: Option<Text<'a>>,
    #[serde(borrow, rename = "operatingSystem")]
    operating_system: Option<Text<'a>>,
}

impl RawNode<'_> {
    fn read(self) -> Node {
        let value = |text: Option<Text<'_>>| {
            text.map(|t| t.0.trim().to_string())
                .filter(|t| !t.is_empty())
        };
        let labels = self.metadata.labels.unwrap_or_default();
        let info = self.status.node_info;
        Node {
            name: value(self.metadata.name).unwrap_or_default(),
            os: value(labels.os)
                .or(value(labels.beta_os))
                .or(value(info.operating_system)),
            architecture: value(labels.arch)
                .or(value(labels.beta_arch))
                .or(value(info.architecture)),
            windows_build: value(labels.windows_build),
        }
    }
}

/// Reads the host's answer to a Node list.
pub fn parse_list(raw: &[u8]) -> Result<Vec<Node>, String> {
    let list: RawList = serde_json::from_slice(raw)
        .map_err(|e| format!("the host's answer is not a NodeList: {e}"))?;
    Ok(list
        .items
        .unwrap_or_default()
        .into_iter()
        .map(RawNode::read)
        .collect())
}

/// Reads the host's answer to a Node get.
pub fn parse_node(raw: &[u8]) -> Result<Node, String> {
    let node: RawNode =
        serde_json::from_slice(raw).map_err(|e| format!("the host's answer is not a Node: {e}"))?;
    Ok(node.read())
}

/// The label selector of the Nodes of `os` whose architecture is (`in`) or is not (`notin`)
/// one of `architectures`. `notin` also selects Nodes without the label.
pub fn selector(os: &str, operator: &str, architectures: &Architectures) -> String {
    format!(
        "{OS_LABEL}={os},{ARCH_LABEL} {operator} ({})",
        platform::join(architectures, ",")
    )
}

/// The architectures the decision counts as schedulable, and where they come from (for
/// messages).
#[derive(Debug, Clone, PartialEq)]
pub struct Schedulable {
    /// Empty: unknown (every architecture counts).
    pub architectures: Architectures,
    /// Read from Nodes (`readNodes`), not from `schedulableArchitectures`.
    pub from_nodes: bool,
    /// Where they come from: `setting schedulableArchitectures: amd64, arm64`, or the Nodes read.
    pub note: String,
    /// The Nodes of the Pod's OS of every image architecture the Pod admits, when they were read
    /// (the Pod gets pinned): `windows_builds` reuses them.
    pub nodes: Option<Vec<Node>>,
}

impl Schedulable {
    /// From the setting `schedulableArchitectures`.
    pub fn configured(architectures: Architectures) -> Schedulable {
        let note = format!(
            "setting schedulableArchitectures: {}",
            platform::join(&architectures, ", ")
        );
        Schedulable {
            architectures,
            from_nodes: false,
            note,
            nodes: None,
        }
    }
}

/// The architectures a Pod of `os` whose images all run on `images` and whose own constraints
/// admit `admits` may run on, from the cluster's Nodes and the `autoscaled` pools of that OS.
/// Nodes whose architecture cannot be told (no label, no status) are left out. Errors are the
/// host's (to handle per `onLookupFailure`).
///
/// The result keeps every image architecture (the pin is the same as without `readNodes`)
/// unless no Node nor autoscaled pool of an admitted image architecture exists; it holds an
/// architecture no image runs on only when some Node (or autoscaled pool) the Pod admits has it,
/// which is when the Pod needs a pin.
pub fn schedulable(
    cluster: &mut dyn Cluster,
    os: &str,
    images: &Architectures,
    admits: &Admits,
    autoscaled: &Architectures,
) -> Result<Schedulable, String> {
    let admitted = admits.among(images);
    let mut outside = Architectures::new();
    let mut found = Architectures::new();
    let mut checked = false;
    let mut read_nodes = None;
    if !admitted.is_empty() {
        // The Nodes the Pod admits whose architecture no image runs on.
        let uncovered = match admits {
            Admits::All => Some(selector(os, "notin", images)),
            Admits::AllBut(excluded) => Some(selector(
                os,
                "notin",
                &images.union(excluded).cloned().collect(),
            )),
            Admits::Only(only) => {
                let rest: Architectures = only.difference(images).cloned().collect();
                (!rest.is_empty()).then(|| selector(os, "in", &rest))
            }
        };
        if let Some(uncovered) = uncovered {
            let nodes = parse_list(
                &cluster
                    .list_nodes(&uncovered, &FIELD_MASKS)
                    .map_err(host_error)?,
            )?;
            outside.extend(
                nodes
                    .into_iter()
                    .filter_map(|node| node.architecture)
                    .filter(|arch| !images.contains(arch) && admits.admits(arch)),
            );
        }
        outside.extend(
            autoscaled
                .iter()
                .filter(|arch| !images.contains(*arch) && admits.admits(arch))
                .cloned(),
        );
        // The Pod will be pinned: is there a Node (or an autoscaled pool) it can go to?
        if !outside.is_empty() && admitted.intersection(autoscaled).next().is_none() {
            let nodes = parse_list(
                &cluster
                    .list_nodes(&selector(os, "in", &admitted), &FIELD_MASKS)
                    .map_err(host_error)?,
            )?;
            found.extend(
                nodes
                    .iter()
                    .filter_map(|node| node.architecture.clone())
                    .filter(|arch| admitted.contains(arch)),
            );
            checked = true;
            read_nodes = Some(nodes);
        }
    }
    let mut architectures: Architectures = outside.union(autoscaled).cloned().collect();
    if !checked || !found.is_empty() {
        architectures.extend(images.iter().cloned());
    }
    let read = outside
        .difference(autoscaled)
        .chain(found.iter())
        .cloned()
        .collect::<Architectures>();
    let mut note = format!(
        "setting readNodes: {os} Nodes found of {}",
        if read.is_empty() {
            "no other architecture".to_string()
        } else {
            platform::join(&read, ", ")
        }
    );
    if !autoscaled.is_empty() {
        note.push_str(&format!(
            "; autoscaledArchitectures: {}",
            platform::join(autoscaled, ", ")
        ));
    }
    Ok(Schedulable {
        architectures,
        from_nodes: true,
        note,
        nodes: read_nodes,
    })
}

/// What the cluster's Windows Nodes say about the OS builds a Windows Pod's images share.
#[derive(Debug, Clone, PartialEq)]
pub enum Builds {
    /// Every Windows Node of the Pod's architectures reports one of the images' builds (or there
    /// is none): no build pin is needed.
    Covered,
    /// Some report another build (or none): pin to these, the images' builds that some Node
    /// reports (all of them when an autoscaled pool of the Pod's architectures may bring more).
    Pin(Architectures),
    /// Some report another build and none an image build: the builds they report, and how many
    /// report none.
    Absent {
        reported: Architectures,
        unlabelled: usize,
    },
}

/// The label selector of the Windows Nodes of `architectures` whose
/// `node.kubernetes.io/windows-build` is (`in`) or is not (`notin`) one of `builds`. `notin`
/// also selects Nodes without the label.
pub fn build_selector(
    architectures: &Architectures,
    operator: &str,
    builds: &Architectures,
) -> String {
    format!(
        "{OS_LABEL}=windows,{ARCH_LABEL} in ({}),{WINDOWS_BUILD_LABEL} {operator} ({})",
        platform::join(architectures, ","),
        platform::join(builds, ",")
    )
}

/// The OS builds to pin a Windows Pod to, from the cluster's Windows Nodes of the architectures
/// the Pod may finally run on (`architectures`) and the builds every image has (`builds`). A
/// Windows Node without a `node.kubernetes.io/windows-build` label counts as one of another
/// build: its build cannot be told, so a Pod that needs a pin is kept off it, and it never
/// confirms an image build. Nodes whose architecture label is missing are left out (as in
/// `schedulable`). `read` are the Windows Nodes of those architectures when `schedulable` read
/// them already (then no call is made); else one list finds the Nodes of other builds (none in
/// the common case: no pin, nothing more read), and only when there are some a second list
/// finds the Nodes of image builds, unless an `autoscaled` pool of those architectures exists.
/// Errors are the host's.
pub fn windows_builds(
    cluster: &mut dyn Cluster,
    architectures: &Architectures,
    builds: &Architectures,
    read: Option<&[Node]>,
    autoscaled: &Architectures,
) -> Result<Builds, String> {
    let of_pod = |node: &&Node| {
        node.architecture
            .as_ref()
            .is_some_and(|arch| architectures.contains(arch))
    };
    let other = |node: &&Node| {
        node.windows_build
            .as_ref()
            .is_none_or(|build| !builds.contains(build))
    };
    let mut list = |operator: &str| -> Result<Vec<Node>, String> {
        parse_list(
            &cluster
                .list_nodes(
                    &build_selector(architectures, operator, builds),
                    &FIELD_MASKS,
                )
                .map_err(host_error)?,
        )
    };
    let others: Vec<Node> = match read {
        Some(nodes) => nodes.iter().filter(of_pod).filter(other).cloned().collect(),
        None => list("notin")?
            .iter()
            .filter(of_pod)
            .filter(other)
            .cloned()
            .collect(),
    };
    if others.is_empty() {
        return Ok(Builds::Covered);
    }
    if architectures.intersection(autoscaled).next().is_some() {
        return Ok(Builds::Pin(builds.clone()));
    }
    let reported = |nodes: &[Node]| -> Architectures {
        nodes
            .iter()
            .filter(of_pod)
            .filter_map(|node| node.windows_build.clone())
            .filter(|build| builds.contains(build))
            .collect()
    };
    let found = match read {
        Some(nodes) => reported(nodes),
        None => reported(&list("in")?),
    };
    if !found.is_empty() {
        return Ok(Builds::Pin(found));
    }
    Ok(Builds::Absent {
        reported: others
            .iter()
            .filter_map(|node| node.windows_build.clone())
            .collect(),
        unlabelled: others
            .iter()
            .filter(|node| node.windows_build.is_none())
            .count(),
    })
}

/// The Node a bound Pod runs on, read through the host; the error says why it cannot be told.
pub fn bound_node(cluster: &mut dyn Cluster, name: &str) -> Result<Node, String> {
    let node = parse_node(&cluster.get_node(name, &FIELD_MASKS).map_err(host_error)?)?;
    if node.architecture.is_none() {
        return Err(format!(
            "the Node has neither a {ARCH_LABEL} label nor status.nodeInfo.architecture"
        ));
    }
    Ok(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_first_then_the_kubelet_status() {
        let nodes = parse_list(
            br#"{"apiVersion":"v1","kind":"NodeList","items":[
            {"metadata":{"name":"a","labels":{"kubernetes.io/arch":"arm64","kubernetes.io/os":"linux","zone":"z"}},
             "status":{"nodeInfo":{"architecture":"amd64","operatingSystem":"linux"}}},
            {"metadata":{"name":"b","labels":{"beta.kubernetes.io/arch":"s390x"}}},
            {"metadata":{"name":"c"},"status":{"nodeInfo":{"architecture":"ppc64le","operatingSystem":"linux"}}},
            {"metadata":{"name":"d","labels":{"kubernetes.io/arch":""}}}]}"#,
        )
        .unwrap();
        let read: Vec<(&str, Option<&str>, Option<&str>)> = nodes
            .iter()
            .map(|n| (n.name.as_str(), n.os.as_deref(), n.architecture.as_deref()))
            .collect();
        assert_eq!(
            read,
            [
                ("a", Some("linux"), Some("arm64")),
                ("b", None, Some("s390x")),
                ("c", Some("linux"), Some("ppc64le")),
                ("d", None, None)
            ]
        );
        assert_eq!(parse_list(br#"{"items":null}"#).unwrap(), []);
        assert!(parse_list(br#""not a list""#)
            .unwrap_err()
            .starts_with("the host's answer is not a NodeList: "));
    }

    #[test]
    fn selectors() {
        let set: Architectures = ["arm64".to_string(), "amd64".to_string()].into();
        assert_eq!(
            selector("linux", "notin", &set),
            "kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64)"
        );
    }
}
