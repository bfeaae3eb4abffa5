//! The cluster's Nodes, as the node-aware mode (setting `readNodes`) reads them: which
//! architectures a Pod's OS has Nodes of, and the node a bound Pod runs on. Plain Rust over the
//! host's JSON answers (`node`); the calls go through one evaluation's `cache::ClusterCache`.
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
//!
//! Whether the cluster has Nodes of another OS than the Pod's (`other_operating_system`: a Linux
//! Pod is then pinned to Linux, as a Windows one to Windows) is read last, once, and only for an
//! outcome that pin can change: every Node of the other OS, unless an `autoscaledArchitectures`
//! pool of it already says so. A Pod whose own constraints keep it to its OS (the usual
//! `nodeSelector: kubernetes.io/os: windows` of Windows Pods) reads none.

use crate::read::cache::ClusterCache;
use crate::read::constraint::Admits;
use crate::read::node::{parse_node, Node};
use crate::settings::names::check_label_value;

use crate::host::host_error;
use crate::platform::{self, Architectures, ARCH_LABEL, BETA_ARCH_LABEL, OS_LABEL};

/// The architectures a label selector may name besides the OS: the platforms Kubernetes
/// releases its node binaries for. Every label selector the policy sends is
/// `kubernetes.io/os=<linux|windows>`, alone or with `kubernetes.io/arch in (<X>)` or
/// `kubernetes.io/arch notin (<X>)` for a non-empty subset X of these, in this order: never a
/// value from a registry or from the Pod. So policy-server keeps at most
/// 1 + 2 (2^4 - 1) = 31 watches per OS for the policy, and `WITHOUT_ARCHITECTURE_SELECTOR`:
/// 63 in all (`selectors`).
pub const SELECTOR_ARCHITECTURES: [&str; 4] = ["amd64", "arm64", "ppc64le", "s390x"];

/// An architecture label value no node reports, standing for any such value in the clusters
/// `decide_from_nodes` weighs (never in an answer).
const ANY_OTHER: &str = "x-any-other";

/// The label selector of the Nodes without an architecture label (`kubernetes.io/arch` nor its
/// beta key), of any OS (or none): virtual-kubelet's, whose Pods run elsewhere
/// (`without_architecture_label`).
pub const WITHOUT_ARCHITECTURE_SELECTOR: &str = "!kubernetes.io/arch,!beta.kubernetes.io/arch";

/// Whether the cluster has Nodes without an architecture label (one list,
/// `WITHOUT_ARCHITECTURE_SELECTOR`). Errors are the host's.
pub fn without_architecture_label(cache: &mut ClusterCache) -> Result<bool, String> {
    Ok(!cache.nodes(WITHOUT_ARCHITECTURE_SELECTOR)?.is_empty())
}

/// Every label selector the policy can send (`SELECTOR_ARCHITECTURES`, and
/// `WITHOUT_ARCHITECTURE_SELECTOR`).
pub fn selectors() -> Vec<String> {
    let mut all = vec![WITHOUT_ARCHITECTURE_SELECTOR.to_string()];
    for os in platform::NODE_OPERATING_SYSTEMS {
        all.push(format!("{OS_LABEL}={os}"));
        for mask in 1..(1u32 << SELECTOR_ARCHITECTURES.len()) {
            let named: Architectures = SELECTOR_ARCHITECTURES
                .iter()
                .enumerate()
                .filter(|(bit, _)| mask & (1 << bit) != 0)
                .map(|(_, arch)| arch.to_string())
                .collect();
            for operator in ["in", "notin"] {
                all.extend(selector(os, operator, &named));
            }
        }
    }
    all
}

/// The label selector of the Nodes of `os` whose architecture is (`in`) or is not (`notin`) one
/// of those of `architectures` that selectors may name (`SELECTOR_ARCHITECTURES`); `notin`
/// also selects Nodes without the label. None for `in` no such architecture (it would select no
/// Node); `notin` none is every Node of `os`.
pub fn selector(os: &str, operator: &str, architectures: &Architectures) -> Option<String> {
    let named: Vec<&str> = SELECTOR_ARCHITECTURES
        .into_iter()
        .filter(|arch| architectures.contains(*arch))
        .collect();
    match (named.is_empty(), operator) {
        (true, "notin") => Some(format!("{OS_LABEL}={os}")),
        (true, _) => None,
        (false, _) => Some(format!(
            "{OS_LABEL}={os},{ARCH_LABEL} {operator} ({})",
            named.join(",")
        )),
    }
}

