//! The policy's messages and warnings, and how they are cut: Kubernetes may truncate a warning
//! past 256 characters, and host errors arrive as multi-line chains. Every text an operator
//! reads is built here; `decide` decides which one applies.

use serde_json::Value;

use crate::platform::{self, Architectures};
use crate::read::constraint::{Admits, Constraints};
use crate::read::nodes::Schedulable;
use crate::read::pod;
use crate::read::resolve::ImagePlatforms;
use crate::settings::Settings;

/// Prefix of every message and warning, so users know where it comes from.
pub const PREFIX: &str = "image-arch-affinity";

/// A read that failed, and how each `onLookupFailure` words it: the rejection's lead and, for
/// each item that failed, its name in the rejection, its cause, and the lead-ins of the
/// `accept` and `ignoreImage` warnings.
pub(crate) struct Failure {
    pub reject: String,
    pub items: Vec<FailedItem>,
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
        format!("{}: {all} (setting onLookupFailure: reject)", self.reject)
    }

    /// The warnings of `accept` (when `accept`) or of `ignoreImage`, one per item.
    pub fn warnings(&self, accept: bool) -> impl Iterator<Item = String> + '_ {
        self.items.iter().map(move |item| {
            let lead = if accept { &item.accept } else { &item.ignore };
            warning(lead.clone(), &item.cause)
        })
    }

    /// Images whose lookup failed (the image as [`labelled`] names it, cause).
    pub fn images(subject: &str, failed: &[(String, &str)]) -> Failure {
        Failure {
            reject: format!("{PREFIX}: cannot tell which architectures the {subject}'s images run on"),
            items: failed
                .iter()
                .map(|(image, cause)| FailedItem {
                    name: format!("{image}: "),
                    cause: cause.to_string(),
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
        }
    }
}

/// An image as messages name it: `"REF"` when a container runs it, `volume "NAME" image "REF"`
/// when only image volumes mount it.
pub(crate) fn named(image: &ImagePlatforms) -> String {
    match &image.volume {
        Some(volume) => format!("volume {volume:?} image {:?}", image.image),
        None => format!("{:?}", image.image),
    }
}

/// An image as messages name it where the word "image" stands before a container's reference:
/// `image "REF"`, or `volume "NAME" image "REF"`.
pub(crate) fn labelled(image: &ImagePlatforms) -> String {
    match &image.volume {
        Some(_) => named(image),
        None => format!("image {:?}", image.image),
    }
}

/// An image's index entries left out because no node reports their values.
pub(crate) fn left_out(image: &ImagePlatforms) -> String {
    capped(
        &format!(
            "{PREFIX}: {}: index entries left out of the architecture decision (no node reports ",
            labelled(image)
        ),
        &image.left_out().join(", "),
        ")",
    )
}

/// A Pod that asks for nodes of an OS no node runs.
pub(crate) fn no_node_os(os: &str, subject: &str) -> Refusal {
    Refusal::new(
        format!("{PREFIX}: the {subject} asks for nodes of OS "),
        platform::quoted(os),
        ", which no node reports (nodes run linux or windows)".to_string(),
    )
}

/// A Pod bound to a node of another OS than the one it chooses (`spec.os`, or a nodeSelector
/// on the OS label): the kubelet refuses it there, whatever its images run on. The DaemonSet
/// controller puts a Pod on every node its template admits, and `spec.os` alone does not keep
/// it off the others.
pub(crate) fn bound_other_os(subject: &str, node: &str, placed: &str, os: &str) -> Refusal {
    Refusal::new(
        format!("{PREFIX}: the {subject} is bound to node {node:?} ({placed}), but it asks for "),
        platform::quoted(os),
        " nodes (spec.os or its nodeSelector): the kubelet refuses it there. Give what creates it \
         a nodeSelector on kubernetes.io/os for that OS"
            .to_string(),
    )
}

/// The images run only where the cluster has no nodes (`schedulable`: the setting, or the Nodes
/// read): the same sentence either way, the setting named last.
pub(crate) fn no_schedulable(
    common: &Architectures,
    schedulable: &Schedulable,
    subject: &str,
) -> Refusal {
    let setting = if schedulable.from_nodes {
        schedulable.note.as_str()
    } else {
        "setting schedulableArchitectures"
    };
    Refusal::new(
        format!("{PREFIX}: the {subject}'s images all run only on "),
        platform::join(common, ", "),
        format!(
            ", but the cluster's nodes are {} ({setting})",
            platform::join(&schedulable.architectures, ", ")
        ),
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

/// No image of the Pod could be looked up (`webassembly`: none but WebAssembly ones): it is
/// pinned to `fallbackArchitectures`. `images`: those whose lookup failed, as [`named`] names
/// them.
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

/// A preferred-architecture annotation that names no architecture.
pub(crate) fn bad_preferred_annotation(annotation: &str, value: &str) -> String {
    // The user's value is what gets cut when the warning would exceed 256 characters.
    capped(
        &format!("{PREFIX}: annotation {annotation}: "),
        &format!("{value:?}"),
        " is not an architecture, ignored; use a kubernetes.io/arch value such as amd64, arm64, arm, ppc64le, s390x, riscv64",
    )
}

/// Kubernetes may truncate admission warnings longer than 256 characters: a warning is its
/// lead-in and as much of the cause, on one line, as fits (at least 80 characters of it).
const WARNING_LENGTH: usize = 256;

pub(crate) fn warning(lead_in: String, cause: &str) -> String {
    let lead_length = lead_in.chars().count();
    let cause = one_line(cause, WARNING_LENGTH.saturating_sub(lead_length).max(80));
    if lead_length + cause.chars().count() <= WARNING_LENGTH {
        return lead_in + &cause;
    }
    // A long image reference (digests) shortens the lead-in, never the cause.
    let room = WARNING_LENGTH.saturating_sub(cause.chars().count() + 1);
    format!("{} {cause}", one_line(&lead_in, room))
}

/// A host error as one line, cut to `max` characters: its first line only (registries answer
/// multi-line error chains and whole HTML pages, and a host run with `RUST_BACKTRACE=1` appends a
/// `Stack backtrace:`), whitespace folded, the host's wrapper and the request URLs (they repeat
/// the image) dropped; what is still too long is cut after its first two thirds, keeping the
/// last third: error chains put the context first and the root cause last.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let text = text
        .trim_start()
        .trim_start_matches("Callback evaluation failure: ");
    // The first line only: what follows is detail (a multi-line chain, an HTML page, the host's
    // `Stack backtrace:`), never what an operator acts on.
    let text = text.lines().next().unwrap_or_default();
    let text = text.split("Stack backtrace:").next().unwrap_or_default();
    let mut words: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let bare = word.trim_start_matches('(');
        if bare.starts_with("http://") || bare.starts_with("https://") {
            // `error sending request for url (https://...): cause`: `error sending request: cause`.
            if words.last().is_some_and(|w| w == "url") {
                words.pop();
                if words.last().is_some_and(|w| w == "for") {
                    words.pop();
                }
            }
            if word.ends_with("):") {
                if let Some(last) = words.last_mut() {
                    last.push(':');
                }
            }
            continue;
        }
        words.push(word.to_string());
    }
    cut_middle(words.join(" "), max)
}

/// `line` cut to `max` characters after its first two thirds, keeping the last third.
fn cut_middle(line: String, max: usize) -> String {
    let length = line.chars().count();
    if length <= max {
        return line;
    }
    let tail = max.saturating_sub(3) / 3;
    let head = max.saturating_sub(3) - tail;
    let start: String = line.chars().take(head).collect();
    let end: String = line.chars().skip(length - tail).collect();
    format!("{start} … {end}")
}

/// A warning of `lead`, `middle` and `tail` that fits `WARNING_LENGTH` characters: `middle` (a
/// listing) is cut in its middle first; if `lead` alone is too long, what comes before `tail` is
/// cut too. `tail` (the advice, the setting at play) always survives whole.
pub(crate) fn capped(lead: &str, middle: &str, tail: &str) -> String {
    let tail_length = tail.chars().count();
    let room = WARNING_LENGTH
        .saturating_sub(lead.chars().count() + tail_length)
        .max(40);
    let text = format!("{lead}{}", cut_middle(middle.to_string(), room));
    cut_middle(text, WARNING_LENGTH.saturating_sub(tail_length)) + tail
}

/// Why no architecture fits: the rejection message, in three parts so that the warning made of
/// it (`onNoCommonArchitecture: accept`) is cut in the middle of the listing and keeps the rest.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    pub lead: String,
    pub listing: String,
    pub tail: String,
}

