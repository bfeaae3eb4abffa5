//! Nodes without a `kubernetes.io/arch` label (virtual-kubelet's: AKS virtual nodes on Azure
//! Container Instances and other providers, whose Pods run elsewhere): the policy cannot tell
//! what they run, and a pin on the label would lose them for good (a Pod sent there by its own
//! nodeSelector and tolerations could never be scheduled). With `readNodes`, a Pod whose required
//! terms the plan changes keeps them reachable (`Plan::unlabelled_copies`) when the cluster has
//! such Nodes: one list, read only then.

use std::ops::ControlFlow;

use crate::message::Failure;
use crate::read::cluster::ClusterReader;

use super::answer::{on_lookup_failure, Answer};
use super::facts::Facts;

/// The answer with `readNodes`, where the plan changes the Pod's required terms and the cluster
/// has Nodes without an architecture label: the plan adds a copy of each of the Pod's own terms
/// for them. A list that fails follows `onLookupFailure` (`ignoreImage`: pinned as if there were
/// none, with a warning); none is read after another Node list failed.
pub fn keep_unlabelled(facts: &Facts, cluster: &mut ClusterReader, answer: Answer) -> Answer {
    let Answer::Pinned(mut plan, mut warnings) = answer else {
        return answer;
    };
    // Nothing pinned; or a Node list failed, and the Pod was decided without the cluster's
    // Nodes (`onLookupFailure: ignoreImage`): another list would fail alike.
    if plan.terms.is_none() || cluster.a_node_list_failed() {
        return Answer::Pinned(plan, warnings);
    }
    match cluster.without_architecture_label() {
        Ok(found) => plan.unlabelled_copies = found,
        Err(cause) => {
            let failure = Failure::nodes_without_architecture(facts.subject.name(), cause);
            if let ControlFlow::Break(answer) =
                on_lookup_failure(failure, facts.settings, &mut warnings)
            {
                return answer;
            }
        }
    }
    Answer::Pinned(plan, warnings)
}
