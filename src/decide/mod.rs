//! The decision on one Pod or Pod template, in the steps of docs/design.md: from what `read`
//! read (the Pod, its images' platforms, the cluster through one `ClusterReader`) to an
//! `Answer`: a plan for `edit` to write, or a refusal, with the warnings. Plain Rust over plain
//! data: nothing here holds the Pod's JSON, and nothing is edited. Each step has a module:
//! `images` (what they run on), `os` (the other OSes), `placement` and `pins` (where the Pod
//! may run on one OS, and the plan that keeps it there), `settle` (one view of the cluster),
//! `node_aware` with `node_reads` and `node_pools` (the views with `readNodes`), `unlabelled`,
//! `bound_pod`, `after_admission`, `windows_builds`.

mod after_admission;
pub mod answer;
mod bound_pod;
mod cluster_view;
mod facts;
mod images;
mod node_aware;
mod node_pools;
mod node_reads;
mod os;
mod pins;
mod placement;
pub mod plan;
mod running;
mod settle;
pub mod subject;
mod unlabelled;
mod windows_builds;

use std::ops::ControlFlow;

use crate::host::cluster::Cluster;
use crate::host::registry::Registry;
use crate::message::{self, Refusal};
use crate::platform::{self, Architectures};
use crate::read::cluster::ClusterReader;
use crate::read::pod::{Pod, PodImage};
use crate::read::resolve::{self, ImagePlatforms};
use crate::read::webassembly;
use crate::settings::Settings;

pub use self::answer::Answer;
pub use self::plan::Plan;
pub use self::subject::Subject;

use self::answer::{refuse, Step};
use self::cluster_view::Schedulable;
use self::facts::{Facts, OtherOs};
use self::images::{constraining, image_architectures, known_images};
use self::os::{admitted_on_other_os, other_operating_systems};
use self::running::Running;
use self::windows_builds::{process_isolated, windows_builds_named};

/// The answer for a Pod being created, or a workload's Pod template. The cluster is read only
/// with `readNodes`.
pub fn create(
    pod: &Pod,
    subject: Subject,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Answer {
    let mut cluster = ClusterReader::new(cluster);
    let images = match scheduled_images(pod, subject, settings, registry, &mut cluster) {
        ControlFlow::Continue(images) => images,
        ControlFlow::Break(answer) => return answer,
    };
    let os_refusal = match no_node_of_os(pod, subject, settings) {
        Some(refusal) => return refuse_os(refusal, subject, settings, Vec::new()),
        None => None,
    };
    let resolved = resolve::resolve_images(&images, settings, registry);
    decide(
        pod,
        subject,
        settings,
        &resolved,
        os_refusal,
        None,
        &mut cluster,
    )
}

/// After admission: a Pod UPDATE (an image swapped in, `kubectl debug`'s ephemeral container
/// through `pods/ephemeralcontainers`). Only the images the old Pod did not run (`new`) are
/// looked up, and judged against where the Pod is or may go: the Node it is bound to, read by
/// name with `readNodes`, else the platforms its own constraints admit in the settings' cluster
/// and its other images run on (a bound Pod's: those the kubelet has shown to run, `ran`). No
/// new image: accepted unchanged, without a host call. A Pod with scheduling gates is pinned
/// as on CREATE where the pin only narrows its node affinity (what the API server allows for
/// it); no other UPDATE is edited.
pub fn update(
    pod: &Pod,
    new: &[PodImage],
    ran: &[PodImage],
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Answer {
    if new.is_empty() || !pod.has_spec {
        return Answer::Unchanged(Vec::new());
    }
    let mut cluster = ClusterReader::new(cluster);
    let after = Subject::AfterAdmission;
    if let Some(node) = pod.bound_node.filter(|_| settings.read_nodes) {
        return bound_pod::judge(new, node, pod, after, settings, registry, &mut cluster);
    }
    let os_refusal = no_node_of_os(pod, after, settings);
    let resolved = resolve::resolve_images(new, settings, registry);
    if pod.gated && pod.bound_node.is_none() {
        let gated = Subject::GatedPin;
        let refusal = no_node_of_os(pod, gated, settings);
        let pinned = decide(pod, gated, settings, &resolved, refusal, None, &mut cluster);
        match &pinned {
            Answer::Pinned(plan, _) if !narrows_only(pod, plan) => {}
            // Where the pin would add terms (one per OS), which the API server refuses: judged.
            _ => return pinned,
        }
    }
    let running = running::running(pod, new, ran, &resolved, settings, registry);
    decide(
        pod,
        after,
        settings,
        &resolved,
        os_refusal,
        running,
        &mut cluster,
    )
}

/// Whether the plan only narrows the Pod's required node affinity the way the API server lets
/// a Pod with scheduling gates change it: set where it had no terms, else the same terms, each
/// keeping its requirements in order and adding more after them.
fn narrows_only(pod: &Pod, plan: &Plan) -> bool {
    let own = pod.terms.as_ref().map_or(0, Vec::len);
    own == 0 || plan.terms.as_ref().is_none_or(|terms| terms.len() == own)
}

/// Step 1: the Pod's images when the scheduler will place it. A Pod bound to a node (or a
/// DaemonSet's, which targets one) is checked against that node when Nodes are read (the
/// answer), and left alone otherwise; so is a Pod without images.
fn scheduled_images<'a>(
    pod: &Pod<'a>,
    subject: Subject,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut ClusterReader,
) -> Step<Vec<PodImage<'a>>> {
    let unchanged = ControlFlow::Break(Answer::Unchanged(Vec::new()));
    if !pod.has_spec {
        return unchanged;
    }
    let bound = match pod.skip {
        None => None,
        Some(_) => match pod.bound_node.filter(|_| settings.read_nodes) {
            Some(node) => Some(node),
            None => return unchanged,
        },
    };
    if pod.images.is_empty() {
        return unchanged;
    }
    if let Some(node) = bound {
        let judged = bound_pod::judge(&pod.images, node, pod, subject, settings, registry, cluster);
        return ControlFlow::Break(judged);
    }
    ControlFlow::Continue(pod.images.clone())
}