impl Refusal {
    pub fn new(lead: String, listing: String, tail: String) -> Refusal {
        Refusal {
            lead,
            listing,
            tail,
        }
    }

    /// The rejection message (`onNoCommonArchitecture: reject`).
    pub fn rejection(&self) -> String {
        format!("{}{}{}", self.lead, self.listing, self.tail)
    }

    /// The warning of a Pod accepted all the same (`onNoCommonArchitecture: accept`), cut to a
    /// warning's length in the middle of the listing.
    pub fn accepted(&self) -> String {
        capped(
            &self.lead,
            &self.listing,
            &format!(
                "{} (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)",
                self.tail
            ),
        )
    }
}

/// The platform of a bound Pod's Node, as refusals name it: `linux/arm64`, or `windows/amd64,
/// OS build 10.0.20348` where the build counts.
pub(crate) fn placed(os: &str, arch: &str, build: Option<&str>) -> String {
    match build {
        Some(build) => format!("{os}/{arch}, OS build {build}"),
        None => format!("{os}/{arch}"),
    }
}

/// A Pod bound to Node `node` (on `placed`) with images that have no build for it (`lacking`,
/// each with its platforms; their OS builds where the Node's `build` counts).
pub(crate) fn bound_without_build(
    subject: &str,
    node: &str,
    placed: &str,
    lacking: &[&&ImagePlatforms],
    build: Option<&str>,
    after_admission: Option<&Value>,
) -> Refusal {
    let containers_lack = lacking.iter().any(|image| image.volume.is_none());
    let listing: Vec<String> = lacking
        .iter()
        .map(|image| {
            let platforms = image
                .platforms()
                .iter()
                .map(|platform| match (&platform.os_build, build) {
                    (Some(os_build), Some(_)) => format!("{platform} {os_build}"),
                    _ => platform.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ");
            match after_admission {
                Some(pod) => format!("{} runs only on {platforms}", run_by(image, pod)),
                None => format!("{} runs only on {platforms}", named(image)),
            }
        })
        .collect();
    if after_admission.is_some() {
        return Refusal::new(
            format!("{PREFIX}: the {subject} runs on node {node:?} ({placed}), which its new images have no build for: "),
            listing.join("; "),
            format!(". They would fail there with exec format error: use images with a build for {placed} (kubectl debug --image=<an image with one>)"),
        );
    }
    Refusal::new(
        format!("{PREFIX}: the {subject} is bound to node {node:?} ({placed}), which its images have no build for: "),
        listing.join("; "),
        if !containers_lack {
            ". The kubelet cannot mount them there: use images with a build for that platform (an index), or list them in imagePlatforms".to_string()
        } else if build.is_some() {
            ". Its containers cannot start there (a process-isolated Windows container needs the node's architecture and OS build)".to_string()
        } else {
            ". Its containers would fail there with exec format error".to_string()
        },
    )
}

/// A new image of a Pod after admission, with the containers that run it: `image "REF" of
/// ephemeral container "debugger"`.
pub(crate) fn run_by(image: &ImagePlatforms, pod: &Value) -> String {
    let containers: Vec<String> = pod::containers_running(pod, &image.image)
        .into_iter()
        .map(|(kind, name)| format!("{kind} {name:?}"))
        .collect();
    match containers.is_empty() {
        true => labelled(image),
        false => format!("{} of {}", labelled(image), containers.join(", ")),
    }
}

/// A Pod after admission whose own constraints admit nodes where its new images do not run:
/// `elsewhere`, per OS, the architectures it may be on that some new image has no build for;
/// `each`, each new image with what it runs on; `bound`, the Node it is bound to (its platform
/// unknown without `readNodes`); `note`, where the cluster's architectures come from.
pub(crate) fn may_be_elsewhere(
    subject: &str,
    elsewhere: &[(String, Architectures)],
    each: &[String],
    bound: Option<&str>,
    note: &str,
) -> Refusal {
    let platforms = elsewhere
        .iter()
        .map(|(os, architectures)| match architectures.is_empty() {
            true => format!("{os} nodes"),
            false => format!("{os} nodes of {}", platform::join(architectures, ", ")),
        })
        .collect::<Vec<_>>()
        .join(", and ");
    let lead = match bound {
        Some(node) => format!(
            "{PREFIX}: the {subject} is bound to node {node:?}, which may be one of the {platforms} its constraints admit ({note}; setting readNodes reads the Node), where its new images have no build: "
        ),
        None => format!(
            "{PREFIX}: the {subject} may run on {platforms} ({note}; what its nodeSelector and required node affinity admit), where its new images have no build: "
        ),
    };
    Refusal::new(
        lead,
        each.join("; "),
        ". A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it".to_string(),
    )
}

/// A new image after admission with the architectures it runs on for each OS of `oses`.
pub(crate) fn new_image_runs_on(
    image: &ImagePlatforms,
    pod: &Value,
    oses: &[(&str, Architectures)],
) -> String {
    let platforms: Vec<String> = oses
        .iter()
        .flat_map(|(os, architectures)| architectures.iter().map(move |a| format!("{os}/{a}")))
        .collect();
    if platforms.is_empty() {
        let names: Vec<&str> = oses.iter().map(|(os, _)| *os).collect();
        return format!("{} has no {} build", run_by(image, pod), names.join(" or "));
    }
    // The Windows OS builds, where every Windows entry names one.
    let windows: Vec<_> = image
        .platforms()
        .iter()
        .filter(|p| {
            oses.iter().any(|(os, a)| *os == "windows" && !a.is_empty()) && p.runs_on("windows")
        })
        .collect();
    let builds: Architectures = windows.iter().filter_map(|p| p.os_build.clone()).collect();
    let builds = match builds.is_empty() || windows.iter().any(|p| p.os_build.is_none()) {
        true => String::new(),
        false => format!(" (Windows build {})", platform::join(&builds, ", ")),
    };
    format!(
        "{} runs on {}{builds}",
        run_by(image, pod),
        platforms.join(", ")
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

/// No Windows OS build runs every image (`each`: `built_for` of each image that names builds).
pub(crate) fn no_common_build(subject: &str, each: &[String]) -> Refusal {
    Refusal::new(
        format!("{PREFIX}: no Windows OS build runs every image of this {subject}: "),
        each.join("; "),
        ". A Windows node runs a process-isolated container only on the OS build it was built for (node.kubernetes.io/windows-build; setting pinWindowsBuild)".to_string(),
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
/// them the cluster has.
pub(crate) fn explain(
    constraints: &Constraints,
    subject: &str,
    image_common: &Architectures,
    common: &Architectures,
    schedulable: &Schedulable,
) -> Refusal {
    let note = &schedulable.note;
    let os = &constraints.os;
    let selected = constraints.selector_admits();
    let entries = constraints
        .selector_entries
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(", ");
    if selected.among(common).is_empty() {
        let stranded = selected.among(image_common);
        let lead = format!("{PREFIX}: the {subject}'s nodeSelector {entries} ");
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
        if selected == Admits::none() {
            return Refusal::new(
                lead,
                format!("admits no {os} node of any architecture"),
                format!("; its images all run on: {}", platform::join(common, ", ")),
            );
        }
        return Refusal::new(
            lead,
            "asks for an architecture that its images do not run on".to_string(),
            format!("; they all run on: {}", platform::join(common, ", ")),
        );
    }
    let terms = constraints.terms.as_deref().unwrap_or_default();
    if constraints.terms.is_some() && terms.is_empty() {
        return Refusal::new(
            format!("{PREFIX}: the {subject}'s required node affinity (requiredDuringSchedulingIgnoredDuringExecution) "),
            "has no nodeSelectorTerms, so it matches no node".to_string(),
            "; give it at least one term, or remove it".to_string(),
        );
    }
    let listing = terms
        .iter()
        .enumerate()
        .map(|(index, term)| {
            if term.empty {
                format!("term {index} has no requirement and matches no node")
            } else {
                format!(
                    "term {index} admits {}",
                    constraints.term_alone_admits(index).describe()
                )
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
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

/// No Windows Node of the architectures the Pod may run on reports a build its images share
/// (`builds`): the rejection message, naming the builds the Nodes report.
pub(crate) fn absent_builds(
    builds: &Architectures,
    reported: &Architectures,
    unlabelled: usize,
    architectures: &Architectures,
    subject: &str,
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
        " (node.kubernetes.io/windows-build; settings pinWindowsBuild, readNodes)".to_string(),
    )
}

pub(crate) fn describe_image(
    image: &ImagePlatforms,
    architectures: &Architectures,
    os: &str,
) -> String {
    if !architectures.is_empty() {
        return format!(
            "{} runs on {}",
            named(image),
            platform::join(architectures, ", ")
        );
    }
    let others = image
        .platforms()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    format!("{} has no {os} build (only {others})", named(image))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_warnings_keep_their_tail_whole() {
        assert_eq!(capped("lead: ", "a, b", " (tail)"), "lead: a, b (tail)");
        // Too long: the middle is cut first.
        let middle = "0123456789".repeat(30);
        let warning = capped(&"L".repeat(100), &middle, " (tail)");
        assert_eq!(warning.chars().count(), 256);
        assert_eq!(
            warning,
            format!(
                "{}{} … {} (tail)",
                "L".repeat(100),
                &middle[..98],
                &middle[300 - 48..]
            )
        );
        // A lead too long for any middle is cut too, keeping 40 characters of the middle.
        let lead = format!("{}{}", "L".repeat(200), "M".repeat(100));
        let middle: String = (0..100).map(|i| char::from(b'0' + i % 10)).collect();
        let warning = capped(&lead, &middle, &" T".repeat(20));
        assert_eq!(warning.chars().count(), 256);
        assert_eq!(
            warning,
            format!(
                "{} … {}{} … {}{}",
                "L".repeat(142),
                "M".repeat(31),
                &middle[..25],
                &middle[100 - 12..],
                " T".repeat(20)
            )
        );
    }
}
