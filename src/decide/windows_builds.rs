//! Windows OS builds: the builds every image has, and those the cluster's Windows Nodes report.
//! A process-isolated Windows container runs only on a node of its own OS build: a Windows Pod
//! is kept to its images' builds under `pinWindowsBuild`, and with `readNodes` unless its
//! RuntimeClass runs it in Hyper-V isolation (`process_isolated`).

use std::ops::ControlFlow;

use crate::message::{self, Failure, Refusal};
use crate::platform::{self, Architectures};
use crate::read::cluster::ClusterReader;
use crate::read::constraint::Constraints;
use crate::read::node::Node;
use crate::read::pod::Pod;
use crate::read::resolve::ImagePlatforms;
use crate::settings::Settings;

use super::answer::{on_lookup_failure, Step};
use super::cluster_view::Schedulable;
use super::facts::Facts;

/// Step 7: the Windows OS builds to pin a Windows Pod to (`Facts::pin_builds`): those every image
/// has, cut to those the cluster's Windows Nodes report with `readNodes`; the error is the
/// refusal when they share none, no Node has one, or (before admission) the Pod's own
/// `constraints` admit none of them: pinned, it would admit no node at all.
pub(super) fn windows_build_pin(
    facts: &Facts,
    constraints: &Constraints,
    finally: &Architectures,
    schedulable: &Schedulable,
) -> Result<Option<Architectures>, Refusal> {
    let (subject, setting) = (facts.subject.name(), facts.builds_setting());
    let Some(builds) = windows_builds(&facts.known, finally, subject, setting)? else {
        return Ok(None);
    };
    let pin = match schedulable.nodes.as_deref() {
        None => builds,
        Some(nodes) => match windows_builds_of_nodes(nodes, finally, &builds, &schedulable.pools) {
            Builds::Covered => return Ok(None),
            Builds::Pin(found) => found,
            Builds::Absent {
                reported,
                unlabelled,
            } => {
                let nodes = (&reported, unlabelled);
                let setting = match facts.settings.pin_windows_build {
                    true => "settings pinWindowsBuild, readNodes",
                    false => setting,
                };
                return Err(message::absent_builds(
                    &builds, nodes, finally, subject, setting,
                ));
            }
        },
    };
    // After admission the pin is never written: `after_admission::judge` refuses where it would
    // add one.
    let admitted = constraints
        .admits_where(platform::WINDOWS_BUILD_LABEL, &pin)
        .among(finally);
    if admitted.is_empty() && !facts.subject.after_admission() {
        return Err(message::builds_not_admitted(&pin, subject, setting));
    }
    Ok(Some(pin))
}

/// The Windows OS builds (`major.minor.build`) that every known image has a build for on one of
/// `architectures`: `None` when no image says (an image with a Windows platform without
/// `os.version` runs on any build); the error is the rejection message when they share none.
pub(super) fn windows_builds(
    known: &[&ImagePlatforms],
    architectures: &Architectures,
    subject: &str,
    setting: &str,
) -> Result<Option<Architectures>, Refusal> {
    let mut shared: Option<Architectures> = None;
    let mut each = Vec::new();
    for image in known {
        let platforms: Vec<&platform::Platform> = image
            .platforms()
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
        each.push(message::built_for(image, &builds));
        shared = Some(match shared {
            None => builds,
            Some(so_far) => so_far.intersection(&builds).cloned().collect(),
        });
    }
    match shared {
        Some(builds) if builds.is_empty() => Err(message::no_common_build(subject, &each, setting)),
        other => Ok(other),
    }
}

/// What the cluster's Windows Nodes say about the OS builds a Windows Pod's images share.
#[derive(Debug, Clone, PartialEq)]
pub enum Builds {
    /// Every Windows Node of the Pod's architectures reports one of the images' builds (or there
    /// is none), and no pool of them may bring more: no build pin is needed.
    Covered,
    /// Some report another build (or none), or a pool of the Pod's architectures may bring any:
    /// pin to these, the images' builds that some Node reports (all of them, with such a pool).
    Pin(Architectures),
    /// Some report another build and none an image build: the builds they report, and how many
    /// report none.
    Absent {
        reported: Architectures,
        unlabelled: usize,
    },
}

