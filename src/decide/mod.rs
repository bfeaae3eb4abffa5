//! The decision on one Pod or Pod template, the same for both, in the steps of docs/design.md:
//! this file is the pipeline (`steps`) and its outcomes; each step's decisions have a module of
//! their own (`images`, `os`, `settle`, `cluster`, `unlabelled`, `bound`, `windows`,
//! `outcome`), and `workload` finds a workload's Pod template. It reads through `read` (the Pod,
//! its images' platforms, the cluster through one `ClusterCache`), words its refusals with
//! `message`, and has `edit` write the pins it settled on. Plain Rust over plain data: `policy`
//! routes requests here.

mod after;
mod bound;
mod cluster;
mod facts;
mod images;
mod os;
mod outcome;
mod settle;
mod unlabelled;
mod windows;
pub mod workload;

use serde_json::Value;

use crate::host::cluster::Cluster;
use crate::host::registry::Registry;
use crate::message::{self, Refusal};
use crate::platform::{self, Architectures};
use crate::read::cache::{ClusterCache, RegistryCache};
use crate::read::constraint::Constraints;
use crate::read::nodes::Schedulable;
use crate::read::pod::{self, PodImage};
use crate::read::resolve::{self};
use crate::read::webassembly;
use crate::settings::Settings;

pub use crate::edit::pin::ARCHITECTURES_ANNOTATION;
pub use crate::message::PREFIX;
pub use crate::read::pod::PREFERRED_ANNOTATION;

use self::bound::decide_bound;
use self::cluster::settle_from_cluster;
use self::facts::{Facts, OtherOs};
use self::images::{constraining, image_architectures, known_images};
use self::os::{admitted_on_other_os, other_operating_systems};
use self::outcome::refuse;
pub use self::outcome::{Decision, Outcome, Subject, Verdict};
use self::settle::settle;
use self::unlabelled::keep_nodes_without_architecture;

