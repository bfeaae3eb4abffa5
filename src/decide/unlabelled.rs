//! Nodes without a `kubernetes.io/arch` label (virtual-kubelet's: AKS virtual nodes on Azure
//! Container Instances and other providers, whose Pods run elsewhere): the policy cannot tell
//! what they run, and a pin on the label would lose them for good (a Pod sent there by its own
//! nodeSelector and tolerations could never be scheduled). With `readNodes`, a Pod whose
//! required terms the policy changed keeps them reachable (`edit::affinity::
//! keep_without_architecture`) when the cluster has such Nodes: one list, read only then.

use serde_json::Value;

use crate::edit::affinity;
use crate::message::Failure;
use crate::read::cache::ClusterCache;
use crate::read::nodes;
use crate::read::pod;

use super::facts::Facts;
use super::outcome::{on_lookup_failure, Outcome};

/// After the decision with `readNodes`: `pod` as decided from `original`. Where the policy
/// changed the Pod's required terms and the cluster has Nodes without an architecture label,
/// the Pod gets a copy of each of its own terms for them. A list that fails follows
/// `onLookupFailure` (`ignoreImage`: pinned as if there were none, with a warning); none is read
/// after another Node list failed.
pub(super) fn keep_nodes_without_architecture(
    original: &Value,
    pod: &mut Value,
    facts: &Facts,
    cluster: &mut ClusterCache,
    outcome: Result<Outcome, Outcome>,
) -> Result<Outcome, Outcome> {
    let mut warnings = match outcome {
        Ok(Outcome::Changed(warnings)) => warnings,
        other => return other,
    };
    let own = &original["spec"];
    // Nothing pinned; or a Node list failed, and the Pod was decided without the cluster's
    // Nodes (`onLookupFailure: ignoreImage`): another list would fail alike.
    if pod::required_terms(own) == pod::required_terms(&pod["spec"]) || cluster.a_node_list_failed()
    {
        return Ok(Outcome::Changed(warnings));
    }
    match nodes::without_architecture_label(cluster) {
        Ok(false) => {}
        Ok(true) => {
            affinity::keep_without_architecture(&mut pod["spec"], own);
        }
        Err(cause) => {
            let failure = Failure::nodes_without_architecture(facts.subject.name, cause);
            if let Err(outcome) = on_lookup_failure(failure, facts.settings, &mut warnings) {
                // Settled by the failure: the Pod as it came.
                *pod = original.clone();
                return Err(outcome);
            }
        }
    }
    Ok(Outcome::Changed(warnings))
}
