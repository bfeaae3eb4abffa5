//! The cluster as one decision counts it (`Schedulable`): the architectures the nodes of the
//! Pod's OS have or may have (Nodes read, the settings' pools, Karpenter's NodePools) and where
//! they come from, for messages. The hypotheses of `node_aware` are views of this kind.

use crate::message;
use crate::platform::Architectures;
use crate::read::node::Node;

/// The nodes of one OS that may exist without a Node yet: the pools of the setting
/// `autoscaledArchitectures`, and the architectures Karpenter's NodePools can create for the Pod
/// (`node_pools`). Both count like Nodes of those architectures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pools {
    pub configured: Architectures,
    pub node_pools: Architectures,
    /// The architectures of NodePools left out because the Pod admits (by its nodeSelector and
    /// one required term), and its images run on, fewer of their architectures than their
    /// `minValues` on the architecture asks: messages name them.
    pub min_values_unmet: Architectures,
    /// The architectures of NodePools left out because the Pod admits them only on nodes
    /// without the label `beta.kubernetes.io/arch`, which every node they create has.
    pub beta_label_excluded: Architectures,
    /// Why Karpenter's provisioner ignores the Pod: every NodePool's architectures are then
    /// `min_values_unmet`'s (no node is created for it; nodes created for other Pods may take
    /// it), and messages say why.
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

    /// Whether nodes of the OS may exist, if not for the Pod (`min_values_unmet`: others'
    /// may take it).
    pub fn may_exist(&self) -> bool {
        !self.is_empty() || !self.min_values_unmet.is_empty()
    }

    fn note(&self) -> String {
        message::pools_note(
            &self.configured,
            &self.node_pools,
            &self.min_values_unmet,
            self.karpenter_ignores,
            &self.beta_label_excluded,
        )
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
        Schedulable {
            note: message::schedulable_note(&architectures),
            architectures,
            from_nodes: false,
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
    /// were all read) and the pools; `unread`: the Nodes not listed, those of these
    /// architectures (`true`) or outside them (`false`): the note says which were not read rather
    /// than "no Node" when none was found.
    pub fn read(
        os: &str,
        found: &Architectures,
        pools: &Pools,
        nodes: Option<Vec<Node>>,
        unread: Option<(bool, &Architectures)>,
    ) -> Schedulable {
        let note = message::nodes_note(os, found, unread) + &pools.note();
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
