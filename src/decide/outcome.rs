//! What the decision answers (`Outcome`, and the `Decision` on a request), and how a failed
//! read (`onLookupFailure`) and a refusal (`onNoCommonArchitecture`) settle it.

use serde_json::Value;

use crate::message::{Failure, Refusal};
use crate::settings::{OnLookupFailure, OnNoCommonArchitecture, Settings};

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict<Object = Value> {
    /// Let the object through unchanged.
    Accept,
    /// Let the object through as given (the whole object, changed only where needed).
    Mutate(Object),
    /// Refuse it with this message.
    Reject(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision<Object = Value> {
    pub verdict: Verdict<Object>,
    pub warnings: Vec<String>,
}

impl Decision {
    pub fn accept(warnings: Vec<String>) -> Decision {
        Decision {
            verdict: Verdict::Accept,
            warnings,
        }
    }

    pub fn reject(message: String, warnings: Vec<String>) -> Decision {
        Decision {
            verdict: Verdict::Reject(message),
            warnings,
        }
    }
}

/// What happened to a Pod (or Pod template), with the warnings for the user.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Unchanged(Vec<String>),
    Changed(Vec<String>),
    Rejected(String, Vec<String>),
}

/// The Pod or Pod template decided, as messages name it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// `Pod`, `Pod template`.
    pub name: &'a str,
    /// A DaemonSet's template under `validate`: warn about the nodes its Pods will fail on.
    pub daemon_set: bool,
    /// A DaemonSet's template (under either mode): its controller creates Pods only on the
    /// Nodes it selects, none where the cluster has no node of its OS (warned, not refused).
    pub one_per_node: bool,
    /// A Pod after admission (an UPDATE), whose node affinity can no longer change: judged
    /// against where it is or may go, never edited (`decide_update`). NodePools count for it
    /// even where Karpenter's provisioner ignores it, as when it was admitted; not for a gated
    /// Pod's pin, decided as on CREATE (Karpenter reads the Pod once its gates are removed).
    pub after_admission: bool,
    /// The edit is written and may add required terms: a Pod's CREATE, a template under
    /// `mutate` (not under `validate`, whose edit is dropped, nor a gated Pod's UPDATE, whose
    /// terms the API server lets only narrow). Only then are the Nodes without an architecture
    /// label read (`unlabelled`).
    pub adds_terms: bool,
}

impl Subject<'_> {
    /// Only the nodes of another OS that the Pod admits count (of an architecture that OS's nodes
    /// may have), not every node of it: after admission, and for a DaemonSet's template under
    /// `validate` (warned about the nodes of another OS it admits).
    pub(super) fn counts_admitted_other_os(&self) -> bool {
        self.after_admission || self.daemon_set
    }
}

/// `onLookupFailure` applied to a read that failed (images, Nodes, Windows Nodes, a bound Pod's
/// node): `reject` and `accept` settle the outcome; `ignoreImage` adds its warnings and lets
/// the caller go on without what could not be read.
pub(super) fn on_lookup_failure(
    failure: Failure,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Result<(), Outcome> {
    match settings.on_lookup_failure {
        OnLookupFailure::Reject => Err(Outcome::Rejected(
            failure.rejection(),
            std::mem::take(warnings),
        )),
        OnLookupFailure::Accept => {
            warnings.extend(failure.warnings(true));
            Err(Outcome::Unchanged(std::mem::take(warnings)))
        }
        OnLookupFailure::IgnoreImage => {
            warnings.extend(failure.warnings(false));
            Ok(())
        }
    }
}

/// No architecture both runs every image and is admitted by the Pod's own constraints (or the
/// cluster's nodes): reject, or accept unchanged with a warning (`onNoCommonArchitecture:
/// accept`). Takes the warnings gathered so far.
pub(super) fn refuse(refusal: Refusal, warnings: &mut Vec<String>, settings: &Settings) -> Outcome {
    let mut warnings = std::mem::take(warnings);
    match settings.on_no_common_architecture {
        OnNoCommonArchitecture::Reject => Outcome::Rejected(refusal.rejection(), warnings),
        OnNoCommonArchitecture::Accept => {
            warnings.push(refusal.accepted());
            Outcome::Unchanged(warnings)
        }
    }
}