/// Steps 3 to 7 for images resolved: what they run on (`facts`), then where the cluster lets the
/// Pod run (`in_cluster`). `os_refusal`: why the cluster has no node of the Pod's OS, if it
/// has none (settled here only where a new image constrains the platform, after admission).
fn decide(
    pod: &Pod,
    subject: Subject,
    settings: &Settings,
    resolved: &[ImagePlatforms],
    os_refusal: Option<Refusal>,
    running: Option<Running>,
    cluster: &mut ClusterReader,
) -> Answer {
    let mut warnings = Vec::new();
    let mut facts = match facts(pod, subject, settings, resolved, os_refusal, &mut warnings) {
        ControlFlow::Continue(facts) => facts,
        ControlFlow::Break(answer) => return answer,
    };
    facts.running = running;
    if settings.read_nodes && windows_builds_named(&facts.known) {
        match process_isolated(pod, subject.name(), settings, cluster, &mut warnings) {
            ControlFlow::Continue(isolated) => facts.pin_builds = isolated,
            ControlFlow::Break(answer) => return answer,
        }
    }
    in_cluster(&facts, cluster, warnings)
}

/// Steps 3 and 4: what every image runs on, and the other OSes the Pod may run on.
fn facts<'a>(
    pod: &'a Pod<'a>,
    subject: Subject,
    settings: &'a Settings,
    resolved: &'a [ImagePlatforms],
    os_refusal: Option<Refusal>,
    warnings: &mut Vec<String>,
) -> Step<Facts<'a>> {
    let (looked_up, failed) = known_images(resolved, subject.name(), settings, warnings)?;
    let looked_up_count = looked_up.len();
    let known = constraining(looked_up, webassembly::runtime(pod.runtime_class, settings));
    let webassembly = known.len() < looked_up_count;
    let fallback = fallback(known.is_empty(), &failed, webassembly, subject, settings);
    let unconstrained = fallback.is_none() && known.is_empty();
    settled_early(unconstrained, subject, os_refusal, settings, warnings)?;
    let constraints = &pod.constraints;
    // Images built for several OSes, or that run anywhere: the other OSes a Pod that states none
    // may run on (for images that run anywhere, decided only where its own OS refuses it, and
    // only when every image was looked up: an image that failed may run on its own OS alone).
    let others = match fallback.is_none() && (!unconstrained || failed.is_empty()) {
        true => other_operating_systems(pod, &constraints.os, &known, subject.name()),
        false => Vec::new(),
    };
    let (image_common, own_os_refusal) = match (&fallback, unconstrained) {
        (Some(_), _) => (
            settings.fallback_architectures.iter().cloned().collect(),
            None,
        ),
        (None, true) => (platform::every_architecture(), None),
        (None, false) => match image_architectures(&known, &constraints.os, subject.name()) {
            Ok(common) => (common, None),
            Err(refusal) if others.is_empty() => {
                return ControlFlow::Break(refuse(refusal, warnings, settings))
            }
            // Only the other OSes run every image: decided there (`settle`).
            Err(refusal) => (Architectures::new(), Some(refusal)),
        },
    };
    ControlFlow::Continue(Facts {
        pod,
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
        running: None,
        pin_builds: settings.pin_windows_build,
    })
}

