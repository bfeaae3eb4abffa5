//! The decision: from an admission request, the settings and the registry, accept, mutate or
//! reject. Plain Rust over plain data; the waPC layer in `lib.rs` only moves JSON in and out.

use serde_json::Value;

use crate::affinity;
use crate::edit;
use crate::platform::{self, Architectures};
use crate::pod;
use crate::registry::Registry;
use crate::resolve::{self, ImagePlatforms};
use crate::settings::{OnLookupFailure, OnNoCommonArchitecture, Settings};
use crate::tolerations;
use crate::workload;

/// Annotation in which the policy records the architectures it computed.
pub const ARCHITECTURES_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/architectures";
/// Pod annotation that names the preferred architecture, overriding the setting.
pub const PREFERRED_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/preferred-architecture";
/// Prefix of every message and warning, so users know where it comes from.
pub const PREFIX: &str = "image-arch-affinity";

const REQUIRED_PATH: [&str; 3] = [
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
];
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
    fn accept(warnings: Vec<String>) -> Decision {
        Decision {
            verdict: Verdict::Accept,
            warnings,
        }
    }

    fn reject(message: String, warnings: Vec<String>) -> Decision {
        Decision {
            verdict: Verdict::Reject(message),
            warnings,
        }
    }
}

/// The admission request fields the decision reads.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub kind: &'a str,
    pub operation: &'a str,
    pub sub_resource: &'a str,
    pub object: Value,
    /// The object before an UPDATE (null otherwise).
    pub old_object: &'a Value,
}

/// Decides on one admission request.
pub fn evaluate(
    request: Request<'_>,
    settings: &Settings,
    registry: &mut dyn Registry,
) -> Decision {
    if !request.sub_resource.is_empty() {
        return Decision::accept(Vec::new());
    }
    if request.kind != "Pod" {
        return workload::evaluate(
            request.kind,
            request.operation,
            request.object,
            request.old_object,
            settings,
            registry,
        );
    }
    if request.operation != "CREATE" {
        return Decision::accept(Vec::new());
    }
    let mut pod = request.object;
    match decide_pod(&mut pod, "Pod", settings, registry).outcome {
        Outcome::Unchanged(warnings) => Decision::accept(warnings),
        Outcome::Changed(warnings) => Decision {
            verdict: Verdict::Mutate(pod),
            warnings,
        },
        Outcome::Rejected(message, warnings) => Decision::reject(message, warnings),
    }
}

/// What happened to a Pod (or Pod template), with the warnings for the user.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Unchanged(Vec<String>),
    Changed(Vec<String>),
    Rejected(String, Vec<String>),
}

/// Applies the policy to a Pod, or to a Pod template (an object with `metadata` and `spec`),
/// editing it in place.
pub fn decide_pod(
    pod: &mut Value,
    subject: &str,
    settings: &Settings,
    registry: &mut dyn Registry,
) -> Decided {
    let mut architectures = None;
    let outcome = decide(pod, subject, settings, registry, &mut architectures);
    Decided {
        outcome,
        architectures,
    }
}

/// The outcome of `decide_pod`, with the architectures the images share when they were
/// computed.
#[derive(Debug, PartialEq)]
pub struct Decided {
    pub outcome: Outcome,
    pub architectures: Option<Architectures>,
}

