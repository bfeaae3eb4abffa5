//! Where the Pod may run on one OS whose nodes have `Schedulable`'s architectures: the
//! architectures its images run on there, those its own constraints admit, and the Windows builds
//! to pin; or why nowhere.

use crate::message::{self, Refusal};
use crate::platform::{self, Architectures};
use crate::read::constraint::Constraints;

use super::after_admission;
use super::cluster_view::Schedulable;
use super::facts::{Facts, Placement};
use super::windows_builds::windows_build_pin;

/// The architectures the images run on among those nodes may have (`schedulable`'s; none when
/// they share none), and those the Pod must be kept off: the nodes' when they are known; when
/// they are unknown, every architecture the images run on, and where the images run anywhere,
/// every architecture a node can report (so nothing is pinned). A Pod being created is kept off
/// the architectures its images do not run on of NodePools left out by their `minValues` too:
/// unpinned, it may admit enough of them to be served there. After admission the nodes it may be
/// on are those where the images it already runs run too (`Facts::running`), where known.
pub fn cluster_common(
    facts: &Facts,
    os: &str,
    image_common: &Architectures,
    schedulable: &Schedulable,
) -> (Architectures, Architectures) {
    let mut universe = if facts.unconstrained && schedulable.unknown() {
        platform::every_architecture()
    } else {
        schedulable.architectures.clone()
    };
    // After admission the Pod is where the images it already runs run.
    let running = facts
        .running
        .as_ref()
        .and_then(|running| running.architectures(os));
    if let Some(running) = running.filter(|running| !running.is_empty()) {
        let within: Architectures = platform::or_every(&universe)
            .intersection(running)
            .cloned()
            .collect();
        if !within.is_empty() {
            universe = within;
        }
    }
    let common = match (facts.unconstrained, schedulable.unknown()) {
        (true, _) => universe.clone(),
        (false, true) => image_common.clone(),
        (false, false) => image_common.intersection(&universe).cloned().collect(),
    };
    if !facts.subject.after_admission() {
        universe.extend(
            schedulable
                .min_values_unmet
                .difference(image_common)
                .cloned(),
        );
    }
    (common, universe)
}

/// The Pod placed on the OS of `constraints`, whose nodes have `schedulable`'s architectures:
/// where it may run there, or the refusal (and whether it came after the Pod's own constraints
/// were found to admit some architecture: the Windows builds).
pub fn place<'a>(
    facts: &Facts,
    constraints: &'a Constraints,
    image_common: &Architectures,
    schedulable: &Schedulable,
) -> Result<Placement<'a>, (Refusal, bool)> {
    let subject = facts.subject.name();
    let (common, universe) = cluster_common(facts, &constraints.os, image_common, schedulable);
    let finally = constraints.admits().among(&common);
    if common.is_empty() || finally.is_empty() {
        let refusal = match (facts.subject.after_admission(), common.is_empty()) {
            (true, _) => after_admission::nowhere(facts, constraints, &universe, schedulable),
            (false, true) => message::no_schedulable(
                image_common,
                &schedulable.architectures,
                schedulable.from_nodes.then_some(schedulable.note.as_str()),
                subject,
            ),
            (false, false) => message::explain(
                constraints,
                subject,
                image_common,
                &common,
                &schedulable.note,
            ),
        };
        return Err((refusal, false));
    }
    let builds = if facts.pin_builds && constraints.os == "windows" {
        windows_build_pin(facts, constraints, &finally, schedulable).map_err(|r| (r, true))?
    } else {
        None
    };
    Ok(Placement {
        constraints,
        common,
        finally,
        universe,
        builds,
    })
}
