//! The decision on one Pod or Pod template, the same for both: read its images and the
//! constraints on its nodes (`constraint`), decide from them, and edit it (`affinity`,
//! `tolerations`). Also the decision's types and the messages' shapes. Plain Rust over plain
//! data: `policy` routes requests here, `workload` finds the templates.

use serde_json::Value;

use crate::affinity;
use crate::cluster::Cluster;
use crate::constraint::{Admits, Constraints};
use crate::edit;
use crate::nodes::{self, Builds, Schedulable};
use crate::platform::{self, Architectures};
use crate::pod;
use crate::registry::Registry;
use crate::resolve::{self, ImagePlatforms};
use crate::settings::{self, OnLookupFailure, OnNoCommonArchitecture, Settings};
use crate::tolerations;

/// Annotation in which the policy records the architectures it computed.
pub const ARCHITECTURES_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/architectures";
/// Pod annotation that names the preferred architecture, overriding the setting.
pub const PREFERRED_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/preferred-architecture";
/// Prefix of every message and warning, so users know where it comes from.
pub const PREFIX: &str = "image-arch-affinity";

const PREFERRED_PATH: [&str; 3] = [
    "affinity",
    "nodeAffinity",
    "preferredDuringSchedulingIgnoredDuringExecution",
];

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
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Unchanged(Vec<String>),
    Changed(Vec<String>),
    Rejected(String, Vec<String>),
}

/// The outcome of `decide_pod`, with what was learnt on the way.
#[derive(Debug, PartialEq)]
pub struct Decided {
    pub outcome: Outcome,
    /// The architectures every image runs on, within the schedulable ones, when computed.
    pub architectures: Option<Architectures>,
    /// The architectures of the nodes the Pod (as it came) admits, when read.
    pub admits: Option<Admits>,
    /// The architectures counted as schedulable (empty: unknown), when the decision got there:
    /// `schedulableArchitectures`, or those read from Nodes (`readNodes`).
    pub schedulable: Option<Architectures>,
}

