//! The decision on one Pod or Pod template, the same for both, in the steps of docs/design.md
//! (`decide`): read its images and the constraints on its nodes (`constraint`), decide from
//! them, and edit it (`affinity`, `tolerations`); the texts are `message`'s. Plain Rust over
//! plain data: `policy` routes requests here, `workload` finds the templates.

use std::cell::RefCell;

use serde_json::Value;

use crate::affinity;
use crate::cluster::Cluster;
use crate::constraint::{Admits, Constraints};
use crate::edit;
use crate::message::{self, Failure, Refusal};
use crate::nodes::{self, Builds, Schedulable};
use crate::platform::{self, Architectures};
use crate::pod::{self, PodImage};
use crate::registry::Registry;
use crate::resolve::{self, ImagePlatforms};
use crate::settings::{self, OnLookupFailure, OnNoCommonArchitecture, Settings};
use crate::tolerations;
use crate::webassembly;

/// Annotation in which the policy records the architectures it computed.
pub const ARCHITECTURES_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/architectures";
/// Pod annotation that names the preferred architecture, overriding the setting.
pub const PREFERRED_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/preferred-architecture";
pub(crate) use crate::message::capped;
pub use crate::message::PREFIX;

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
}

/// Applies the policy to a Pod, or to a Pod template (an object with `metadata` and `spec`),
/// editing it in place. The cluster is read only with `readNodes`.
pub fn decide_pod(
    pod: &mut Value,
    subject: Subject,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Outcome {
    steps(pod, subject, settings, registry, cluster).unwrap_or_else(|outcome| outcome)
}

/// What the decision knows of the Pod and its images before it looks at the cluster.
struct Facts<'a> {
    subject: Subject<'a>,
    settings: &'a Settings,
    constraints: Constraints,
    /// The images looked up that constrain the Pod's architecture (not the WebAssembly ones
    /// that run anywhere: `ImagePlatforms::arch_free`).
    known: Vec<&'a ImagePlatforms>,
    /// The architectures every known image runs on for the Pod's OS (`fallbackArchitectures`
    /// when no image could be looked up; every architecture when none constrains).
    image_common: Architectures,
    /// Images were looked up, and none constrains the architecture: they run on every node.
    unconstrained: bool,
    /// No image that runs on a CPU architecture could be looked up: `image_common` is
    /// `fallbackArchitectures`, and the warning that says so.
    fallback: Option<String>,
    /// WebAssembly images were looked up (the fallback's messages say that only the others
    /// failed).
    webassembly: bool,
}

impl Facts<'_> {
    /// No architecture fits: `refuse`, except that a Pod pinned to `fallbackArchitectures`
    /// that fit none of its nodes is left unpinned, with a warning (a guess never refuses it).
    fn refuse(&self, refusal: Refusal, mut warnings: Vec<String>) -> Outcome {
        if self.fallback.is_some() {
            warnings.push(message::fallback_unfit(
                self.subject.name,
                self.webassembly,
                &self.image_common,
            ));
            return Outcome::Unchanged(warnings);
        }
        refuse(refusal, &mut warnings, self.settings)
    }
}

