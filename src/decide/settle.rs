//! Steps 6 and 7 of docs/design.md for one view of the cluster (`Schedulable`): where the Pod
//! may finally run, per OS (`placement`), or the refusal; then the plan that pins it there
//! (`pins`), the DaemonSet warnings and the annotation. Nothing is edited here: the answer
//! carries the plan.

use crate::message;
use crate::platform;
use crate::read::pod::PREFERRED_ANNOTATION;

use super::after_admission;
use super::answer::Answer;
use super::cluster_view::Schedulable;
use super::facts::{Facts, OtherOs, Placement};
use super::os::admits_other_os;
use super::pins::{self, os_pins, Changed, OsPins};
use super::placement::{cluster_common, place};

/// The answer for a cluster whose architectures are `schedulable`'s: where the Pod may finally
/// run (or why nowhere), and the fewest edits. `others`: the other OSes the Pod may run on that
/// the cluster has nodes of (`Facts::others`), with their nodes' architectures; the Pod keeps
/// every OS that runs it, and is refused (for its own OS's reason) only when none does.
pub fn settle(
    facts: &Facts,
    schedulable: &Schedulable,
    others: &[(&OtherOs, Schedulable)],
    mut warnings: Vec<String>,
) -> Answer {
    let first = match &facts.own_os_refusal {
        Some(refusal) => Err((refusal.clone(), false)),
        None => place(facts, facts.constraints, &facts.image_common, schedulable),
    };
    let others = match facts.others_decide(|| first.is_err()) {
        true => others,
        false => &[],
    };
    let (mut placements, mut refused) = (Vec::new(), Vec::new());
    for (other, schedulable) in others {
        match place(facts, &other.constraints, &other.image_common, schedulable) {
            Ok(placement) => placements.push(placement),
            Err(refusal) => refused.push(refusal),
        }
    }
    // Where no image runs on the Pod's own OS, the reason another OS it may run on refused it
    // after its constraints admitted some architecture there (a Windows build) says more.
    let first = match (first, refused.into_iter().find(|(_, late)| *late)) {
        (Err(_), Some(late)) if facts.own_os_refusal.is_some() => Err(late),
        (first, _) => first,
    };
    match first {
        Ok(first) => placements.insert(0, first),
        Err((refusal, late)) if placements.is_empty() => {
            if late {
                warn_bad_preferred_annotation(facts, &mut warnings);
            }
            return facts.refuse(refusal, warnings);
        }
        Err(_) => {}
    }
    warn_bad_preferred_annotation(facts, &mut warnings);
    // In a cluster of several OSes, the Pod keeps to nodes of the OSes that run it. Images that
    // run anywhere are kept to the OS its spec.os names (the kubelet's).
    let pin_os =
        (schedulable.other_os || !others.is_empty()) && (!facts.unconstrained || facts.pod.spec_os);
    let pins: Vec<OsPins> = placements
        .iter()
        .map(|placement| os_pins(facts, placement, pin_os))
        .collect();
    if facts.subject.after_admission() {
        return after_admission::judge(facts, &placements, &pins, schedulable, warnings);
    }
    let (mut plan, changed) = pins::plan(facts, &placements, &pins);
    if facts.subject.warns_daemon_set() {
        warn_daemon_set(facts, schedulable, others, pin_os, &mut warnings);
    }
    warnings.extend(facts.fallback.clone());
    plan.annotation = recorded(facts, &placements, &changed);
    match changed.architectures || changed.os {
        true => Answer::Pinned(plan, warnings),
        false => Answer::Unchanged(warnings),
    }
}

/// What the annotation records: the architectures pinned; none for images that constrain none,
/// nor for a Pod pinned only to its OS (whose architectures the cluster's Nodes never cut). A
/// Pod that keeps several OSes records the platforms of those whose architectures were pinned
/// (`windows/amd64`).
fn recorded(facts: &Facts, placements: &[Placement], changed: &Changed) -> Option<String> {
    if facts.unconstrained || !facts.pod.writable.annotations {
        return None;
    }
    match placements {
        [only] => changed
            .architectures
            .then(|| platform::join(&only.common, ",")),
        _ => Some(
            placements
                .iter()
                .zip(&changed.pinned)
                .filter(|(_, pinned)| **pinned)
                .flat_map(|(placement, _)| {
                    let os = &placement.constraints.os;
                    placement
                        .common
                        .iter()
                        .map(move |arch| format!("{os}/{arch}"))
                })
                .collect::<Vec<_>>()
                .join(","),
        )
        .filter(|platforms| !platforms.is_empty()),
    }
}

/// A DaemonSet's template under `validate`: the nodes of each OS its images run on where they
/// do not (named by OS when several), and the nodes of another OS it admits.
fn warn_daemon_set(
    facts: &Facts,
    schedulable: &Schedulable,
    others: &[(&OtherOs, Schedulable)],
    pin_os: bool,
    warnings: &mut Vec<String>,
) {
    let candidates = std::iter::once((facts.constraints, &facts.image_common, schedulable)).chain(
        others
            .iter()
            .map(|(other, nodes)| (&other.constraints, &other.image_common, nodes)),
    );
    for (constraints, image_common, schedulable) in candidates {
        let (common, universe) = cluster_common(facts, &constraints.os, image_common, schedulable);
        let os = (!others.is_empty()).then_some(constraints.os.as_str());
        warnings.extend(message::daemon_set(
            constraints.admits(),
            &common,
            &universe,
            os,
        ));
    }
    if pin_os && others.is_empty() && admits_other_os(facts.pod, facts.os(), None) {
        warnings.push(message::daemon_set_other_os(facts.os()));
    }
}

/// The preferred-architecture annotation, when it names no architecture: a warning.
fn warn_bad_preferred_annotation(facts: &Facts, warnings: &mut Vec<String>) {
    if let Some(value) = facts.pod.preferred_annotation {
        if !platform::KNOWN_ARCHITECTURES.contains(&value) {
            warnings.push(message::bad_preferred_annotation(
                PREFERRED_ANNOTATION,
                value,
            ));
        }
    }
}
