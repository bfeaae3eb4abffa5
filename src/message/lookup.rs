//! Failed lookups: how each `onLookupFailure` words a read that failed (`Failure`), and the
//! warnings of a Pod none of whose images could be looked up (`fallbackArchitectures`).

use super::text::{capped, one_line, warning, PREFIX};
use crate::platform::{self, Architectures};
use crate::settings::Settings;

/// A read that failed, and how each `onLookupFailure` words it: the rejection's lead and, for
/// each item that failed, its name in the rejection, its cause, and the lead-ins of the
/// `accept` and `ignoreImage` warnings.
pub(crate) struct Failure {
    pub reject: String,
    pub items: Vec<FailedItem>,
    /// What to do about it, when the cause says (a registry's rate limit).
    pub advice: Option<String>,
}

pub(crate) struct FailedItem {
    /// `image "x": ` in a rejection that lists several, else empty.
    pub name: String,
    pub cause: String,
    pub accept: String,
    pub ignore: String,
}

impl Failure {
    /// The rejection (`onLookupFailure: reject`): every item and its cause on one line.
    pub fn rejection(&self) -> String {
        let all = self
            .items
            .iter()
            .map(|item| format!("{}{}", item.name, one_line(&item.cause, 300)))
            .collect::<Vec<_>>()
            .join("; ");
        let advice = self
            .advice
            .as_deref()
            .map_or(String::new(), |a| format!("; {a}"));
        format!(
            "{}: {all} (setting onLookupFailure: reject){advice}",
            self.reject
        )
    }

    /// The warnings of `accept` (when `accept`) or of `ignoreImage`, one per item.
    /// The advice, if any, is one more warning.
    pub fn warnings(&self, accept: bool) -> impl Iterator<Item = String> + '_ {
        let advice = self.advice.iter().map(|a| format!("{PREFIX}: {a}"));
        self.items
            .iter()
            .map(move |item| {
                let lead = if accept { &item.accept } else { &item.ignore };
                warning(lead.clone(), &item.cause)
            })
            .chain(advice)
    }

    /// Images whose lookup failed (the image as [`labelled`](super::naming::labelled) names it,
    /// cause).
    /// A lookup a registry refused for its rate limit is named as such, with what to do.
    pub fn images(subject: &str, failed: &[(String, &str)]) -> Failure {
        let limited = failed.iter().any(|(_, cause)| rate_limited(cause));
        Failure {
            advice: limited.then(|| RATE_LIMIT_ADVICE.to_string()),
            reject: format!("{PREFIX}: cannot tell which architectures the {subject}'s images run on"),
            items: failed
                .iter()
                .map(|(image, cause)| FailedItem {
                    name: format!("{image}: "),
                    cause: match rate_limited(cause) {
                        true => format!("rate-limited by its registry (HTTP 429): {cause}"),
                        false => cause.to_string(),
                    },
                    accept: format!("{PREFIX}: the {subject} was not pinned to an architecture because a lookup failed: {image}: "),
                    ignore: format!("{PREFIX}: {image} was left out of the architecture decision because its lookup failed: "),
                })
                .collect(),
        }
    }

    /// The cluster's Nodes of `os` could not be listed.
    pub fn nodes(os: &str, subject: &str, cause: String) -> Failure {
        Failure::one(
            format!("{PREFIX}: cannot read the cluster's {os} Nodes"),
            cause,
            format!("{PREFIX}: the {subject} was not pinned to an architecture because the cluster's Nodes could not be read: "),
            format!("{PREFIX}: the cluster's Nodes could not be read, so the {subject} is pinned to every architecture its images run on: "),
        )
    }

    /// The Nodes without a `kubernetes.io/arch` label could not be listed: under `ignoreImage`
    /// the Pod is pinned as if there were none.
    pub fn nodes_without_architecture(subject: &str, cause: String) -> Failure {
        Failure::one(
            format!("{PREFIX}: cannot read the cluster's Nodes without a kubernetes.io/arch label"),
            cause,
            format!("{PREFIX}: the {subject} was not pinned because the cluster's Nodes without a kubernetes.io/arch label could not be read: "),
            format!("{PREFIX}: the cluster's Nodes without a kubernetes.io/arch label could not be read, so the {subject} is pinned as if there were none: "),
        )
    }

    /// The Nodes of an OS other than the Pod's (`other`) could not be read: under `ignoreImage`
    /// the Pod is pinned to its OS, as in a cluster of several.
    pub fn other_os_nodes(other: &str, os: &str, subject: &str, cause: String) -> Failure {
        Failure::one(
            format!("{PREFIX}: cannot read the cluster's {other} Nodes"),
            cause,
            format!("{PREFIX}: the {subject} was not pinned because the cluster's {other} Nodes could not be read: "),
            format!("{PREFIX}: the cluster's {other} Nodes could not be read, so the {subject} is pinned to its OS ({os}) as in a cluster of several: "),
        )
    }

    /// Karpenter's NodePools could not be listed: under `ignoreImage` the Pod is decided as if
    /// they could create nodes of every architecture (it is pinned to every architecture its
    /// images run on, never refused for want of a node).
    pub fn node_pools(subject: &str, cause: String) -> Failure {
        Failure::one(
            format!("{PREFIX}: cannot read the cluster's Karpenter NodePools"),
            cause,
            format!("{PREFIX}: the {subject} was not pinned because the cluster's Karpenter NodePools could not be read: "),
            format!("{PREFIX}: the cluster's Karpenter NodePools could not be read, so the {subject} is decided as if they could create nodes of any OS and architecture: "),
        )
    }

    /// The RuntimeClass a Windows Pod names could not be read: under `ignoreImage` its Windows
    /// builds are pinned, as a process-isolated Pod's.
    pub fn runtime_class(name: &str, subject: &str, cause: String) -> Failure {
        Failure::one(
            format!("{PREFIX}: cannot read RuntimeClass {name:?}, which the {subject} names"),
            cause,
            format!("{PREFIX}: the {subject} was not pinned because its RuntimeClass {name:?} could not be read: "),
            format!("{PREFIX}: RuntimeClass {name:?} could not be read, so the {subject} is kept to its images' Windows OS builds as a process-isolated Pod: "),
        )
    }

    /// The node a bound Pod runs on could not be read (`accept` and `ignoreImage` alike leave
    /// the Pod unchecked).
    pub fn bound_node(name: &str, subject: &str, cause: String) -> Failure {
        let unchecked = format!("{PREFIX}: the {subject} was not checked against node {name:?}, which could not be read: ");
        Failure::one(
            format!("{PREFIX}: cannot read node {name:?}, which the {subject} is bound to"),
            cause,
            unchecked.clone(),
            unchecked,
        )
    }

    fn one(reject: String, cause: String, accept: String, ignore: String) -> Failure {
        Failure {
            reject,
            items: vec![FailedItem {
                name: String::new(),
                cause,
                accept,
                ignore,
            }],
            advice: None,
        }
    }
}