/// The steps of docs/design.md ("What it does, step by step"), each a function that either
/// gives what the next one needs or settles the outcome (the error).
fn steps(
    pod: &mut Value,
    subject: Subject,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Result<Outcome, Outcome> {
    // 1. Skip what the policy does not place; check a bound Pod against its node.
    let images = placed_by_scheduler(pod, subject.name, settings, registry, cluster)?;
    // 2, 5. The OS, and every constraint on the Pod's nodes.
    let constraints = Constraints::read_pod(pod, &settings.default_operating_system);
    if !platform::NODE_OPERATING_SYSTEMS.contains(&constraints.os.as_str()) {
        // No node runs that OS: no lookup can change the answer.
        let refusal = message::no_node_os(&constraints.os, subject.name);
        return Err(refuse(refusal, &mut Vec::new(), settings));
    }
    // 3, 4. What every image runs on.
    let mut warnings = Vec::new();
    let resolved = resolve::resolve_images(&images, settings, registry);
    let (looked_up, failed) = known_images(&resolved, subject.name, settings, &mut warnings)?;
    let looked_up_count = looked_up.len();
    let known = constraining(looked_up, webassembly::runtime(pod, settings));
    let webassembly = known.len() < looked_up_count;
    // No image that runs on a CPU architecture could be looked up (WebAssembly ones say
    // nothing of it): `fallbackArchitectures` stand in for those that failed.
    let fallback =
        (known.is_empty() && !failed.is_empty() && !settings.fallback_architectures.is_empty())
            .then(|| message::fallback(subject.name, &failed, webassembly, settings));
    let unconstrained = fallback.is_none() && known.is_empty();
    let image_common = if fallback.is_some() {
        settings.fallback_architectures.iter().cloned().collect()
    } else if unconstrained {
        platform::every_architecture()
    } else {
        image_architectures(&known, &constraints.os, subject.name)
            .map_err(|refusal| refuse(refusal, &mut warnings, settings))?
    };
    let facts = Facts {
        subject,
        settings,
        constraints,
        known,
        image_common,
        unconstrained,
        fallback,
        webassembly,
    };
    // 6, 7. The architectures the cluster has; where the Pod may finally run; the edits.
    if !settings.read_nodes {
        let mut schedulable = Schedulable::configured(settings.schedulable());
        schedulable.other_os = settings.other_operating_system(&facts.constraints.os);
        return Ok(settle(pod, &facts, &schedulable, warnings));
    }
    settle_from_nodes(pod, &facts, cluster, warnings)
}

/// Steps 6 and 7 with `readNodes`: the decision `settle` makes for the cluster's Nodes of the
/// Pod's OS, which `nodes::decide_from_nodes` reads no further than that decision needs. Nodes
/// that cannot be read follow `onLookupFailure` (`ignoreImage`: every architecture the images
/// run on counts).
fn settle_from_nodes(
    pod: &mut Value,
    facts: &Facts,
    cluster: &mut dyn Cluster,
    mut warnings: Vec<String>,
) -> Result<Outcome, Outcome> {
    let settings = facts.settings;
    let os = facts.constraints.os.as_str();
    // A Windows Pod pinned to its images' OS builds reads every Windows Node's build.
    let windows_builds_from_nodes = settings.pin_windows_build
        && os == "windows"
        && matches!(
            windows_builds(&facts.known, &facts.image_common, facts.subject.name),
            Ok(Some(_))
        );
    // The Nodes of another OS are read after those of the Pod's OS, once, and only for an
    // outcome the OS pin can change (`other_operating_system`).
    let cluster = RefCell::new(cluster);
    let mut other_os: Option<Result<(bool, Vec<String>), Outcome>> = None;
    let mut decide = |schedulable: &Schedulable| {
        let mut decided = pod.clone();
        let outcome = settle(&mut decided, facts, schedulable, warnings.clone());
        if matches!(outcome, Outcome::Rejected(..)) {
            return Ok((outcome, decided));
        }
        // The warnings so far, and those of a failed read (`ignoreImage`); the outcome of one
        // (`accept`, `reject`) carries them all.
        let read = other_os.get_or_insert_with(|| {
            let mut warnings = warnings.clone();
            let mut cluster = Shared(&cluster);
            other_operating_system(pod, facts, &mut cluster, &mut warnings)
                .map(|found| (found, warnings))
        });
        match read {
            Err(outcome) => Err(outcome.clone()),
            Ok((false, _)) => Ok((outcome, decided)),
            Ok((true, warnings)) => {
                let mut decided = pod.clone();
                let schedulable = Schedulable {
                    other_os: true,
                    ..schedulable.clone()
                };
                let outcome = settle(&mut decided, facts, &schedulable, warnings.clone());
                Ok((outcome, decided))
            }
        }
    };
    let read = nodes::decide_from_nodes(
        &mut Shared(&cluster),
        os,
        &facts.image_common,
        &facts.constraints.admits(),
        &settings.autoscaled(os),
        windows_builds_from_nodes,
        &mut decide,
    );
    match read {
        Ok(Ok((outcome, decided))) => {
            *pod = decided;
            Ok(outcome)
        }
        Ok(Err(outcome)) => Err(outcome),
        Err(cause) => {
            let failure = Failure::nodes(os, facts.subject.name, cause);
            on_lookup_failure(failure, settings, &mut warnings)?;
            let unknown = Schedulable::configured(Architectures::new());
            Ok(settle(pod, facts, &unknown, warnings))
        }
    }
}

/// One cluster for `decide_from_nodes` and the decisions it calls, which read it in turn.
struct Shared<'a, 'b>(&'a RefCell<&'b mut dyn Cluster>);

impl Cluster for Shared<'_, '_> {
    fn list_nodes(&mut self, selector: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
        self.0.borrow_mut().list_nodes(selector, masks)
    }
    fn get_node(&mut self, name: &str, masks: &[&str]) -> Result<Vec<u8>, String> {
        self.0.borrow_mut().get_node(name, masks)
    }
}

/// With `readNodes`: whether the cluster has nodes of an OS other than the Pod's
/// (`nodes::other_operating_system`), read only for a Pod the OS pin could change: one whose
/// images constrain where it runs and whose own constraints admit nodes of another OS. Nodes
/// that cannot be read follow `onLookupFailure` (`ignoreImage`: the Pod is pinned to its OS).
fn other_operating_system(
    pod: &Value,
    facts: &Facts,
    cluster: &mut dyn Cluster,
    warnings: &mut Vec<String>,
) -> Result<bool, Outcome> {
    let os = facts.constraints.os.as_str();
    if facts.unconstrained || !admits_other_os(pod, os, None) {
        return Ok(false);
    }
    let settings = facts.settings;
    match nodes::other_operating_system(cluster, os, &|other| settings.autoscaled(other)) {
        Ok(found) => Ok(found),
        Err(cause) => {
            let other = platform::other_operating_systems(os)
                .collect::<Vec<_>>()
                .join(", ");
            let failure = Failure::other_os_nodes(&other, os, facts.subject.name, cause);
            on_lookup_failure(failure, settings, warnings)?;
            Ok(true)
        }
    }
}

/// Whether the Pod admits a node of an OS other than `os`: through required term `index` with
/// its nodeSelector, or (`None`) through any of its constraints (`Constraints::admits`).
fn admits_other_os(pod: &Value, os: &str, term: Option<usize>) -> bool {
    platform::other_operating_systems(os).any(|other| {
        let constraints = Constraints::read(&pod["spec"], other);
        let admits = match term {
            None => constraints.admits(),
            Some(index) => constraints.term_admits(index),
        };
        admits != Admits::none()
    })
}

/// Steps 6 and 7 for a cluster whose architectures are `schedulable`'s: where the Pod may finally
/// run (or why nowhere), and the fewest edits.
fn settle(
    pod: &mut Value,
    facts: &Facts,
    schedulable: &Schedulable,
    mut warnings: Vec<String>,
) -> Outcome {
    let (subject, settings) = (facts.subject.name, facts.settings);
    let constraints = &facts.constraints;
    let os = &constraints.os;
    // The architectures nodes may have: the schedulable ones; when they are unknown, and the
    // images run anywhere, every architecture a node can report (so nothing is pinned).
    let universe = if facts.unconstrained && schedulable.architectures.is_empty() {
        platform::every_architecture()
    } else {
        schedulable.architectures.clone()
    };
    let common = if facts.unconstrained {
        universe.clone()
    } else {
        match within_schedulable(&facts.image_common, schedulable, subject) {
            Ok(common) => common,
            Err(refusal) => return facts.refuse(refusal, warnings),
        }
    };
    let admits = constraints.admits();
    let finally = admits.among(&common);
    if finally.is_empty() {
        let refusal = message::explain(
            constraints,
            subject,
            &facts.image_common,
            &common,
            schedulable,
        );
        return facts.refuse(refusal, warnings);
    }
    warn_bad_preferred_annotation(pod, &mut warnings);
    let builds = if settings.pin_windows_build && os == "windows" {
        match windows_build_pin(facts, &finally, schedulable) {
            Ok(builds) => builds,
            Err(refusal) => return facts.refuse(refusal, warnings),
        }
    } else {
        None
    };
    // In a cluster of several OSes, the Pod keeps to nodes of its own.
    let pin_os = schedulable.other_os && !facts.unconstrained;
    // (Read before `pin` writes the OS expression.)
    let daemon_set_other_os = facts.subject.daemon_set && pin_os && admits_other_os(pod, os, None);
    let changed = pin(
        pod,
        constraints,
        &common,
        &finally,
        &universe,
        builds.as_ref(),
        pin_os,
        settings,
    );
    if facts.subject.daemon_set {
        warnings.extend(message::daemon_set(admits, &common, &universe));
        if daemon_set_other_os {
            warnings.push(message::daemon_set_other_os(os));
        }
    }
    warnings.extend(facts.fallback.clone());
    // The annotation records the architectures pinned: none for images that constrain none, nor
    // for a Pod pinned only to its OS (whose architectures the cluster's Nodes never cut).
    if changed.architectures && !facts.unconstrained {
        record_architectures(pod, &common);
    }
    match changed.architectures || changed.os {
        true => Outcome::Changed(warnings),
        false => Outcome::Unchanged(warnings),
    }
}

/// Step 1: the Pod's images when the scheduler will place it. A Pod bound to a node (or a
/// DaemonSet's, which targets one) is checked against that node when Nodes are read (the
/// outcome), and left alone otherwise; so is a Pod without images.
fn placed_by_scheduler<'a>(
    pod: &'a Value,
    subject: &str,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Result<Vec<PodImage<'a>>, Outcome> {
    let unchanged = || Outcome::Unchanged(Vec::new());
    if !pod.is_object() || !pod["spec"].is_object() {
        return Err(unchanged());
    }
    let bound = match pod::skip_reason(pod) {
        None => None,
        Some(_) => match pod::bound_node(pod).filter(|_| settings.read_nodes) {
            Some(node) => Some(node),
            None => return Err(unchanged()),
        },
    };
    let images = pod::images(pod);
    if images.is_empty() {
        return Err(unchanged());
    }
    if let Some(node) = bound {
        return Err(decide_bound(
            &images, node, pod, subject, settings, registry, cluster,
        ));
    }
    Ok(images)
}