/// What settles the answer before the cluster is looked at, the images known: new images that
/// constrain no platform (WebAssembly ones, or none looked up under `ignoreImage`) run wherever
/// the Pod is after admission, even a gated Pod whose own constraints admit no node (the UPDATE
/// did not make them so): nothing to judge; and the refusal of a Pod of an OS the cluster has no
/// node of.
fn settled_early(
    unconstrained: bool,
    subject: Subject,
    os_refusal: Option<Refusal>,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Step<()> {
    if unconstrained && matches!(subject, Subject::AfterAdmission | Subject::GatedPin) {
        return ControlFlow::Break(Answer::Unchanged(std::mem::take(warnings)));
    }
    match os_refusal {
        Some(refusal) => {
            let warnings = std::mem::take(warnings);
            ControlFlow::Break(refuse_os(refusal, subject, settings, warnings))
        }
        None => ControlFlow::Continue(()),
    }
}

/// No image that runs on a CPU architecture could be looked up (WebAssembly ones say nothing of
/// it): `fallbackArchitectures` stand in for those that `failed`, and the warning that says so.
/// Never after admission: a guess pins nothing there.
fn fallback(
    none_known: bool,
    failed: &[String],
    webassembly: bool,
    subject: Subject,
    settings: &Settings,
) -> Option<String> {
    (none_known
        && !failed.is_empty()
        && !settings.fallback_architectures.is_empty()
        && !subject.after_admission())
    .then(|| message::fallback(subject.name(), failed, webassembly, settings))
}

/// Steps 6 and 7: the architectures the cluster has; where the Pod may finally run; the plan.
/// With `readNodes`, the cluster's Nodes and pools (`node_aware`), and the Nodes without an
/// architecture label where the plan may add terms; without, the settings.
fn in_cluster(facts: &Facts, cluster: &mut ClusterReader, warnings: Vec<String>) -> Answer {
    let (settings, subject) = (facts.settings, facts.subject);
    if settings.read_nodes {
        let answer = node_aware::answer(facts, cluster, warnings);
        return match subject.adds_terms() {
            true => unlabelled::keep_unlabelled(facts, cluster, answer),
            false => answer,
        };
    }
    let mut schedulable = Schedulable::configured(settings.schedulable());
    let os = facts.os();
    let listed = |other: &str| {
        settings
            .cluster_operating_systems
            .iter()
            .any(|l| l == other)
    };
    // The nodes of the other OSes listed that the Pod admits have the architectures the
    // settings declare.
    schedulable.other_os = match subject.counts_admitted_other_os() {
        false => settings.other_operating_system(os),
        true => admitted_on_other_os(facts.pod, os, |other| {
            Ok(listed(other).then(|| settings.schedulable()))
        })
        .unwrap_or(true),
    };
    let others: Vec<(&OtherOs, Schedulable)> = facts
        .others
        .iter()
        .filter(|other| listed(&other.constraints.os))
        .map(|other| (other, schedulable.clone()))
        .collect();
    settle::settle(facts, &schedulable, &others, warnings)
}

/// Step 2's refusal of a Pod whose OS the cluster has no node of: an OS no node runs, or,
/// without `readNodes`, one `clusterOperatingSystems` does not list (docs/windows.md; not after
/// admission).
fn no_node_of_os(pod: &Pod, subject: Subject, settings: &Settings) -> Option<Refusal> {
    let os = pod.constraints.os.as_str();
    if !platform::NODE_OPERATING_SYSTEMS.contains(&os) {
        return Some(message::no_node_os(os, subject.name()));
    }
    let listed = &settings.cluster_operating_systems;
    let unlisted = !listed.is_empty() && !listed.iter().any(|l| l == os);
    (unlisted && !settings.read_nodes && !subject.after_admission())
        .then(|| message::os_not_in_cluster(os, listed, subject.name()))
}

/// The answer to `no_node_of_os`'s refusal. A DaemonSet creates no Pod where the cluster has no
/// node of its OS: warned, not refused (charts ship a Linux and a Windows one).
fn refuse_os(
    refusal: Refusal,
    subject: Subject,
    settings: &Settings,
    mut warnings: Vec<String>,
) -> Answer {
    if subject.one_per_node() {
        warnings.push(message::daemon_set_os_not_in_cluster(&refusal));
        return Answer::Unchanged(warnings);
    }
    refuse(refusal, &mut warnings, settings)
}
