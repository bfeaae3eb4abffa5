//! The texts of a decision at creation: why no architecture fits the images, the Pod's
//! constraints, the cluster or its Windows OS builds (each a `Refusal`), and the warnings beside
//! the pins (a DaemonSet's Pods failing elsewhere, a preferred-architecture annotation ignored).

use super::naming::{describe_image, named};
use super::text::{capped, Refusal, PREFIX};
use crate::platform::{self, Architectures};
use crate::read::constraint::{Admits, Constraints};
use crate::read::resolve::ImagePlatforms;

/// A Pod that asks for nodes of an OS no node runs.
pub(crate) fn no_node_os(os: &str, subject: &str) -> Refusal {
    Refusal::new(
        format!("{PREFIX}: the {subject} asks for nodes of OS "),
        platform::quoted(os),
        ", which no node reports (nodes run linux or windows)".to_string(),
    )
}

/// A Pod of an OS `clusterOperatingSystems` does not list: no node of the cluster runs it.
pub(crate) fn os_not_in_cluster(os: &str, listed: &[String], subject: &str) -> Refusal {
    Refusal::new(
        format!("{PREFIX}: the {subject} runs only on "),
        format!("{os} nodes"),
        format!(
            ", but the cluster's nodes are of {} (setting clusterOperatingSystems)",
            listed.join(", ")
        ),
    )
}

/// The warning of a DaemonSet whose Pods `refusal` (`os_not_in_cluster`) says no node runs:
/// accepted, it creates none.
pub(crate) fn daemon_set_os_not_in_cluster(refusal: &Refusal) -> String {
    format!(
        "{}: the DaemonSet creates no Pod (accepted unchanged)",
        refusal.rejection()
    )
}

/// The images run only where the cluster has no nodes (`nodes`: those of the setting, or of the
/// Nodes read, whose `read` note says what was read): the same sentence either way, the setting
/// named last.
pub(crate) fn no_schedulable(
    common: &Architectures,
    nodes: &Architectures,
    read: Option<&str>,
    subject: &str,
) -> Refusal {
    let setting = read.unwrap_or("setting schedulableArchitectures");
    let nodes = match nodes.is_empty() {
        // Only NodePools the Pod cannot be given a node of (their beta labels).
        true => format!("the cluster has no node the {subject} may run on"),
        false => format!("the cluster's nodes are {}", platform::join(nodes, ", ")),
    };
    Refusal::new(
        format!("{PREFIX}: the {subject}'s images all run only on "),
        platform::join(common, ", "),
        format!(", but {nodes} ({setting})"),
    )
}

/// No architecture of `os` runs every image: each image with the architectures it has there.
pub(crate) fn no_common_architecture(
    per_image: &[(&ImagePlatforms, Architectures)],
    os: &str,
    subject: &str,
) -> Refusal {
    let each = per_image
        .iter()
        .map(|(image, architectures)| describe_image(image, architectures, os))
        .collect::<Vec<_>>()
        .join("; ");
    Refusal::new(
        format!("{PREFIX}: no {os} node architecture runs every image of this {subject}: "),
        each,
        ". Use images built for a common architecture".to_string(),
    )
}