/// Step 7: the Windows OS builds to pin a Windows Pod to (`pinWindowsBuild`): those every image
/// has, cut to those the cluster's Windows Nodes report with `readNodes`; the error is the
/// refusal when they share none, or no Node has one.
fn windows_build_pin(
    facts: &Facts,
    finally: &Architectures,
    schedulable: &Schedulable,
) -> Result<Option<Architectures>, Refusal> {
    let subject = facts.subject.name;
    let Some(builds) = windows_builds(&facts.known, finally, subject)? else {
        return Ok(None);
    };
    let Some(nodes) = schedulable.nodes.as_deref() else {
        return Ok(Some(builds));
    };
    let autoscaled = facts.settings.autoscaled("windows");
    match nodes::windows_builds(nodes, finally, &builds, &autoscaled) {
        Builds::Covered => Ok(None),
        Builds::Pin(found) => Ok(Some(found)),
        Builds::Absent {
            reported,
            unlabelled,
        } => Err(message::absent_builds(
            &builds, &reported, unlabelled, finally, subject,
        )),
    }
}

/// `onLookupFailure` applied to a read that failed (images, Nodes, Windows Nodes, a bound Pod's
/// node): `reject` and `accept` settle the outcome; `ignoreImage` adds its warnings and lets
/// the caller go on without what could not be read.
fn on_lookup_failure(
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

/// The preferred-architecture annotation, when it names no architecture: a warning.
fn warn_bad_preferred_annotation(pod: &Value, warnings: &mut Vec<String>) {
    if let Some(value) = pod::annotation(pod, PREFERRED_ANNOTATION) {
        if !platform::KNOWN_ARCHITECTURES.contains(&value) {
            warnings.push(message::bad_preferred_annotation(
                PREFERRED_ANNOTATION,
                value,
            ));
        }
    }
}

/// A Pod bound to a node (`spec.nodeName`, or a DaemonSet Pod's target node), with `readNodes`:
/// accepted unchanged when every image runs on the node's OS and architecture, else rejected
/// (or, with `onNoCommonArchitecture: accept`, accepted with a warning). It is never pinned: the
/// scheduler does not place it. A node that cannot be read follows `onLookupFailure`.
fn decide_bound(
    images: &[PodImage],
    name: &str,
    pod: &Value,
    subject: &str,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Outcome {
    let mut warnings = Vec::new();
    let node = match nodes::bound_node(cluster, name) {
        Ok(node) => node,
        Err(cause) => {
            let failure = Failure::bound_node(name, subject, cause);
            return match on_lookup_failure(failure, settings, &mut warnings) {
                Err(outcome) => outcome,
                Ok(()) => Outcome::Unchanged(warnings),
            };
        }
    };
    let pod_os = pod::operating_system(pod, &settings.default_operating_system);
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
        // A bound Pod is never pinned: no fallback for it.
        Ok((known, _)) if known.is_empty() => return Outcome::Unchanged(warnings),
        Ok((known, _)) => constraining(known, webassembly::runtime(pod, settings)),
        Err(outcome) => return outcome,
    };
    let lacking: Vec<&&ImagePlatforms> = known
        .iter()
        .filter(|image| {
            !image
                .platforms
                .as_deref()
                .unwrap_or_default()
                .iter()
                .any(fits)
        })
        .collect();
    let containers_lack = lacking.iter().any(|image| image.volume.is_none());
    let lacking: Vec<String> = lacking
        .iter()
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
            format!("{} runs only on {platforms}", message::named(image))
        })
        .collect();
    if lacking.is_empty() {
        return Outcome::Unchanged(warnings);
    }
    refuse(
        Refusal::new(
            format!("{PREFIX}: the {subject} is bound to node {name:?} ({placed}), which its images have no build for: "),
            lacking.join("; "),
            if !containers_lack {
                ". The kubelet cannot mount them there: use images with a build for that platform (an index), or list them in imagePlatforms".to_string()
            } else if build.is_some() {
                ". Its containers cannot start there (a process-isolated Windows container needs the node's architecture and OS build)".to_string()
            } else {
                ". Its containers would fail there with exec format error".to_string()
            },
        ),
        &mut warnings,
        settings,
    )
}

