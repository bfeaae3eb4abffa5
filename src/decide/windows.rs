//! Windows OS builds (`pinWindowsBuild`): the builds every image has, and those the cluster's
//! Windows Nodes report.

use crate::message::{self, Refusal};
use crate::platform::{self, Architectures};
use crate::read::constraint::Constraints;
use crate::read::nodes::{self, Builds, Schedulable};
use crate::read::resolve::ImagePlatforms;

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
    let subject = facts.subject.name;
    let Some(builds) = windows_builds(&facts.known, finally, subject)? else {
        return Ok(None);
    };
    let pin = match schedulable.nodes.as_deref() {
        None => builds,
        Some(nodes) => match nodes::windows_builds(nodes, finally, &builds, &schedulable.pools) {
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
    // After admission the pin is never written: `after::judge` refuses where it would add one.
    let admitted = constraints
        .admits_where(platform::WINDOWS_BUILD_LABEL, &pin)
        .among(finally);
    if admitted.is_empty() && !facts.subject.after_admission {
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