fn decide(
    pod: &mut Value,
    subject: &str,
    settings: &Settings,
    registry: &mut dyn Registry,
    architectures: &mut Option<Architectures>,
) -> Outcome {
    if !pod.is_object() || !pod["spec"].is_object() || pod::skip_reason(pod).is_some() {
        return Outcome::Unchanged(Vec::new());
    }
    let images = pod::images(pod);
    if images.is_empty() {
        return Outcome::Unchanged(Vec::new());
    }
    let selector = pod::architecture_selector(pod);
    if !selector.is_empty() && settings.on_no_common_architecture == OnNoCommonArchitecture::Accept
    {
        // The nodeSelector fixes the architecture and nothing is added to such a Pod; a conflict
        // would only be a warning: no lookup can change the decision.
        return Outcome::Unchanged(Vec::new());
    }
    let os = pod::operating_system(pod, &settings.default_operating_system).to_string();
    let resolved = resolve::resolve_images(&images, settings, registry);

    let mut warnings = Vec::new();
    let (known, failed): (Vec<&ImagePlatforms>, Vec<&ImagePlatforms>) =
        resolved.iter().partition(|image| image.platforms.is_ok());
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
                return Outcome::Rejected(
                    format!("{PREFIX}: cannot tell which architectures the {subject}'s images run on: {all} (setting onLookupFailure: reject)"),
                    warnings,
                );
            }
            OnLookupFailure::Accept => {
                warnings.extend(failures.map(|(image, cause)| {
                    warning(
                        format!("{PREFIX}: the {subject} was not pinned to an architecture because a lookup failed: image {image:?}: "),
                        cause,
                    )
                }));
                return Outcome::Unchanged(warnings);
            }
            OnLookupFailure::IgnoreImage => {
                warnings.extend(failures.map(|(image, cause)| {
                    warning(
                        format!("{PREFIX}: image {image:?} was left out of the architecture decision because its lookup failed: "),
                        cause,
                    )
                }));
                if known.is_empty() {
                    return Outcome::Unchanged(warnings);
                }
            }
        }
    }

    let Common {
        images: image_common,
        runnable: common,
    } = match common_architectures(&known, &os, subject, settings) {
        Ok(common) => common,
        Err(refusal) => return no_common_architecture(refusal, warnings, settings),
    };

    *architectures = Some(common.clone());
    if !selector.is_empty() {
        return match selector.iter().find(|(_, value)| !common.contains(*value)) {
            None => Outcome::Unchanged(warnings),
            // The images run there: the cluster has no such nodes (schedulableArchitectures).
            Some((key, value)) if image_common.contains(*value) => Outcome::Rejected(
                format!(
                    "{PREFIX}: the {subject}'s nodeSelector {key}={value} asks for {value} nodes, but the cluster has none (setting schedulableArchitectures: {}); of those, its images run on: {}",
                    platform::join(&settings.schedulable(), ", "),
                    platform::join(&common, ", ")
                ),
                warnings,
            ),
            Some((key, value)) => Outcome::Rejected(
                format!(
                    "{PREFIX}: the {subject}'s nodeSelector {key}={value} asks for an architecture that its images do not run on; they all run on: {}",
                    platform::join(&common, ", ")
                ),
                warnings,
            ),
        };
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
    match pin(pod, subject, &common, &image_common, settings) {
        Err(refusal) => no_common_architecture(refusal, warnings, settings),
        Ok(false) => Outcome::Unchanged(warnings),
        Ok(true) => {
            record_architectures(pod, &common);
            Outcome::Changed(warnings)
        }
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

/// A host error on one line, cut to `max` characters. Registries answer multi-line error chains
/// and whole HTML pages: whitespace is folded, the host's wrapper and the request URLs (they
/// repeat the image) are dropped, and what is still too long is cut after its first two thirds, keeping the last
/// third: error chains put the context first and the root cause (`Connection refused`) last.
fn one_line(text: &str, max: usize) -> String {
    let text = text
        .trim_start()
        .trim_start_matches("Callback evaluation failure: ");
    let mut words: Vec<&str> = Vec::new();
    for word in text.split_whitespace() {
        let bare = word.trim_start_matches('(');
        if bare.starts_with("http://") || bare.starts_with("https://") {
            if words.last() == Some(&"url") {
                words.pop();
            }
            continue;
        }
        words.push(word);
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

/// The architectures on which every known image runs for `os`, and those within the schedulable
/// ones; the error is the rejection message naming each image and what it has.
fn common_architectures(
    known: &[&ImagePlatforms],
    os: &str,
    subject: &str,
    settings: &Settings,
) -> Result<Common, Refusal> {
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
    let schedulable = settings.schedulable();
    if schedulable.is_empty() {
        return Ok(Common {
            runnable: common.clone(),
            images: common,
        });
    }
    let runnable: Architectures = common.intersection(&schedulable).cloned().collect();
    if runnable.is_empty() {
        return Err(Refusal::new(
            format!("{PREFIX}: the {subject}'s images all run only on "),
            platform::join(&common, ", "),
            format!(
                ", but the cluster's nodes are {} (setting schedulableArchitectures)",
                platform::join(&schedulable, ", ")
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

/// Writes the constraints for `common` into the Pod: required affinity (unless `common` already
/// covers every schedulable architecture), matchNodeLabels, the preferred architecture and the
/// tolerations. Returns whether anything changed; the error is a rejection message.
/// `image_common` is `common` before the cut to the schedulable architectures.
fn pin(
    pod: &mut Value,
    subject: &str,
    common: &Architectures,
    image_common: &Architectures,
    settings: &Settings,
) -> Result<bool, Refusal> {
    let schedulable = settings.schedulable();
    let covers_all = !schedulable.is_empty() && common.is_superset(&schedulable);

    let terms = pod::required_terms(&pod["spec"]);
    let plan = terms.map(|terms| affinity::plan_required(terms, common));
    if let (Some(terms), Some(conflict)) =
        (terms, plan.as_ref().and_then(|plan| plan.conflict.as_ref()))
    {
        // Architectures the images run on that the terms admit: the cluster has no such nodes.
        let admitted = affinity::required_admits(terms);
        let stranded: Architectures = image_common
            .iter()
            .filter(|arch| admitted.admits(arch))
            .cloned()
            .collect();
        if stranded.is_empty() {
            return Err(Refusal::new(
                format!(
                    "{PREFIX}: every required node affinity term of the {subject} excludes the architectures its images run on ({}): ",
                    platform::join(common, ", ")
                ),
                conflict.clone(),
                String::new(),
            ));
        }
        return Err(Refusal::new(
            format!(
                "{PREFIX}: every required node affinity term of the {subject} excludes the architectures its images run on that the cluster has nodes of ({}): ",
                platform::join(common, ", ")
            ),
            conflict.clone(),
            format!(
                ". The cluster has no {} nodes (setting schedulableArchitectures: {})",
                platform::join(&stranded, ", "),
                platform::join(&settings.schedulable(), ", ")
            ),
        ));
    }
    let labels: Vec<(String, String)> = settings
        .match_node_labels
        .iter()
        .filter_map(|key| pod::label(pod, key).map(|value| (key.clone(), value.to_string())))
        .collect();
    let preferred = preferred_architecture(pod, settings)
        .filter(|preferred| common.len() > 1 && common.contains(*preferred))
        .map(str::to_string);

    let mut changed = false;
    let Some(spec) = pod.get_mut("spec") else {
        return Ok(false);
    };
    if !covers_all || !labels.is_empty() {
        changed |= constrain_required(
            spec,
            plan.map(|p| p.to_constrain),
            common,
            covers_all,
            &labels,
        );
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
    changed |= tolerations::add_for(spec, common, &settings.architecture_tolerations);
    Ok(changed)
}

/// Puts the architecture expression (unless `covers_all`) and the label expressions into every
/// required term, or creates the one term when the Pod has none.
fn constrain_required(
    spec: &mut Value,
    to_constrain: Option<Vec<usize>>,
    common: &Architectures,
    covers_all: bool,
    labels: &[(String, String)],
) -> bool {
    let Some(required) = edit::object_at(spec, &REQUIRED_PATH) else {
        return false;
    };
    let terms = required.entry("nodeSelectorTerms").or_insert(Value::Null);
    let mut changed = false;
    match terms.as_array_mut() {
        Some(terms) if !terms.is_empty() => {
            let to_constrain = to_constrain.unwrap_or_default();
            for (index, term) in terms.iter_mut().enumerate() {
                if !covers_all && to_constrain.contains(&index) {
                    affinity::push_expression(term, affinity::architecture_expression(common));
                    changed = true;
                }
                if term["matchExpressions"]
                    .as_array()
                    .is_none_or(Vec::is_empty)
                    && term["matchFields"].as_array().is_none_or(Vec::is_empty)
                {
                    continue; // an empty term matches nothing; leave it so
                }
                for (key, value) in labels {
                    if !affinity::has_expression_on(term, key) {
                        affinity::push_expression(term, affinity::in_expression(key, [value]));
                        changed = true;
                    }
                }
            }
        }
        _ => {
            let mut expressions = Vec::new();
            if !covers_all {
                expressions.push(affinity::architecture_expression(common));
            }
            expressions.extend(
                labels
                    .iter()
                    .map(|(key, value)| affinity::in_expression(key, [value])),
            );
            *terms = serde_json::json!([{ "matchExpressions": expressions }]);
            changed = true;
        }
    }
    changed
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