/// The nodes of one OS that may exist without a Node yet: the pools of the setting
/// `autoscaledArchitectures`, and the architectures Karpenter's NodePools can create for the Pod
/// (`node_pools::architectures`). Both count like Nodes of those architectures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pools {
    pub configured: Architectures,
    pub node_pools: Architectures,
    /// The architectures of NodePools left out because the Pod admits (by its nodeSelector and
    /// one required term), and its images run on, fewer of their architectures than their
    /// `minValues` on the architecture asks
    /// (`node_pools::meeting_min_values`): messages name them.
    pub min_values_unmet: Architectures,
    /// The architectures of NodePools left out because the Pod admits them only on nodes
    /// without the label `beta.kubernetes.io/arch`, which every node they create has: messages
    /// name them.
    pub beta_label_excluded: Architectures,
    /// Why Karpenter's provisioner ignores the Pod (`node_pools::ignored_by_karpenter`): every
    /// NodePool's architectures are then `min_values_unmet`'s (no node is created for it; nodes
    /// created for other Pods may take it), and messages say why.
    pub karpenter_ignores: Option<&'static str>,
}

impl Pools {
    /// Every architecture either names.
    pub fn all(&self) -> Architectures {
        self.configured.union(&self.node_pools).cloned().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.configured.is_empty() && self.node_pools.is_empty()
    }

    /// What the message says of them: `; autoscaledArchitectures: arm64; Karpenter NodePools:
    /// arm64, amd64` (empty when there are none).
    fn note(&self) -> String {
        let mut note = String::new();
        if !self.configured.is_empty() {
            note.push_str(&format!(
                "; autoscaledArchitectures: {}",
                platform::join(&self.configured, ", ")
            ));
        }
        if !self.node_pools.is_empty() {
            note.push_str(&format!(
                "; Karpenter NodePools can create {}",
                platform::join(&self.node_pools, ", ")
            ));
        }
        if let Some(reason) = self
            .karpenter_ignores
            .filter(|_| !self.min_values_unmet.is_empty())
        {
            note.push_str(&format!(
                "; Karpenter NodePools can create {} nodes, but none for this Pod: Karpenter's provisioner ignores a Pod with {reason}",
                platform::join(&self.min_values_unmet, ", ")
            ));
        } else if !self.min_values_unmet.is_empty() {
            note.push_str(&format!(
                "; Karpenter NodePools of {} serve only Pods that admit, and whose images run on, more of their architectures (minValues on kubernetes.io/arch)",
                platform::join(&self.min_values_unmet, ", ")
            ));
        }
        if !self.beta_label_excluded.is_empty() {
            note.push_str(&format!(
                "; Karpenter NodePools can create {} nodes too, but with the label {BETA_ARCH_LABEL}, and the Pod admits those architectures only on nodes without it",
                platform::join(&self.beta_label_excluded, ", ")
            ));
        }
        note
    }
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
    /// Every Node of the Pod's OS, when they were read (`windows_builds` reads their builds).
    pub nodes: Option<Vec<Node>>,
    /// The cluster has nodes of an OS other than the Pod's (setting `clusterOperatingSystems`,
    /// or Nodes and `autoscaledArchitectures` pools read with `readNodes`): the Pod is pinned to
    /// its own OS too.
    pub other_os: bool,
    /// The architectures of `architectures` that nodes may have without a Node yet (`Pools`):
    /// their Windows builds cannot be told.
    pub pools: Architectures,
    /// The architectures of NodePools left out for the Pod by their `minValues`
    /// (`Pools::min_values_unmet`): a Pod pinned to its images' architectures is never given a
    /// node of them, one that admits more may be. They count for no node (an OS with only those
    /// is decided as if it had one).
    pub min_values_unmet: Architectures,
    /// The architectures of NodePools the Pod admits only on nodes without the beta labels
    /// (`Pools::beta_label_excluded`): they count for no node, but the OS has them (it is not
    /// unknown).
    pub beta_label_excluded: Architectures,
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
            other_os: false,
            pools: Architectures::new(),
            min_values_unmet: Architectures::new(),
            beta_label_excluded: Architectures::new(),
        }
    }

    /// Whether the architectures are unknown (no Node nor pool that serves the Pod found): every
    /// architecture counts.
    pub fn unknown(&self) -> bool {
        self.architectures.is_empty() && self.beta_label_excluded.is_empty()
    }

    /// The Nodes of `os` found of `found` (their architectures; the Nodes themselves, when they
    /// were all read) and the `autoscaled` pools.
    fn read(
        os: &str,
        found: &Architectures,
        pools: &Pools,
        nodes: Option<Vec<Node>>,
    ) -> Schedulable {
        Schedulable::read_part(os, found, pools, nodes, &Unread::None)
    }

    /// As `read`, but the Nodes of `unread` were not listed: when none was found, the note says
    /// which were not read rather than "no Node".
    fn read_part(
        os: &str,
        found: &Architectures,
        pools: &Pools,
        nodes: Option<Vec<Node>>,
        unread: &Unread,
    ) -> Schedulable {
        let mut note = match (found.is_empty(), unread) {
            (false, _) => format!(
                "setting readNodes: {os} Nodes found of {}",
                platform::join(found, ", ")
            ),
            (true, Unread::None) => format!("setting readNodes: no {os} Node found"),
            (true, Unread::Of(unread)) => {
                let unread = platform::join(unread, ", ");
                format!(
                    "setting readNodes: no {os} Node found outside {unread}; those of {unread} were not read"
                )
            }
            (true, Unread::Outside(read)) => format!(
                "setting readNodes: no {os} Node found of {}; the others were not read",
                platform::join(read, ", ")
            ),
        };
        note.push_str(&pools.note());
        Schedulable {
            architectures: found.union(&pools.all()).cloned().collect(),
            from_nodes: true,
            note,
            nodes,
            other_os: false,
            pools: pools.all(),
            min_values_unmet: pools.min_values_unmet.clone(),
            beta_label_excluded: pools.beta_label_excluded.clone(),
        }
    }
}