/// Why the Pod's own constraints admit no node whose architecture runs every image: the
/// nodeSelector, else the required terms (with the nodeSelector), each blamed for what it
/// admits, and `schedulableArchitectures` when the images run where the Pod asks but the cluster
/// has no such nodes. `image_common` is every architecture the images run on, `common` those of
/// them the cluster has; `note` where the cluster's architectures come from.
pub(crate) fn explain(
    constraints: &Constraints,
    subject: &str,
    image_common: &Architectures,
    common: &Architectures,
    note: &str,
) -> Refusal {
    let os = &constraints.os;
    let selected = constraints.selector_admits();
    let entries = constraints
        .selector_entries
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(", ");
    if selected.among(common).is_empty() {
        let lead = format!("{PREFIX}: the {subject}'s nodeSelector {entries} ");
        return explain_selector(lead, &selected, os, image_common, common, note);
    }
    let terms = constraints.terms.as_deref().unwrap_or_default();
    if constraints.terms.is_some() && terms.is_empty() {
        return Refusal::new(
            format!("{PREFIX}: the {subject}'s required node affinity (requiredDuringSchedulingIgnoredDuringExecution) "),
            "has no nodeSelectorTerms, so it matches no node".to_string(),
            "; give it at least one term, or remove it".to_string(),
        );
    }
    let listing = term_listing(constraints);
    let with_selector = if selected == Admits::All {
        String::new()
    } else {
        format!(" (with its nodeSelector {entries})")
    };
    let stranded = constraints.admits().among(image_common);
    if stranded.is_empty() {
        return Refusal::new(
            format!(
                "{PREFIX}: every required node affinity term of the {subject}{with_selector} excludes the architectures its images run on ({}): ",
                platform::join(common, ", ")
            ),
            listing,
            String::new(),
        );
    }
    Refusal::new(
        format!(
            "{PREFIX}: every required node affinity term of the {subject}{with_selector} excludes the architectures its images run on that the cluster has nodes of ({}): ",
            platform::join(common, ", ")
        ),
        listing,
        format!(
            ". The cluster has no {} nodes ({note})",
            platform::join(&stranded, ", "),
        ),
    )
}

