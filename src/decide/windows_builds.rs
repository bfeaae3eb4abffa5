//! Windows OS builds (`pinWindowsBuild`): the builds every image has, and those the cluster's
//! Windows Nodes report.

use crate::message::{self, Refusal};
use crate::platform::{self, Architectures};
use crate::read::constraint::Constraints;
use crate::read::node::Node;
use crate::read::resolve::ImagePlatforms;

use super::cluster_view::Schedulable;
use super::facts::Facts;

/// Step 7: the Windows OS builds to pin a Windows Pod to (`pinWindowsBuild`): those every image
/// has, cut to those the cluster's Windows Nodes report with `readNodes`; the error is the
/// refusal when they share none, no Node has one, or (before admission) the Pod's own
/// `constraints` admit none of them: pinned, it would admit no node at all.
pub(super) fn windows_build_pin(
    facts: &Facts,
    constraints: &Constraints,
    finally: &Architectures,
    schedulable: &Schedulable,
) -> Result<Option<Architectures>, Refusal> {
    let subject = facts.subject.name();
    let Some(builds) = windows_builds(&facts.known, finally, subject)? else {
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
                return Err(message::absent_builds(
                    &builds, &reported, unlabelled, finally, subject,
                ))
            }
        },
    };
    // After admission the pin is never written: `after_admission::judge` refuses where it would
    // add one.
    let admitted = constraints
        .admits_where(platform::WINDOWS_BUILD_LABEL, &pin)
        .among(finally);
    if admitted.is_empty() && !facts.subject.after_admission() {
        return Err(message::builds_not_admitted(&pin, subject));
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
        Some(builds) if builds.is_empty() => Err(message::no_common_build(subject, &each)),
        other => Ok(other),
    }
}

/// What the cluster's Windows Nodes say about the OS builds a Windows Pod's images share.
#[derive(Debug, Clone, PartialEq)]
pub enum Builds {
    /// Every Windows Node of the Pod's architectures reports one of the images' builds (or there
    /// is none): no build pin is needed.
    Covered,
    /// Some report another build (or none): pin to these, the images' builds that some Node
    /// reports (all of them when an autoscaled pool of the Pod's architectures may bring more).
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
    if others.is_empty() {
        return Builds::Covered;
    }
    if architectures.intersection(autoscaled).next().is_some() {
        return Builds::Pin(builds.clone());
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