/// Which Nodes of the OS a decision was made without reading.
enum Unread {
    None,
    /// Those of these architectures.
    Of(Architectures),
    /// Those outside these architectures (these were read).
    Outside(Architectures),
}

/// The architectures of Nodes. A value that is no label value (`status.nodeInfo` is free text)
/// cannot be told and is left out; any other counts, known or not: a Node labelled with an
/// architecture no image names is one the Pod is kept off. Node values go into messages only,
/// never into a patch or a selector.
fn architectures(nodes: &[Node]) -> Architectures {
    nodes
        .iter()
        .filter_map(|node| node.architecture.clone())
        .filter(|arch| check_label_value(arch).is_ok())
        .collect()
}

/// Whether the cluster has nodes of an OS other than `os`: an `autoscaled` pool of one, or
/// NodePools that create nodes of it, if not for the Pod (`Pools::min_values_unmet`: others'
/// may take it), with no call; else a Node listed with the selector `kubernetes.io/os=<other>`
/// (one of `selectors`). Errors are the host's.
pub fn other_operating_system(
    cache: &mut ClusterCache,
    os: &str,
    autoscaled: &dyn Fn(&str) -> Pools,
) -> Result<bool, String> {
    let may_exist = |pools: Pools| !pools.is_empty() || !pools.min_values_unmet.is_empty();
    if platform::other_operating_systems(os).any(|other| may_exist(autoscaled(other))) {
        return Ok(true);
    }
    for other in platform::other_operating_systems(os) {
        if !cache.nodes(&format!("{OS_LABEL}={other}"))?.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Every Node of `os` (one list, `kubernetes.io/os=<os>`: the list `other_operating_system`
/// reads), with the `autoscaled` pools of that OS: `None` when the cluster has neither. For a Pod
/// whose images run on `os` besides its own. Errors are the host's.
pub fn of_operating_system(
    cache: &mut ClusterCache,
    os: &str,
    pools: &Pools,
) -> Result<Option<Schedulable>, String> {
    let nodes = cache.nodes(&format!("{OS_LABEL}={os}"))?;
    if nodes.is_empty() && pools.is_empty() {
        return Ok(None);
    }
    let found = architectures(&nodes);
    let mut schedulable = Schedulable::read(os, &found, pools, Some(nodes));
    schedulable.other_os = true;
    Ok(Some(schedulable))
}

/// Decides for the cluster's Nodes of `os` (with the `autoscaled` pools of that OS), for a Pod
/// whose images all run on `images` and whose own constraints admit `admits`, reading no more of
/// them than the decision needs: `decide(schedulable)` is the decision for a cluster whose
/// architectures are `schedulable.architectures`.
///
/// The Nodes come in two lists: those of the images' architectures (`in`, of those a selector
/// may name) and the others (`notin`). The one the Pod may land on comes first: the others,
/// unless its own constraints admit only the images' architectures; none in the common case
/// (multi-arch images covering the cluster), whatever its size. The second list is read only
/// when the decision could differ between the clusters the first answer still allows: with as
/// few of those Nodes as can be (none, or one architecture of them when the cluster has no other
/// Node or pool of `os`: it has at least one), and with all of them. `all_nodes` (a Windows
/// Pod's OS builds) reads both. Errors are the host's (to handle per `onLookupFailure`).
pub fn decide_from_nodes<T: PartialEq>(
    cache: &mut ClusterCache,
    os: &str,
    images: &Architectures,
    admits: &Admits,
    pools: &Pools,
    all_nodes: bool,
    decide: &mut dyn FnMut(&mut ClusterCache, &Schedulable) -> T,
) -> Result<T, String> {
    let named: Architectures = SELECTOR_ARCHITECTURES
        .iter()
        .map(|arch| arch.to_string())
        .filter(|arch| images.contains(arch))
        .collect();
    let autoscaled = &pools.all();
    let outside = selector(os, "notin", &named).unwrap_or_default();
    let Some(inside) = selector(os, "in", &named) else {
        // Every Node is outside those a selector may name: one list of them all.
        let nodes = cache.nodes(&outside)?;
        let found = architectures(&nodes);
        return Ok(decide(
            cache,
            &Schedulable::read(os, &found, pools, Some(nodes)),
        ));
    };
    let inside_first = matches!(admits, Admits::Only(only) if only.is_subset(&named));
    let (first, second) = if inside_first {
        (&inside, &outside)
    } else {
        (&outside, &inside)
    };
    let mut nodes = cache.nodes(first)?;
    if !all_nodes {
        let found = architectures(&nodes);
        let known: Architectures = found.union(autoscaled).cloned().collect();
        // What the second list may add: the images' architectures (labelled Nodes), or any
        // architecture, one no node reports included (`notin` also selects the Nodes without
        // the label, known by their status only).
        let candidates: Architectures = if inside_first {
            platform::KNOWN_ARCHITECTURES
                .iter()
                .chain(&[ANY_OTHER])
                .map(|arch| arch.to_string())
                .collect()
        } else {
            named.clone()
        };
        let unknown: Architectures = candidates.difference(&known).cloned().collect();
        // A NodePool's architecture the Pod admits only on nodes without the beta labels counts
        // for no node, but says the OS has nodes.
        let none_known = known.is_empty() && pools.beta_label_excluded.is_empty();
        let fewest: Option<Vec<Architectures>> = match (none_known, inside_first) {
            (false, _) => Some(vec![Architectures::new()]),
            (true, false) => Some(unknown.iter().map(|arch| [arch.clone()].into()).collect()),
            // No Node nor pool of the images' architectures: the others decide, read them.
            (true, true) => None,
        };
        if let Some(mut possible) = fewest {
            possible.push(unknown);
            let cluster_with = |more: &Architectures| {
                let found = found.union(more).cloned().collect();
                Schedulable::read(os, &found, pools, None)
            };
            let mut answers = possible
                .iter()
                .map(|more| decide(&mut *cache, &cluster_with(more)));
            if let Some(first) = answers.next() {
                let mut same = true;
                for answer in answers {
                    same &= answer == first;
                }
                if same {
                    // Decided without the second list: the answer again, its note saying what
                    // was read (the first hypothesis adds nothing to a non-empty `found`).
                    let unread = if inside_first {
                        Unread::Outside(named.clone())
                    } else {
                        Unread::Of(named.clone())
                    };
                    let mut read = Schedulable::read_part(os, &found, pools, None, &unread);
                    read.architectures.extend(possible[0].iter().cloned());
                    return Ok(decide(cache, &read));
                }
            }
        }
    }
    nodes.extend(cache.nodes(second)?);
    let found = architectures(&nodes);
    let schedulable = Schedulable::read(os, &found, pools, Some(nodes));
    Ok(decide(cache, &schedulable))
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

/// The OS builds to pin a Windows Pod to, from the cluster's Windows Nodes (`nodes`, every one
/// read) of the architectures the Pod may finally run on (`architectures`) and the builds
/// every image has (`builds`). A Windows Node without a `node.kubernetes.io/windows-build`
/// label, or with a value that is no build, counts as one of another build: its build cannot be
/// told, so a Pod that needs a pin is kept off it, and it never confirms an image build. Nodes
/// whose architecture is missing are left out. The builds compared come from the images (which
/// are checked): no Node's value reaches a patch unless it equals one of them.
pub fn windows_builds(
    nodes: &[Node],
    architectures: &Architectures,
    builds: &Architectures,
    autoscaled: &Architectures,
) -> Builds {
    let of_pod: Vec<&Node> = nodes
        .iter()
        .filter(|node| {
            node.architecture
                .as_ref()
                .is_some_and(|arch| architectures.contains(arch))
        })
        .collect();
    let others: Vec<&&Node> = of_pod
        .iter()
        .filter(|node| {
            node.windows_build
                .as_ref()
                .is_none_or(|build| !builds.contains(build))
        })
        .collect();
    if others.is_empty() {
        return Builds::Covered;
    }
    if architectures.intersection(autoscaled).next().is_some() {
        return Builds::Pin(builds.clone());
    }
    let found: Architectures = of_pod
        .iter()
        .filter_map(|node| node.windows_build.clone())
        .filter(|build| builds.contains(build))
        .collect();
    if !found.is_empty() {
        return Builds::Pin(found);
    }
    let build_value = |node: &&&Node| node.windows_build.as_deref().and_then(platform::os_build);
    Builds::Absent {
        reported: others.iter().filter_map(build_value).collect(),
        unlabelled: others
            .iter()
            .filter(|node| build_value(node).is_none())
            .count(),
    }
}

/// The Node a bound Pod runs on, read through the host; the error says why it cannot be told.
pub fn bound_node(cache: &mut ClusterCache, name: &str) -> Result<Node, String> {
    let node = parse_node(&cache.node(name).map_err(host_error)?)?;
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
    fn selectors_name_only_release_platforms() {
        let set = |list: &[&str]| -> Architectures { list.iter().map(|a| a.to_string()).collect() };
        assert_eq!(
            selector(
                "linux",
                "notin",
                &set(&["s390x", "arm64", "amd64", "riscv64"])
            )
            .as_deref(),
            Some("kubernetes.io/os=linux,kubernetes.io/arch notin (amd64,arm64,s390x)")
        );
        assert_eq!(
            selector("windows", "in", &set(&["amd64"])).as_deref(),
            Some("kubernetes.io/os=windows,kubernetes.io/arch in (amd64)")
        );
        assert_eq!(
            selector("linux", "notin", &set(&["riscv64"])).as_deref(),
            Some("kubernetes.io/os=linux")
        );
        assert_eq!(selector("linux", "in", &set(&["riscv64", "386"])), None);
        let all = selectors();
        assert_eq!(all.len(), 63);
        assert_eq!(
            all.iter().collect::<std::collections::BTreeSet<_>>().len(),
            63
        );
        assert_eq!(all[0], "!kubernetes.io/arch,!beta.kubernetes.io/arch");
    }
}