/// Each required term with what it admits alone: `term 0 admits amd64; term 1 admits no linux
/// node`.
fn term_listing(constraints: &Constraints) -> String {
    let os = &constraints.os;
    let terms = constraints.terms.as_deref().unwrap_or_default();
    terms
        .iter()
        .enumerate()
        .map(|(index, term)| {
            let admits = constraints.term_alone_admits(index);
            if term.empty {
                format!("term {index} has no requirement and matches no node")
            } else if admits == Admits::none() {
                // Read for the Pod's OS: a term may admit nodes of another (`os In [windows]`).
                format!("term {index} admits no {os} node")
            } else {
                format!("term {index} admits {}", admits.describe())
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why the nodeSelector (`selected`: what it admits) keeps the Pod off every architecture its
/// images run on (`image_common`) that the cluster has (`common`).
fn explain_selector(
    lead: String,
    selected: &Admits,
    os: &str,
    image_common: &Architectures,
    common: &Architectures,
    note: &str,
) -> Refusal {
    let stranded = selected.among(image_common);
    if !stranded.is_empty() {
        return Refusal::new(
            lead,
            format!("asks for {} nodes", platform::join(&stranded, ", ")),
            format!(
                ", but the cluster has none ({note}); of those, its images run on: {}",
                platform::join(common, ", ")
            ),
        );
    }
    if *selected == Admits::none() {
        return Refusal::new(
            lead,
            format!("admits no {os} node of any architecture"),
            format!("; its images all run on: {}", platform::join(common, ", ")),
        );
    }
    Refusal::new(
        lead,
        "asks for an architecture that its images do not run on".to_string(),
        format!("; they all run on: {}", platform::join(common, ", ")),
    )
}

/// One image's Windows OS builds, for `no_common_build`.
pub(crate) fn built_for(image: &ImagePlatforms, builds: &Architectures) -> String {
    format!(
        "{} is built for {}",
        named(image),
        platform::join(builds, ", ")
    )
}

/// No Windows OS build runs every image (`each`: `built_for` of each image that names builds);
/// `setting`: what keeps the Pod to its builds.
pub(crate) fn no_common_build(subject: &str, each: &[String], setting: &str) -> Refusal {
    Refusal::new(
        format!("{PREFIX}: no Windows OS build runs every image of this {subject}: "),
        each.join("; "),
        format!(". A Windows node runs a process-isolated container only on the OS build it was built for (node.kubernetes.io/windows-build; {setting})"),
    )
}

/// The Pod's own constraints admit no Windows node of a build its images share (`builds`): its
/// nodeSelector or terms name other builds (`node.kubernetes.io/windows-build`).
pub(crate) fn builds_not_admitted(builds: &Architectures, subject: &str, setting: &str) -> Refusal {
    Refusal::new(
        format!(
            "{PREFIX}: the {subject}'s own constraints admit no Windows node of its images' OS builds: "
        ),
        platform::join(builds, ", "),
        format!(" (node.kubernetes.io/windows-build; {setting})"),
    )
}

/// No Windows Node of the architectures the Pod may run on reports a build its images share
/// (`builds`): the rejection message, naming the builds the Nodes report.
pub(crate) fn absent_builds(
    builds: &Architectures,
    (reported, unlabelled): (&Architectures, usize),
    architectures: &Architectures,
    subject: &str,
    setting: &str,
) -> Refusal {
    let mut nodes = Vec::new();
    if !reported.is_empty() {
        nodes.push(platform::join(reported, ", "));
    }
    if unlabelled > 0 {
        nodes.push(format!("unlabelled ({unlabelled})"));
    }
    Refusal::new(
        format!(
            "{PREFIX}: no Windows {} Node has an OS build of the {subject}'s images: ",
            platform::join(architectures, ", ")
        ),
        format!(
            "images {}; Nodes {}",
            platform::join(builds, ", "),
            nodes.join(", ")
        ),
        format!(" (node.kubernetes.io/windows-build; {setting})"),
    )
}

/// A DaemonSet runs a Pod on every node its template admits. When its images do not run on every
/// architecture the template admits (`admits`), those Pods crash-loop: name those architectures,
/// among the schedulable ones when they are known (`schedulable`). Cut to fit a warning,
/// keeping the advice. `os` names the OS when its images run on several (one warning each).
pub(crate) fn daemon_set(
    admits: Admits,
    common: &Architectures,
    schedulable: &Architectures,
    os: Option<&str>,
) -> Option<String> {
    let mut outside = admits.and(Admits::AllBut(common.clone()));
    if !schedulable.is_empty() {
        outside = outside.and(Admits::Only(schedulable.clone()));
    }
    let node = match os {
        Some(os) => format!("{os} node"),
        None => "node".to_string(),
    };
    let (lead, failing, tail) = match outside {
        Admits::Only(failing) if failing.is_empty() => return None,
        Admits::Only(failing) => (
            match os {
                Some(os) => format!("the {os} "),
                None => "the ".to_string(),
            },
            failing,
            " nodes",
        ),
        Admits::AllBut(fine) if common.is_empty() && fine.is_empty() => {
            (format!("any {node}"), fine, "")
        }
        Admits::AllBut(fine) => (format!("any {node} whose architecture is not "), fine, ""),
        Admits::All => (
            format!("any {node} whose architecture is not "),
            common.clone(),
            "",
        ),
    };
    let runs = match (os, common.is_empty()) {
        (Some(os), true) => format!("on no architecture of the {os} nodes"),
        (Some(os), false) => format!("only on {os} on {}", platform::join(common, ", ")),
        (None, _) => format!("only on {}", platform::join(common, ", ")),
    };
    Some(capped(
        &format!("{PREFIX}: this DaemonSet's images run {runs}: its Pods will fail on {lead}"),
        &platform::join(&failing, ", "),
        &format!(
            "{tail}. Add a required node affinity on kubernetes.io/arch, or set daemonSetTemplates: mutate"
        ),
    ))
}

/// A DaemonSet whose template admits nodes of another OS than its own (`os`) in a cluster of
/// several: its Pods fail there too.
pub(crate) fn daemon_set_other_os(os: &str) -> String {
    let others = platform::other_operating_systems(os)
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{PREFIX}: this DaemonSet runs {os} images, and the cluster has {others} nodes its template admits: its Pods will fail there. \
         Add a nodeSelector kubernetes.io/os: {os}, or set daemonSetTemplates: mutate"
    )
}

/// A preferred-architecture annotation that names no architecture.
pub(crate) fn bad_preferred_annotation(annotation: &str, value: &str) -> String {
    // The user's value is what gets cut when the warning would exceed 256 characters.
    capped(
        &format!("{PREFIX}: annotation {annotation}: "),
        &format!("{value:?}"),
        " is not an architecture, ignored; use a kubernetes.io/arch value such as amd64, arm64, arm, ppc64le, s390x, riscv64",
    )
}
