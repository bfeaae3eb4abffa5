//! Karpenter's NodePools counted for one Pod: per OS, the architectures they can create nodes
//! of that the Pod tolerates and is served on (`read::node_pools` reads what each pool can
//! create), and those that count for no node of the Pod, for messages.

use crate::platform::{self, Architectures, NODE_OPERATING_SYSTEMS};
use crate::read::constraint::{Admits, Constraints};
use crate::read::node_pools::{self, NodePool};
use crate::settings::{Settings, Toleration};

use super::cluster_view::Pools;
use super::facts::Facts;

/// The pools of each OS: `autoscaledArchitectures`' for it, and what `node_pools` says the
/// NodePools can create there.
pub fn pools_of<'a>(
    settings: &'a Settings,
    node_pools: impl Fn(&str) -> Architectures + 'a,
) -> impl Fn(&str) -> Pools + 'a {
    move |os| Pools {
        configured: settings.autoscaled(os),
        node_pools: node_pools(os),
        ..Pools::default()
    }
}

/// The pools of each OS with the NodePools counted for a Pod of `tolerations`. A Pod
/// Karpenter's provisioner ignores (`karpenter_ignores`, why) is served by no NodePool, and kept
/// off those of their architectures its images do not run on (nodes created for other Pods may
/// take it).
pub fn counted<'a>(
    facts: &'a Facts,
    pools: &'a [NodePool],
    tolerations: &'a [Toleration],
    karpenter_ignores: Option<&'static str>,
) -> impl Fn(&str) -> Pools + 'a {
    let min_values = pools.iter().any(|pool| pool.architecture_min_values > 1);
    // A pool's nodes carry the beta labels (their kubelet sets them, and Karpenter's scheduler
    // reads `beta.kubernetes.io/arch` as `kubernetes.io/arch`): an architecture the Pod admits
    // only on nodes without them is not counted (`Pools::beta_label_excluded`). One it does not
    // admit at all counts, as a Node of it does: the OS has nodes, none of them the Pod's.
    let admitted: Vec<(&str, Admits, Admits)> = NODE_OPERATING_SYSTEMS
        .iter()
        .filter_map(|os| {
            let constraints = facts.pod.on(os)?;
            Some((
                *os,
                constraints.admits_with_beta_labels(),
                constraints.admits(),
            ))
        })
        .collect();
    move |os: &str| {
        let every = node_pools::architectures(pools, os, tolerations, facts.settings);
        let counted = match images_of(facts, os).filter(|_| min_values) {
            _ if karpenter_ignores.is_some() => Architectures::new(),
            Some((images, constraints)) => {
                // After admission nothing is pinned: Karpenter reads the Pod's own terms.
                let any = platform::every_architecture();
                let images = match facts.subject.after_admission() {
                    true => &any,
                    false => images,
                };
                let usable = node_pools::meeting_min_values(pools, images, constraints);
                node_pools::architectures(&usable, os, tolerations, facts.settings)
            }
            None => every.clone(),
        };
        let admitted = admitted.iter().find(|(of, ..)| *of == os);
        let without_beta_only = |arch: &String| matches!(admitted, Some((_, with_beta, any)) if any.admits(arch) && !with_beta.admits(arch));
        let (beta_label_excluded, node_pools) = counted
            .iter()
            .cloned()
            .partition(|arch| without_beta_only(arch));
        Pools {
            configured: facts.settings.autoscaled(os),
            // (For a Pod Karpenter ignores, no node of the pools can take it where it admits
            // the architecture only on nodes without the beta labels.)
            min_values_unmet: every
                .difference(&counted)
                .filter(|arch| karpenter_ignores.is_none() || !without_beta_only(arch))
                .cloned()
                .collect(),
            node_pools,
            beta_label_excluded,
            karpenter_ignores,
        }
    }
}

/// What the images run on for `os`, and the Pod's own constraints there: the policy pins the
/// Pod to no more, and a pool whose minValues on the architecture asks for more of its
/// architectures than the Pod admits by one term is not the Pod's (named in messages; the Pod
/// is kept off those of its architectures the images do not run on, `placement::cluster_common`).
fn images_of<'a>(facts: &'a Facts, os: &str) -> Option<(&'a Architectures, &'a Constraints)> {
    if os == facts.os() {
        return Some((&facts.image_common, facts.constraints));
    }
    facts
        .other(os)
        .map(|other| (&other.image_common, &other.constraints))
}