/// Applies the policy to a Pod, or to a Pod template (an object with `metadata` and `spec`),
/// editing it in place. The cluster is read only with `readNodes`.
pub fn decide_pod(
    pod: &mut Value,
    subject: Subject,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Outcome {
    let mut cache = ClusterCache::new(cluster);
    steps(pod, subject, settings, registry, &mut cache, None).unwrap_or_else(|outcome| outcome)
}

/// After admission: a Pod UPDATE (an image swapped in, `kubectl debug`'s ephemeral container
/// through `pods/ephemeralcontainers`). Only the images the old Pod did not run are looked up,
/// and judged against where the Pod is or may go: the Node it is bound to, read by name with
/// `readNodes`, else the platforms its own constraints admit in the settings' cluster. No new
/// image: accepted unchanged, without a host call. A Pod with scheduling gates is pinned as on
/// CREATE where the pin only narrows its node affinity (what the API server allows for it); no
/// other UPDATE is edited.
pub fn decide_update(
    pod: &mut Value,
    old: &Value,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Outcome {
    let new: Vec<String> = pod::new_images(pod, old)
        .into_iter()
        .map(|image| image.reference.to_string())
        .collect();
    if new.is_empty() || !pod["spec"].is_object() {
        return Outcome::Unchanged(Vec::new());
    }
    let images: Vec<PodImage> = new
        .iter()
        .map(|reference| PodImage {
            reference,
            volume: None,
        })
        .collect();
    let mut cache = ClusterCache::new(cluster);
    let mut subject = Subject {
        name: "Pod",
        daemon_set: false,
        one_per_node: false,
        after_admission: true,
        adds_terms: false,
    };
    if let Some(node) = pod::bound_node(pod).filter(|_| settings.read_nodes) {
        return decide_bound(&images, node, pod, subject, settings, registry, &mut cache);
    }
    // Each new image looked up once: a gated Pod's pin and, where the API server would not take
    // it, the judgement read the same answers.
    let mut registry = RegistryCache::new(registry);
    let registry = &mut registry;
    if pod::scheduling_gated(pod) && pod::bound_node(pod).is_none() {
        let mut pinned = pod.clone();
        // Karpenter reads it only once its gates are removed: its NodePools count as on CREATE.
        let gated = Subject {
            after_admission: false,
            ..subject
        };
        let outcome = steps(
            &mut pinned,
            gated,
            settings,
            registry,
            &mut cache,
            Some(&images),
        )
        .unwrap_or_else(|outcome| outcome);
        if !matches!(outcome, Outcome::Changed(_)) || pod::narrows_only(pod, &pinned) {
            *pod = pinned;
            return outcome;
        }
        // The pin would add terms (one per OS), which the API server refuses: judged instead.
        subject.after_admission = true;
    }
    steps(pod, subject, settings, registry, &mut cache, Some(&images))
        .unwrap_or_else(|outcome| outcome)
}

/// The steps of docs/design.md ("What it does, step by step"), each a function that either
/// gives what the next one needs or settles the outcome (the error).
fn steps(
    pod: &mut Value,
    subject: Subject,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut ClusterCache,
    judged: Option<&[PodImage]>,
) -> Result<Outcome, Outcome> {
    // 1. Skip what the policy does not place; check a bound Pod against its node. (After
    // admission, the images judged are the new ones, wherever the Pod is.)
    let placed;
    let images = match judged {
        Some(images) => images,
        None => {
            placed = placed_by_scheduler(pod, subject, settings, registry, cluster)?;
            placed.as_slice()
        }
    };
    // 2, 5. The OS, and every constraint on the Pod's nodes. A Pod of an OS the cluster has no
    // node of is refused before any lookup on CREATE (no lookup can change the answer); on an
    // UPDATE, only where a new image constrains its platform (below).
    let constraints = Constraints::read_pod(pod, &settings.default_operating_system);
    let update = judged.is_some();
    let mut os_refusal = no_node_of_os(&constraints.os, subject, settings);
    if !update {
        if let Some(refusal) = os_refusal.take() {
            return Err(refuse_os(refusal, subject, settings, &mut Vec::new()));
        }
    }
    // 3, 4. What every image runs on.
    let mut warnings = Vec::new();
    let resolved = resolve::resolve_images(images, settings, registry);
    let (looked_up, failed) = known_images(&resolved, subject.name, settings, &mut warnings)?;
    let looked_up_count = looked_up.len();
    let known = constraining(looked_up, webassembly::runtime(pod, settings));
    let webassembly = known.len() < looked_up_count;
    // No image that runs on a CPU architecture could be looked up (WebAssembly ones say
    // nothing of it): `fallbackArchitectures` stand in for those that failed.
    // (Never after admission: a guess pins nothing there.)
    let fallback = (known.is_empty()
        && !failed.is_empty()
        && !settings.fallback_architectures.is_empty()
        && !subject.after_admission)
        .then(|| message::fallback(subject.name, &failed, webassembly, settings));
    let unconstrained = fallback.is_none() && known.is_empty();
    if unconstrained && (subject.after_admission || update) {
        // New images that constrain no platform (WebAssembly ones, or none looked up under
        // `ignoreImage`) run wherever the Pod is: nothing to judge, even on a gated Pod whose
        // own constraints admit no node (the UPDATE did not make them so).
        return Err(Outcome::Unchanged(warnings));
    }
    if let Some(refusal) = os_refusal {
        return Err(refuse_os(refusal, subject, settings, &mut warnings));
    }
    // Images built for several OSes, or that run anywhere: the other OSes a Pod that states none
    // may run on (for images that run anywhere, decided only where its own OS refuses it, and
    // only when every image was looked up: an image that failed may run on its own OS alone).
    let others = match fallback.is_none() && (!unconstrained || failed.is_empty()) {
        true => other_operating_systems(pod, &constraints.os, &known, subject.name),
        false => Vec::new(),
    };
    let mut own_os_refusal = None;
    let image_common = if fallback.is_some() {
        settings.fallback_architectures.iter().cloned().collect()
    } else if unconstrained {
        platform::every_architecture()
    } else {
        match image_architectures(&known, &constraints.os, subject.name) {
            Ok(common) => common,
            Err(refusal) if others.is_empty() => {
                return Err(refuse(refusal, &mut warnings, settings))
            }
            // Only the other OSes run every image: decided there (`settle`).
            Err(refusal) => {
                own_os_refusal = Some(refusal);
                Architectures::new()
            }
        }
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
        others,
        own_os_refusal,
        spec_os: pod["spec"]["os"]["name"]
            .as_str()
            .is_some_and(|os| !os.is_empty()),
    };
    // 6, 7. The architectures the cluster has; where the Pod may finally run; the edits.
    if !settings.read_nodes {
        let mut schedulable = Schedulable::configured(settings.schedulable());
        let os = facts.constraints.os.as_str();
        // The nodes of the other OSes listed that the Pod admits have the architectures the
        // settings declare.
        schedulable.other_os = match subject.counts_admitted_other_os() {
            false => settings.other_operating_system(os),
            true => admitted_on_other_os(pod, os, |other| {
                let listed = settings
                    .cluster_operating_systems
                    .iter()
                    .any(|l| l == other);
                Ok(listed.then(|| settings.schedulable()))
            })
            .unwrap_or(true),
        };
        let others: Vec<(&OtherOs, Schedulable)> = facts
            .others
            .iter()
            .filter(|other| {
                settings
                    .cluster_operating_systems
                    .contains(&other.constraints.os)
            })
            .map(|other| (other, schedulable.clone()))
            .collect();
        return Ok(settle(pod, &facts, &schedulable, &others, warnings));
    }
    if subject.after_admission || !subject.adds_terms {
        return settle_from_cluster(pod, &facts, cluster, warnings);
    }
    let original = pod.clone();
    let outcome = settle_from_cluster(pod, &facts, cluster, warnings);
    keep_nodes_without_architecture(&original, pod, &facts, cluster, outcome)
}

/// Step 2's refusal of a Pod whose OS the cluster has no node of: an OS no node runs, or,
/// without `readNodes`, one `clusterOperatingSystems` does not list (docs/windows.md; not after
/// admission).
fn no_node_of_os(os: &str, subject: Subject, settings: &Settings) -> Option<Refusal> {
    if !platform::NODE_OPERATING_SYSTEMS.contains(&os) {
        return Some(message::no_node_os(os, subject.name));
    }
    let listed = &settings.cluster_operating_systems;
    let unlisted = !listed.is_empty() && !listed.iter().any(|l| l == os);
    (unlisted && !settings.read_nodes && !subject.after_admission)
        .then(|| message::os_not_in_cluster(os, listed, subject.name))
}

/// The outcome of `no_node_of_os`'s refusal. A DaemonSet creates no Pod where the cluster has no
/// node of its OS: warned, not refused (charts ship a Linux and a Windows one).
fn refuse_os(
    refusal: Refusal,
    subject: Subject,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Outcome {
    if subject.one_per_node {
        warnings.push(message::daemon_set_os_not_in_cluster(&refusal));
        return Outcome::Unchanged(std::mem::take(warnings));
    }
    refuse(refusal, warnings, settings)
}

/// Step 1: the Pod's images when the scheduler will place it. A Pod bound to a node (or a
/// DaemonSet's, which targets one) is checked against that node when Nodes are read (the
/// outcome), and left alone otherwise; so is a Pod without images.
fn placed_by_scheduler<'a>(
    pod: &'a Value,
    subject: Subject,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut ClusterCache,
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