/// Step 4: of the images looked up, those that constrain the Pod's architecture: all but the
/// WebAssembly ones that run on any node (only WebAssembly builds, or a WebAssembly build and a
/// Pod under one of `wasmRuntimeClasses`).
fn constraining(known: Vec<&ImagePlatforms>, webassembly_runtime: bool) -> Vec<&ImagePlatforms> {
    known
        .into_iter()
        .filter(|image| !image.arch_free(webassembly_runtime))
        .collect()
}

/// Steps 3 and 4: the images whose platforms are known (platform-less artifacts left out),
/// and those whose lookup failed (as `message::named` names them), after the failures were
/// handled per `onLookupFailure` (warnings added to `warnings`); the error is the outcome when
/// they decide it.
fn known_images<'a>(
    resolved: &'a [ImagePlatforms],
    subject: &str,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Result<(Vec<&'a ImagePlatforms>, Vec<String>), Outcome> {
    // A platform-less artifact that only image volumes mount says nothing of where the Pod runs:
    // the Pod is decided as if it had no such volume.
    let (known, failed): (Vec<&ImagePlatforms>, Vec<&ImagePlatforms>) = resolved
        .iter()
        .filter(|image| !image.platformless)
        .partition(|image| image.platforms.is_ok());
    warnings.extend(
        known
            .iter()
            .filter(|image| !image.left_out.is_empty())
            .map(|image| message::left_out(image)),
    );
    if failed.is_empty() {
        return Ok((known, Vec::new()));
    }
    let failures: Vec<(String, &str)> = failed
        .iter()
        .map(|image| {
            let cause = image.platforms.as_ref().err().map_or("", String::as_str);
            (message::labelled(image), cause)
        })
        .collect();
    on_lookup_failure(Failure::images(subject, &failures), settings, warnings)?;
    // No image left: unchanged, unless `fallbackArchitectures` stand in for them (`steps`).
    if known.is_empty() && settings.fallback_architectures.is_empty() {
        return Err(Outcome::Unchanged(std::mem::take(warnings)));
    }
    Ok((known, failed.into_iter().map(message::named).collect()))
}

