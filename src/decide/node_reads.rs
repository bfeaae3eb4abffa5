//! Which of the cluster's Nodes a decision reads with `readNodes`, and no more (the selector
//! economy): what is read does not grow with the cluster in the common case. The host returns
//! every matching Node's whole `metadata` (field masks cut only `spec` and `status`), so the
//! policy selects few Nodes with label selectors (`read::selectors`). First the Nodes of the
//! Pod's OS that the Pod may land on and whose architecture no image runs on (none when the images
//! cover every architecture the cluster has: nothing to pin, nothing more read); the other list
//! only when the answer could differ between the clusters the first list still allows.
//! Cordoned (`spec.unschedulable`) and tainted Nodes count like the others: cordons come and go
//! (drains, upgrades), and taints are the Pod's tolerations' business (`architectureTolerations`).
//!
//! Whether the cluster has Nodes of another OS than the Pod's (`other_operating_system`) is read
//! once, and only for an answer that the OS pin can change: every Node of the other OS, unless
//! a pool of it already says so.

use crate::platform::{self, Architectures};
use crate::read::cluster::ClusterReader;
use crate::read::constraint::Admits;
use crate::read::node::architectures;
use crate::read::selectors::{self, selector, SELECTOR_ARCHITECTURES};

use super::cluster_view::{Pools, Schedulable};

/// An architecture label value no node reports, standing for any such value in the clusters
/// the decision weighs (never in an answer).
const ANY_OTHER: &str = "x-any-other";

/// The view of the cluster's Nodes of `os` (with `pools`) that decides a Pod whose images all run
/// on `images` and whose own constraints admit `admits`, reading no more of them than the answer
/// needs: `answer(view)` is the answer for a cluster whose architectures are the view's.
///
/// The Nodes come in two lists: those of the images' architectures (`in`, of those a selector
/// may name) and the others (`notin`). The one the Pod may land on comes first: the others,
/// unless its own constraints admit only the images' architectures; none in the common case
/// (multi-arch images covering the cluster), whatever its size. The second list is read only
/// when the answer could differ between the clusters the first answer still allows: with as few
/// of those Nodes as can be (none, or one architecture of them when the cluster has no other Node
/// or pool of `os`: it has at least one), and with all of them. `all_nodes` (a Windows Pod's OS
/// builds) reads both. Errors are the host's (to handle per `onLookupFailure`).
pub fn view_of_os<T: PartialEq>(
    cluster: &mut ClusterReader,
    os: &str,
    images: &Architectures,
    admits: &Admits,
    pools: &Pools,
    all_nodes: bool,
    answer: &mut dyn FnMut(&mut ClusterReader, &Schedulable) -> T,
) -> Result<Schedulable, String> {
    let named: Architectures = SELECTOR_ARCHITECTURES
        .iter()
        .map(|arch| arch.to_string())
        .filter(|arch| images.contains(arch))
        .collect();
    let outside = selector(os, "notin", &named).unwrap_or_default();
    let Some(inside) = selector(os, "in", &named) else {
        // Every Node is outside those a selector may name: one list of them all.
        let nodes = cluster.nodes(&outside)?;
        let found = architectures(&nodes);
        return Ok(Schedulable::read(os, &found, pools, Some(nodes), None));
    };
    let inside_first = matches!(admits, Admits::Only(only) if only.is_subset(&named));
    let (first, second) = match inside_first {
        true => (&inside, &outside),
        false => (&outside, &inside),
    };
    let mut nodes = cluster.nodes(first)?;
    if !all_nodes {
        let found = architectures(&nodes);
        if let Some(view) =
            without_second(cluster, os, (&named, inside_first), &found, pools, answer)
        {
            return Ok(view);
        }
    }
    nodes.extend(cluster.nodes(second)?);
    let found = architectures(&nodes);
    Ok(Schedulable::read(os, &found, pools, Some(nodes), None))
}

/// The view without the second list, when every cluster it may add answers alike: the first
/// list `found` its architectures, of the images' that selectors `named` (`inside_first`: it
/// was those), or outside them.
fn without_second<T: PartialEq>(
    cluster: &mut ClusterReader,
    os: &str,
    (named, inside_first): (&Architectures, bool),
    found: &Architectures,
    pools: &Pools,
    answer: &mut dyn FnMut(&mut ClusterReader, &Schedulable) -> T,
) -> Option<Schedulable> {
    let known: Architectures = found.union(&pools.all()).cloned().collect();
    // What the second list may add: the images' architectures (labelled Nodes), or any
    // architecture, one no node reports included (`notin` also selects the Nodes without the
    // label, known by their status only).
    let candidates: Architectures = match inside_first {
        true => platform::KNOWN_ARCHITECTURES
            .iter()
            .chain(&[ANY_OTHER])
            .map(|arch| arch.to_string())
            .collect(),
        false => named.clone(),
    };
    let unknown: Architectures = candidates.difference(&known).cloned().collect();
    // A NodePool's architecture the Pod admits only on nodes without the beta labels counts for
    // no node, but says the OS has nodes.
    let none_known = known.is_empty() && pools.beta_label_excluded.is_empty();
    let mut possible: Vec<Architectures> = match (none_known, inside_first) {
        (false, _) => vec![Architectures::new()],
        (true, false) => unknown.iter().map(|arch| [arch.clone()].into()).collect(),
        // No Node nor pool of the images' architectures: the others decide, read them.
        (true, true) => return None,
    };
    possible.push(unknown);
    let mut answers = Vec::with_capacity(possible.len());
    for more in &possible {
        let more = found.union(more).cloned().collect();
        let view = Schedulable::read(os, &more, pools, None, None);
        answers.push(answer(cluster, &view));
    }
    if answers.iter().any(|other| *other != answers[0]) {
        return None;
    }
    // Decided without the second list: its note says what was read (the first hypothesis adds
    // nothing to a non-empty `found`).
    let unread = Some((!inside_first, named));
    let mut view = Schedulable::read(os, found, pools, None, unread);
    view.architectures.extend(possible[0].iter().cloned());
    Some(view)
}

/// Whether the cluster has nodes of an OS other than `os`: a pool of one (`pools_of`: the
/// settings' pools, or NodePools that create nodes of it, if not for the Pod), with no call; else
/// a Node listed with the selector `kubernetes.io/os=<other>`. Errors are the host's.
pub fn other_operating_system(
    cluster: &mut ClusterReader,
    os: &str,
    pools_of: &dyn Fn(&str) -> Pools,
) -> Result<bool, String> {
    if platform::other_operating_systems(os).any(|other| pools_of(other).may_exist()) {
        return Ok(true);
    }
    for other in platform::other_operating_systems(os) {
        if !cluster.nodes(&selectors::of_os(other))?.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Every Node of `os` (one list, `kubernetes.io/os=<os>`: the list `other_operating_system`
/// reads), with the `pools` of that OS: `None` when the cluster has neither. For a Pod whose
/// images run on `os` besides its own. Errors are the host's.
pub fn of_operating_system(
    cluster: &mut ClusterReader,
    os: &str,
    pools: &Pools,
) -> Result<Option<Schedulable>, String> {
    let nodes = cluster.nodes(&selectors::of_os(os))?;
    if nodes.is_empty() && pools.is_empty() {
        return Ok(None);
    }
    let found = architectures(&nodes);
    let mut view = Schedulable::read(os, &found, pools, Some(nodes), None);
    view.other_os = true;
    Ok(Some(view))
}
