//! After admission: a Pod UPDATE judged where its node affinity can no longer change. The
//! placements `settle` made for its new images say what a pin would add; where it would add
//! anything (an architecture, the OS, a Windows build), the Pod may be on a node a new image does
//! not run on, and is refused, naming the platforms and each new image with its containers.
//! Nothing is edited. Where it may be is bounded by the images it already runs, where they were
//! looked up (`running`).

use crate::message::{self, Refusal};
use crate::platform::{self, Architectures};
use crate::read::constraint::Constraints;

use super::answer::Answer;
use super::cluster_view::Schedulable;
use super::facts::{Facts, Placement};
use super::pins::OsPins;

/// The answer for a Pod after admission, from the pins its new images would need: accepted
/// unchanged where they need none, else refused (`onNoCommonArchitecture` applies).
pub fn judge(
    facts: &Facts,
    plans: &[Placement],
    pins: &[OsPins],
    schedulable: &Schedulable,
    warnings: Vec<String>,
) -> Answer {
    let pod = facts.pod;
    let running = facts.running.as_ref();
    // The images the Pod already runs have no build there: it is not there.
    let not_there = |os: &str| {
        running
            .and_then(|r| r.architectures(os))
            .is_some_and(|a| a.is_empty())
    };
    let mut elsewhere: Vec<(String, Architectures)> = Vec::new();
    for (plan, os_pins) in plans.iter().zip(pins) {
        let os = plan.constraints.os.as_str();
        let architecture = os_pins.terms.iter().any(|term| term.architecture.is_some());
        let universe = platform::or_every(&plan.universe);
        let builds = builds_to_pin(facts, plan, &universe);
        if architecture || builds.is_some() {
            let admitted = plan.constraints.admits().among(&universe);
            let lacking: Architectures = match builds.is_some() && !architecture {
                // Every architecture runs them, not on every Windows build.
                true => admitted,
                false => admitted.difference(&plan.common).cloned().collect(),
            };
            elsewhere.push((os.to_string(), lacking));
        }
        // Nodes of another OS the Pod admits count only where the new images have no plan
        // there (built for one OS only): an OS they run on has its own plan, judged above. A Pod
        // that names its OS in spec.os runs nowhere else: the kubelet refuses it there.
        if !pod.spec_os && os_pins.terms.iter().any(|term| term.os.is_some()) {
            for other in platform::other_operating_systems(os) {
                if !plans.iter().any(|plan| plan.constraints.os == other) && !not_there(other) {
                    elsewhere.push((other.to_string(), Architectures::new()));
                }
            }
        }
    }
    if elsewhere.is_empty() {
        return Answer::Unchanged(warnings);
    }
    let oses: Vec<&str> = plans
        .iter()
        .map(|plan| plan.constraints.os.as_str())
        .collect();
    let refusal = refusal(facts, &elsewhere, &oses, schedulable);
    facts.refuse(refusal, warnings)
}

/// The Windows builds a pin would add to `plan`, unless the Pod keeps to them already on every
/// term that admits a node of its OS the cluster has (a Linux term needs no Windows build, nor
/// one of an architecture the settings say it has no node of), or the images it already runs
/// keep it to builds among them.
fn builds_to_pin<'p>(
    facts: &Facts,
    plan: &'p Placement,
    universe: &Architectures,
) -> Option<&'p Architectures> {
    plan.builds.as_ref().filter(|builds| {
        let admits_os = |index| {
            !plan
                .constraints
                .term_admits(index)
                .among(universe)
                .is_empty()
        };
        let on_their_builds = facts
            .running
            .as_ref()
            .and_then(|running| running.builds.as_ref())
            .is_some_and(|running| running.is_subset(builds));
        !on_their_builds
            && !facts
                .pod
                .node_label_within(platform::WINDOWS_BUILD_LABEL, builds, admits_os)
    })
}

/// The refusal of a Pod after admission whose own constraints admit no node of `constraints`'
/// OS that runs its new images (`placement::place`'s, where a Pod being created is refused for
/// its terms): every architecture they admit is one it may be on.
pub fn nowhere(
    facts: &Facts,
    constraints: &Constraints,
    universe: &Architectures,
    schedulable: &Schedulable,
) -> Refusal {
    let universe = platform::or_every(universe);
    let os = constraints.os.as_str();
    let elsewhere = [(os.to_string(), constraints.admits().among(&universe))];
    refusal(facts, &elsewhere, &[os], schedulable)
}

/// The refusal naming where the Pod may be (`elsewhere`) and each new image with what it runs
/// on for `oses`.
fn refusal(
    facts: &Facts,
    elsewhere: &[(String, Architectures)],
    oses: &[&str],
    schedulable: &Schedulable,
) -> Refusal {
    let each: Vec<String> = facts
        .known
        .iter()
        .map(|image| {
            let per_os: Vec<(&str, Architectures)> = oses
                .iter()
                .map(|os| (*os, image.architectures_on(os)))
                .collect();
            message::new_image_runs_on(image, facts.pod, &per_os)
        })
        .collect();
    let note = match schedulable.architectures.is_empty() && !schedulable.from_nodes {
        true => "no setting schedulableArchitectures: nodes of any architecture".to_string(),
        false => schedulable.note.clone(),
    };
    message::may_be_elsewhere(
        facts.subject.name(),
        elsewhere,
        &each,
        facts.pod.bound_node,
        &note,
    )
}