/// Writes what the Pod needs so that it admits exactly the nodes it admitted whose architecture
/// is in `common` (and, with `pin_os`, whose OS is its own): the architecture expression into
/// each required term that admits others, the OS expression into each that admits nodes of
/// another OS (or one new term with what it needs), `matchNodeLabels`, and, for the
/// architectures it may finally run on (`finally`), the preferred architecture and the
/// tolerations. Returns what changed.
#[allow(clippy::too_many_arguments)]
fn pin(
    pod: &mut Value,
    constraints: &Constraints,
    common: &Architectures,
    finally: &Architectures,
    schedulable: &Architectures,
    windows_builds: Option<&Architectures>,
    pin_os: bool,
    settings: &Settings,
) -> Changed {
    // Per required term (or the one new term): the architecture expression where it admits
    // others, the OS expression where it admits nodes of another OS.
    let per_term = |index: Option<usize>| {
        let admits = match index {
            None => constraints.selector_admits(),
            Some(index) => constraints.term_admits(index),
        };
        let architecture = (!admits.within(common, schedulable))
            .then(|| affinity::architecture_expression(common));
        let os = (pin_os && admits_other_os(pod, &constraints.os, index))
            .then(|| affinity::operating_system_expression(&constraints.os));
        (architecture, os)
    };
    let (architectures, operating_systems): (Vec<Vec<Value>>, Vec<Vec<Value>>) =
        match &constraints.terms {
            None => vec![per_term(None)],
            Some(terms) => (0..terms.len())
                .map(|index| match terms[index].empty {
                    true => (None, None),
                    false => per_term(Some(index)),
                })
                .collect(),
        }
        .into_iter()
        .map(|(architecture, os)| (Vec::from_iter(architecture), Vec::from_iter(os)))
        .unzip();
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
    // Preferences matter only where the Pod has a choice.
    let preferred: Vec<(String, i64)> = preferences(pod, settings)
        .into_iter()
        .filter(|(arch, _)| finally.len() > 1 && finally.contains(*arch))
        .map(|(arch, weight)| (arch.to_string(), weight))
        .collect();

    let mut changed = Changed::default();
    let Some(spec) = pod.get_mut("spec") else {
        return changed;
    };
    if architectures.iter().any(|added| !added.is_empty()) || !labels.is_empty() {
        changed.architectures |= affinity::constrain_required(spec, &architectures, &labels);
    }
    // After the architectures and labels: the expressions the policy adds keep their order.
    if operating_systems.iter().any(|added| !added.is_empty()) {
        changed.os = affinity::constrain_required(spec, &operating_systems, &[]);
    }
    // A Pod that already weighs architectures keeps its own preferences.
    if !preferred.is_empty() && !affinity::has_preferred_architecture(spec) {
        if let Some(list) = edit::array_at(spec, &PREFERRED_PATH) {
            for (arch, weight) in &preferred {
                list.push(affinity::preferred_term(arch, *weight));
            }
            changed.architectures = true;
        }
    }
    changed.architectures |=
        tolerations::add_for(spec, finally, &settings.architecture_tolerations);
    changed
}