/// Applies the policy to a Pod, or to a Pod template (an object with `metadata` and `spec`),
/// editing it in place. `subject` names it in messages. The cluster is read only with
/// `readNodes`.
pub fn decide_pod(
    pod: &mut Value,
    subject: &str,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Decided {
    let mut decided = Decided {
        outcome: Outcome::Unchanged(Vec::new()),
        architectures: None,
        admits: None,
        schedulable: None,
    };
    decided.outcome = decide(pod, subject, settings, registry, cluster, &mut decided);
    decided
}

fn decide(
    pod: &mut Value,
    subject: &str,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
    learnt: &mut Decided,
) -> Outcome {
    if !pod.is_object() || !pod["spec"].is_object() {
        return Outcome::Unchanged(Vec::new());
    }
    // A Pod bound to a node (or a DaemonSet's, which targets one) is checked against that node
    // when Nodes are read, and left alone otherwise.
    let bound = match pod::skip_reason(pod) {
        None => None,
        Some(_) => match pod::bound_node(pod).filter(|_| settings.read_nodes) {
            Some(node) => Some(node.to_string()),
            None => return Outcome::Unchanged(Vec::new()),
        },
    };
    let images = pod::images(pod);
    if images.is_empty() {
        return Outcome::Unchanged(Vec::new());
    }
    if let Some(node) = bound {
        let os = pod::operating_system(pod, &settings.default_operating_system);
        return decide_bound(&images, &node, os, subject, settings, registry, cluster);
    }
    let constraints = Constraints::read_pod(pod, &settings.default_operating_system);
    let os = constraints.os.clone();
    if !platform::NODE_OPERATING_SYSTEMS.contains(&os.as_str()) {
        // No node runs that OS: no lookup can change the answer.
        let refusal = Refusal::new(
            format!("{PREFIX}: the {subject} asks for nodes of OS "),
            platform::quoted(&os),
            ", which no node reports (nodes run linux or windows)".to_string(),
        );
        return no_common_architecture(refusal, Vec::new(), settings);
    }
    let resolved = resolve::resolve_images(&images, settings, registry);

    let mut warnings = Vec::new();
    let known = match known_images(&resolved, subject, settings, &mut warnings) {
        Ok(known) => known,
        Err(outcome) => return outcome,
    };

    let image_common = match image_architectures(&known, &os, subject) {
        Ok(common) => common,
        Err(refusal) => return no_common_architecture(refusal, warnings, settings),
    };
    let admits = constraints.admits();
    let schedulable = if settings.read_nodes {
        let read = nodes::schedulable(
            cluster,
            &os,
            &image_common,
            &admits,
            &settings.autoscaled(&os),
        );
        match read {
            Ok(schedulable) => schedulable,
            Err(cause) => match settings.on_lookup_failure {
                OnLookupFailure::Reject => {
                    return Outcome::Rejected(
                        format!(
                            "{PREFIX}: cannot read the cluster's {os} Nodes: {} (setting onLookupFailure: reject)",
                            one_line(&cause, 300)
                        ),
                        warnings,
                    )
                }
                OnLookupFailure::Accept => {
                    warnings.push(warning(
                        format!("{PREFIX}: the {subject} was not pinned to an architecture because the cluster's Nodes could not be read: "),
                        &cause,
                    ));
                    return Outcome::Unchanged(warnings);
                }
                OnLookupFailure::IgnoreImage => {
                    warnings.push(warning(
                        format!("{PREFIX}: the cluster's Nodes could not be read, so the {subject} is pinned to every architecture its images run on: "),
                        &cause,
                    ));
                    Schedulable::configured(Architectures::new())
                }
            },
        }
    } else {
        Schedulable::configured(settings.schedulable())
    };
    learnt.schedulable = Some(schedulable.architectures.clone());
    let Common {
        images: image_common,
        runnable: common,
    } = match within_schedulable(image_common, &schedulable, &os, subject) {
        Ok(common) => common,
        Err(refusal) => return no_common_architecture(refusal, warnings, settings),
    };
    learnt.architectures = Some(common.clone());
    learnt.admits = Some(admits.clone());
    // Where the Pod may finally run: what its own constraints admit of what every image runs on
    // (within the schedulable architectures).
    let finally = admits.among(&common);
    if finally.is_empty() {
        let refusal = explain(&constraints, subject, &image_common, &common, &schedulable);
        return no_common_architecture(refusal, warnings, settings);
    }

    if let Some(value) = pod::annotation(pod, PREFERRED_ANNOTATION) {
        if !platform::KNOWN_ARCHITECTURES.contains(&value) {
            // The user's value is what gets cut when the warning would exceed 256 characters.
            warnings.push(capped(
                &format!("{PREFIX}: annotation {PREFERRED_ANNOTATION}: "),
                &format!("{value:?}"),
                " is not an architecture, ignored; use a kubernetes.io/arch value such as amd64, arm64, arm, ppc64le, s390x, riscv64",
            ));
        }
    }
    let builds = if settings.pin_windows_build && os == "windows" {
        match windows_builds(&known, &finally, subject) {
            // With Nodes read, the builds the cluster's Windows Nodes report.
            Ok(Some(builds)) if schedulable.from_nodes => {
                let read = nodes::windows_builds(
                    cluster,
                    &finally,
                    &builds,
                    schedulable.nodes.as_deref(),
                    &settings.autoscaled(&os),
                );
                match read {
                    Ok(Builds::Covered) => None,
                    Ok(Builds::Pin(found)) => Some(found),
                    Ok(Builds::Absent {
                        reported,
                        unlabelled,
                    }) => {
                        let refusal =
                            absent_builds(&builds, &reported, unlabelled, &finally, subject);
                        return no_common_architecture(refusal, warnings, settings);
                    }
                    Err(cause) => match settings.on_lookup_failure {
                        OnLookupFailure::Reject => {
                            return Outcome::Rejected(
                                format!(
                                    "{PREFIX}: cannot read the cluster's windows Nodes: {} (setting onLookupFailure: reject)",
                                    one_line(&cause, 300)
                                ),
                                warnings,
                            )
                        }
                        OnLookupFailure::Accept => {
                            warnings.push(warning(
                                format!("{PREFIX}: the {subject} was not pinned because the cluster's Windows Nodes could not be read: "),
                                &cause,
                            ));
                            return Outcome::Unchanged(warnings);
                        }
                        OnLookupFailure::IgnoreImage => {
                            warnings.push(warning(
                                format!("{PREFIX}: the cluster's Windows Nodes could not be read, so the {subject} is pinned to every OS build its images share: "),
                                &cause,
                            ));
                            Some(builds)
                        }
                    },
                }
            }
            Ok(builds) => builds,
            Err(refusal) => return no_common_architecture(refusal, warnings, settings),
        }
    } else {
        None
    };
    if pin(
        pod,
        &constraints,
        &common,
        &finally,
        &schedulable.architectures,
        builds.as_ref(),
        settings,
    ) {
        record_architectures(pod, &common);
        Outcome::Changed(warnings)
    } else {
        Outcome::Unchanged(warnings)
    }
}

/// A Pod bound to a node (`spec.nodeName`, or a DaemonSet Pod's target node), with `readNodes`:
/// accepted unchanged when every image runs on the node's OS and architecture, else rejected
/// (or, with `onNoCommonArchitecture: accept`, accepted with a warning). It is never pinned: the
/// scheduler does not place it. A node that cannot be read follows `onLookupFailure`.
fn decide_bound(
    images: &[&str],
    name: &str,
    pod_os: &str,
    subject: &str,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Outcome {
    let mut warnings = Vec::new();
    let node = match nodes::bound_node(cluster, name) {
        Ok(node) => node,
        Err(cause) => {
            return match settings.on_lookup_failure {
                OnLookupFailure::Reject => Outcome::Rejected(
                    format!(
                        "{PREFIX}: cannot read node {name:?}, which the {subject} is bound to: {} (setting onLookupFailure: reject)",
                        one_line(&cause, 300)
                    ),
                    warnings,
                ),
                OnLookupFailure::Accept | OnLookupFailure::IgnoreImage => {
                    warnings.push(warning(
                        format!("{PREFIX}: the {subject} was not checked against node {name:?}, which could not be read: "),
                        &cause,
                    ));
                    Outcome::Unchanged(warnings)
                }
            };
        }
    };
    let os = node.os.as_deref().unwrap_or(pod_os);
    let arch = node.architecture.as_deref().unwrap_or_default();
    // With pinWindowsBuild, a Windows Node's OS build counts too (a platform that names none
    // runs on any).
    let build = node
        .windows_build
        .as_deref()
        .filter(|_| settings.pin_windows_build && os == "windows");
    let fits = |platform: &platform::Platform| {
        platform.runs_on(os)
            && platform.architecture == arch
            && build.is_none_or(|build| platform.os_build.as_deref().is_none_or(|b| b == build))
    };
    let placed = match build {
        Some(build) => format!("{os}/{arch}, OS build {build}"),
        None => format!("{os}/{arch}"),
    };
    let resolved = resolve::resolve_images(images, settings, registry);
    let known = match known_images(&resolved, subject, settings, &mut warnings) {
        Ok(known) => known,
        Err(outcome) => return outcome,
    };
    let lacking: Vec<String> = known
        .iter()
        .filter(|image| {
            !image
                .platforms
                .as_deref()
                .unwrap_or_default()
                .iter()
                .any(fits)
        })
        .map(|image| {
            let platforms = image
                .platforms
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|platform| match (&platform.os_build, build) {
                    (Some(os_build), Some(_)) => format!("{platform} {os_build}"),
                    _ => platform.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ");
            format!("{:?} runs only on {platforms}", image.image)
        })
        .collect();
    if lacking.is_empty() {
        return Outcome::Unchanged(warnings);
    }
    no_common_architecture(
        Refusal::new(
            format!("{PREFIX}: the {subject} is bound to node {name:?} ({placed}), which its images have no build for: "),
            lacking.join("; "),
            if build.is_some() {
                ". Its containers cannot start there (a process-isolated Windows container needs the node's architecture and OS build)".to_string()
            } else {
                ". Its containers would fail there with exec format error".to_string()
            },
        ),
        warnings,
        settings,
    )
}

/// The images whose platforms are known, after the lookup failures were handled per
/// `onLookupFailure` (warnings added to `warnings`); the error is the outcome when they decide
/// it.
fn known_images<'a>(
    resolved: &'a [ImagePlatforms],
    subject: &str,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Result<Vec<&'a ImagePlatforms>, Outcome> {
    let (known, failed): (Vec<&ImagePlatforms>, Vec<&ImagePlatforms>) =
        resolved.iter().partition(|image| image.platforms.is_ok());
    warnings.extend(known.iter().filter(|image| !image.left_out.is_empty()).map(|image| {
        capped(
            &format!(
                "{PREFIX}: image {:?}: index entries left out of the architecture decision (no node reports ",
                image.image
            ),
            &image.left_out.join(", "),
            ")",
        )
    }));
    if !failed.is_empty() {
        let failures = failed.iter().map(|image| {
            (
                image.image.as_str(),
                image.platforms.as_ref().err().map_or("", String::as_str),
            )
        });
        match settings.on_lookup_failure {
            OnLookupFailure::Reject => {
                let all = failures
                    .map(|(image, cause)| format!("image {image:?}: {}", one_line(cause, 300)))
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(Outcome::Rejected(
                    format!("{PREFIX}: cannot tell which architectures the {subject}'s images run on: {all} (setting onLookupFailure: reject)"),
                    std::mem::take(warnings),
                ));
            }
            OnLookupFailure::Accept => {
                warnings.extend(failures.map(|(image, cause)| {
                    warning(
                        format!("{PREFIX}: the {subject} was not pinned to an architecture because a lookup failed: image {image:?}: "),
                        cause,
                    )
                }));
                return Err(Outcome::Unchanged(std::mem::take(warnings)));
            }
            OnLookupFailure::IgnoreImage => {
                warnings.extend(failures.map(|(image, cause)| {
                    warning(
                        format!("{PREFIX}: image {image:?} was left out of the architecture decision because its lookup failed: "),
                        cause,
                    )
                }));
                if known.is_empty() {
                    return Err(Outcome::Unchanged(std::mem::take(warnings)));
                }
            }
        }
    }
    Ok(known)
}

/// Writes what the Pod needs so that it admits exactly the nodes it admitted whose architecture
/// is in `common`: the architecture expression into each required term that admits others (or
/// one new term), `matchNodeLabels`, and, for the architectures it may finally run on
/// (`finally`), the preferred architecture and the tolerations. Returns whether anything
/// changed.
fn pin(
    pod: &mut Value,
    constraints: &Constraints,
    common: &Architectures,
    finally: &Architectures,
    schedulable: &Architectures,
    windows_builds: Option<&Architectures>,
    settings: &Settings,
) -> bool {
    let to_constrain: Vec<bool> = match &constraints.terms {
        None => vec![!constraints.selector_admits().within(common, schedulable)],
        Some(terms) => (0..terms.len())
            .map(|index| {
                !terms[index].empty && !constraints.term_admits(index).within(common, schedulable)
            })
            .collect(),
    };
    // Only a value a node label can hold: the Pod's labels are not validated yet when mutating
    // admission runs, and the API server would refuse the Pod for it.
    let mut labels: Vec<(String, Vec<String>)> = settings
        .match_node_labels
        .iter()
        .filter_map(|key| {
            pod::label(pod, key)
                .filter(|value| settings::check_label_value(value).is_ok())
                .map(|value| (key.clone(), vec![value.to_string()]))
        })
        .collect();
    if let Some(builds) = windows_builds {
        labels.push((
            platform::WINDOWS_BUILD_LABEL.to_string(),
            builds.iter().cloned().collect(),
        ));
    }
    let preferred = preferred_architecture(pod, settings)
        .filter(|preferred| finally.len() > 1 && finally.contains(*preferred))
        .map(str::to_string);

    let mut changed = false;
    let Some(spec) = pod.get_mut("spec") else {
        return false;
    };
    if to_constrain.contains(&true) || !labels.is_empty() {
        changed |= affinity::constrain_required(spec, &to_constrain, common, &labels);
    }
    if let Some(preferred) = preferred {
        if !affinity::has_preferred_architecture(spec) {
            if let Some(list) = edit::array_at(spec, &PREFERRED_PATH) {
                list.push(affinity::preferred_term(
                    &preferred,
                    settings.preferred_architecture_weight,
                ));
                changed = true;
            }
        }
    }
    changed |= tolerations::add_for(spec, finally, &settings.architecture_tolerations);
    changed
}

/// Why the Pod's own constraints admit no node whose architecture runs every image: the
/// nodeSelector, else the required terms (with the nodeSelector), each blamed for what it
/// admits, and `schedulableArchitectures` when the images run where the Pod asks but the cluster
/// has no such nodes. `image_common` is every architecture the images run on, `common` those of
/// them the cluster has.
fn explain(
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

/// The preferred architecture: the Pod's annotation, else the setting.
fn preferred_architecture<'a>(pod: &'a Value, settings: &'a Settings) -> Option<&'a str> {
    pod::annotation(pod, PREFERRED_ANNOTATION)
        .filter(|arch| platform::KNOWN_ARCHITECTURES.contains(arch))
        .or(settings.preferred_architecture.as_deref())
}

fn record_architectures(pod: &mut Value, common: &Architectures) {
    if let Some(annotations) = edit::object_at(pod, &["metadata", "annotations"]) {
        annotations.insert(
            ARCHITECTURES_ANNOTATION.to_string(),
            Value::String(platform::join(common, ",")),
        );
    }
}

/// Kubernetes may truncate admission warnings longer than 256 characters: a warning is its
/// lead-in and as much of the cause, on one line, as fits (at least 80 characters of it).
const WARNING_LENGTH: usize = 256;

fn warning(lead_in: String, cause: &str) -> String {
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
fn one_line(text: &str, max: usize) -> String {
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
struct Refusal {
    lead: String,
    listing: String,
    tail: String,
}

impl Refusal {
    fn new(lead: String, listing: String, tail: String) -> Refusal {
        Refusal {
            lead,
            listing,
            tail,
        }
    }
}

/// No architecture both runs every image and is admitted by the Pod's own constraints: reject,
/// or accept unchanged with a warning (`onNoCommonArchitecture: accept`).
fn no_common_architecture(
    refusal: Refusal,
    mut warnings: Vec<String>,
    settings: &Settings,
) -> Outcome {
    let Refusal {
        lead,
        listing,
        tail,
    } = refusal;
    match settings.on_no_common_architecture {
        OnNoCommonArchitecture::Reject => {
            Outcome::Rejected(format!("{lead}{listing}{tail}"), warnings)
        }
        OnNoCommonArchitecture::Accept => {
            warnings.push(capped(
                &lead,
                &listing,
                &format!(
                    "{tail} (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)"
                ),
            ));
            Outcome::Unchanged(warnings)
        }
    }
}

/// The architectures on which every known image runs.
struct Common {
    /// All of them.
    images: Architectures,
    /// Those within the schedulable architectures (all of them when those are unknown).
    runnable: Architectures,
}

/// The Windows OS builds (`major.minor.build`) that every known image has a build for on one of
/// `architectures`: `None` when no image says (an image with a Windows platform without
/// `os.version` runs on any build); the error is the rejection message when they share none.
fn windows_builds(
    known: &[&ImagePlatforms],
    architectures: &Architectures,
    subject: &str,
) -> Result<Option<Architectures>, Refusal> {
    let mut shared: Option<Architectures> = None;
    let mut each = Vec::new();
    for image in known {
        let platforms: Vec<&platform::Platform> = image
            .platforms
            .as_deref()
            .unwrap_or_default()
            .iter()
            .filter(|p| p.runs_on("windows") && architectures.contains(&p.architecture))
            .collect();
        if platforms.is_empty() || platforms.iter().any(|p| p.os_build.is_none()) {
            continue;
        }
        let builds: Architectures = platforms
            .iter()
            .filter_map(|p| p.os_build.clone())
            .collect();
        each.push(format!(
            "{:?} is built for {}",
            image.image,
            platform::join(&builds, ", ")
        ));
        shared = Some(match shared {
            None => builds,
            Some(so_far) => so_far.intersection(&builds).cloned().collect(),
        });
    }
    match shared {
        Some(builds) if builds.is_empty() => Err(Refusal::new(
            format!("{PREFIX}: no Windows OS build runs every image of this {subject}: "),
            each.join("; "),
            ". A Windows node runs a process-isolated container only on the OS build it was built for (node.kubernetes.io/windows-build; setting pinWindowsBuild)".to_string(),
        )),
        other => Ok(other),
    }
}

/// No Windows Node of the architectures the Pod may run on reports a build its images share
/// (`builds`): the rejection message, naming the builds the Nodes report.
fn absent_builds(
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

/// The architectures on which every known image runs for `os`; the error is the rejection
/// message naming each image and what it has.
fn image_architectures(
    known: &[&ImagePlatforms],
    os: &str,
    subject: &str,
) -> Result<Architectures, Refusal> {
    let per_image: Vec<(&ImagePlatforms, Architectures)> = known
        .iter()
        .map(|image| {
            let architectures = image
                .platforms
                .as_deref()
                .unwrap_or_default()
                .iter()
                .filter(|platform| platform.runs_on(os))
                .map(|platform| platform.architecture.clone())
                .collect();
            (*image, architectures)
        })
        .collect();
    let mut common: Option<Architectures> = None;
    for (_, architectures) in &per_image {
        common = Some(match common {
            None => architectures.clone(),
            Some(so_far) => so_far.intersection(architectures).cloned().collect(),
        });
    }
    let common = common.unwrap_or_default();
    if common.is_empty() {
        let each = per_image
            .iter()
            .map(|(image, architectures)| describe_image(image, architectures, os))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Refusal::new(
            format!("{PREFIX}: no {os} node architecture runs every image of this {subject}: "),
            each,
            ". Use images built for a common architecture".to_string(),
        ));
    }
    Ok(common)
}

/// The architectures on which every image runs (`common`), and those of them that are
/// schedulable; the error is the rejection message when none is.
fn within_schedulable(
    common: Architectures,
    schedulable: &Schedulable,
    os: &str,
    subject: &str,
) -> Result<Common, Refusal> {
    let schedulable_note = &schedulable.note;
    let from_nodes = schedulable.from_nodes;
    let schedulable = &schedulable.architectures;
    if schedulable.is_empty() {
        return Ok(Common {
            runnable: common.clone(),
            images: common,
        });
    }
    let runnable: Architectures = common.intersection(schedulable).cloned().collect();
    if runnable.is_empty() && from_nodes {
        return Err(Refusal::new(
            format!("{PREFIX}: the {subject}'s images all run only on "),
            platform::join(&common, ", "),
            format!(
                ", but the cluster has no {os} Node of those architectures ({schedulable_note})"
            ),
        ));
    }
    if runnable.is_empty() {
        return Err(Refusal::new(
            format!("{PREFIX}: the {subject}'s images all run only on "),
            platform::join(&common, ", "),
            format!(
                ", but the cluster's nodes are {} (setting schedulableArchitectures)",
                platform::join(schedulable, ", ")
            ),
        ));
    }
    Ok(Common {
        images: common,
        runnable,
    })
}

fn describe_image(image: &ImagePlatforms, architectures: &Architectures, os: &str) -> String {
    if !architectures.is_empty() {
        return format!(
            "{:?} runs on {}",
            image.image,
            platform::join(architectures, ", ")
        );
    }
    let others = image
        .platforms
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    format!("{:?} has no {os} build (only {others})", image.image)
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