/// The OS builds to pin a Windows Pod to, from the cluster's Windows Nodes (`nodes`, every one
/// read) of the architectures the Pod may finally run on (`architectures`) and the builds
/// every image has (`builds`). A Windows Node without a `node.kubernetes.io/windows-build`
/// label, or with a value that is no build, counts as one of another build: its build cannot be
/// told, so a Pod that needs a pin is kept off it, and it never confirms an image build. Nodes
/// whose architecture is missing are left out. The builds compared come from the images (which
/// are checked): no Node's value reaches a patch unless it equals one of them.
pub fn windows_builds_of_nodes(
    nodes: &[Node],
    architectures: &Architectures,
    builds: &Architectures,
    autoscaled: &Architectures,
) -> Builds {
    let of_pod: Vec<&Node> = nodes
        .iter()
        .filter(|node| {
            node.architecture
                .as_ref()
                .is_some_and(|arch| architectures.contains(arch))
        })
        .collect();
    let others: Vec<&&Node> = of_pod
        .iter()
        .filter(|node| {
            node.windows_build
                .as_ref()
                .is_none_or(|build| !builds.contains(build))
        })
        .collect();
    // A pool of the Pod's architectures may bring nodes of any build, whatever the Nodes report.
    if architectures.intersection(autoscaled).next().is_some() {
        return Builds::Pin(builds.clone());
    }
    if others.is_empty() {
        return Builds::Covered;
    }
    let found: Architectures = of_pod
        .iter()
        .filter_map(|node| node.windows_build.clone())
        .filter(|build| builds.contains(build))
        .collect();
    if !found.is_empty() {
        return Builds::Pin(found);
    }
    let build_value = |node: &&&Node| node.windows_build.as_deref().and_then(platform::os_build);
    Builds::Absent {
        reported: others.iter().filter_map(build_value).collect(),
        unlabelled: others
            .iter()
            .filter(|node| build_value(node).is_none())
            .count(),
    }
}

/// With `readNodes`, whether a Pod with Windows images of named OS builds runs them
/// process-isolated, on a node of their build only: unless its RuntimeClass's handler runs it in
/// Hyper-V isolation (`runhcs-wcow-hypervisor`), on any build. The RuntimeClass is read only for
/// such a Pod that names one; a failed read follows `onLookupFailure` (`ignoreImage`:
/// process-isolated).
pub(super) fn process_isolated(
    pod: &Pod,
    subject: &str,
    settings: &Settings,
    cluster: &mut ClusterReader,
    warnings: &mut Vec<String>,
) -> Step<bool> {
    let Some(class) = pod.runtime_class else {
        return ControlFlow::Continue(true);
    };
    match cluster.runtime_class_handler(class) {
        Ok(handler) => ControlFlow::Continue(handler.as_deref() != Some(HYPER_V_HANDLER)),
        Err(cause) => {
            let failure = Failure::runtime_class(class, subject, cause);
            on_lookup_failure(failure, settings, warnings)?;
            ControlFlow::Continue(true)
        }
    }
}

/// The RuntimeClass handler of containerd's Windows shim that runs a container in Hyper-V
/// isolation: a utility VM of the container's own OS build, on a node of any build.
pub const HYPER_V_HANDLER: &str = "runhcs-wcow-hypervisor";

/// Whether a known image has a Windows platform of a named OS build.
pub(super) fn windows_builds_named(known: &[&ImagePlatforms]) -> bool {
    known
        .iter()
        .flat_map(|image| image.platforms())
        .any(|p| p.runs_on("windows") && p.os_build.is_some())
}