/// What `pin` changed: what the architectures need (with `matchNodeLabels`, preferences and
/// tolerations), and the OS expression.
#[derive(Debug, Default, Clone, Copy)]
struct Changed {
    architectures: bool,
    os: bool,
}

/// The architectures to prefer and their weights: the Pod's annotation (with
/// `preferredArchitectureWeight`), else the settings (`preferredArchitectures`, or
/// `preferredArchitecture`).
fn preferences<'a>(pod: &'a Value, settings: &'a Settings) -> Vec<(&'a str, i64)> {
    match pod::annotation(pod, PREFERRED_ANNOTATION)
        .filter(|arch| platform::KNOWN_ARCHITECTURES.contains(arch))
    {
        Some(arch) => vec![(arch, settings.preferred_architecture_weight)],
        None => settings.preferences(),
    }
}

fn record_architectures(pod: &mut Value, common: &Architectures) {
    if let Some(annotations) = edit::object_at(pod, &["metadata", "annotations"]) {
        annotations.insert(
            ARCHITECTURES_ANNOTATION.to_string(),
            Value::String(platform::join(common, ",")),
        );
    }
}

/// No architecture both runs every image and is admitted by the Pod's own constraints (or the
/// cluster's nodes): reject, or accept unchanged with a warning (`onNoCommonArchitecture:
/// accept`). Takes the warnings gathered so far.
fn refuse(refusal: Refusal, warnings: &mut Vec<String>, settings: &Settings) -> Outcome {
    let mut warnings = std::mem::take(warnings);
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
            "{} is built for {}",
            message::named(image),
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
            .map(|(image, architectures)| message::describe_image(image, architectures, os))
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

/// The architectures on which every image runs (`common`) that are schedulable (all of them
/// when those are unknown); the error is the refusal when none is.
fn within_schedulable(
    common: &Architectures,
    schedulable: &Schedulable,
    subject: &str,
) -> Result<Architectures, Refusal> {
    if schedulable.architectures.is_empty() {
        return Ok(common.clone());
    }
    let runnable: Architectures = common
        .intersection(&schedulable.architectures)
        .cloned()
        .collect();
    if runnable.is_empty() {
        return Err(message::no_schedulable(common, schedulable, subject));
    }
    Ok(runnable)
}