/// What to do when a registry refuses lookups for its pull rate limit.
const RATE_LIMIT_ADVICE: &str = "the registry limits its pulls and every lookup counts as one: \
    look images up through a pull-through cache (setting registryMirrors), give the PolicyServer \
    an authenticated imagePullSecret, or list the most used images in imagePlatforms";

/// Whether a host error is a registry's refusal for its rate limit: HTTP 429 (`code: 429` when
/// the body is no OCI error), the OCI code `TOOMANYREQUESTS` or its message (Docker Hub's "You
/// have reached your pull rate limit"), as the host words them.
fn rate_limited(cause: &str) -> bool {
    let cause = cause.to_ascii_lowercase();
    [
        "code: 429",
        "toomanyrequests",
        "too many requests",
        "rate limit",
    ]
    .iter()
    .any(|sign| cause.contains(sign))
}

/// No image of the Pod could be looked up (`webassembly`: none but WebAssembly ones): it is
/// pinned to `fallbackArchitectures`. `images`: those whose lookup failed, as
/// [`named`](super::naming::named) names them.
pub(crate) fn fallback(
    subject: &str,
    images: &[String],
    webassembly: bool,
    settings: &Settings,
) -> String {
    let listing = images.join(", ");
    capped(
        &format!("{PREFIX}: {} (", nothing_looked_up(subject, webassembly)),
        &listing,
        &format!(
            "): it is pinned as if they ran on {} (setting fallbackArchitectures)",
            settings.fallback_architectures.join(", ")
        ),
    )
}

/// No image of the Pod could be looked up, and `fallbackArchitectures` fit none of the nodes it
/// may run on.
pub(crate) fn fallback_unfit(subject: &str, webassembly: bool, fallback: &Architectures) -> String {
    format!(
        "{PREFIX}: {}, and the fallback architectures ({}; setting \
         fallbackArchitectures) fit none of the nodes it may run on: it is not pinned",
        nothing_looked_up(subject, webassembly),
        platform::join(fallback, ", ")
    )
}

/// No image of the subject could be looked up, or (`webassembly`) none but its WebAssembly ones,
/// which run on any architecture.
fn nothing_looked_up(subject: &str, webassembly: bool) -> String {
    if webassembly {
        format!("no image of the {subject} other than its WebAssembly ones could be looked up")
    } else {
        format!("no image of the {subject} could be looked up")
    }
}
