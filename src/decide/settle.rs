//! Steps 6 and 7 of docs/design.md for a cluster whose architectures are known (`Schedulable`):
//! where the Pod may finally run, per OS (`plan`), or the refusal; then what pins it there
//! (`pins`: every expression per term decided here, written by `edit::pin`), the DaemonSet
//! warnings and the annotation.

use serde_json::Value;

use crate::edit::affinity;
use crate::edit::pin::{self, OsPins, Pins, TermPins};
use crate::message::{self, Refusal};
use crate::platform::{self, Architectures};
use crate::read::constraint::{Admits, Constraints};
use crate::read::nodes::Schedulable;
use crate::read::pod::{self, PREFERRED_ANNOTATION};
use crate::settings::names::check_label_value;
use crate::settings::Settings;

use super::after;
use super::facts::{Facts, OtherOs, Plan};
use super::os::admits_other_os;
use super::outcome::Outcome;
use super::windows::windows_build_pin;

/// Steps 6 and 7 for a cluster whose architectures are `schedulable`'s: where the Pod may finally
/// run (or why nowhere), and the fewest edits. `others`: the other OSes the Pod may run on that
/// the cluster has nodes of (`Facts::others`), with their nodes' architectures; the Pod keeps
/// every OS that runs it, and is refused (for its own OS's reason) only when none does.
pub(super) fn settle(
    pod: &mut Value,
    facts: &Facts,
    schedulable: &Schedulable,
    others: &[(&OtherOs, Schedulable)],
    mut warnings: Vec<String>,
) -> Outcome {
    let settings = facts.settings;
    let first = match &facts.own_os_refusal {
        Some(refusal) => Err((refusal.clone(), false)),
        None => plan(
            pod,
            facts,
            &facts.constraints,
            &facts.image_common,
            schedulable,
        ),
    };
    let others = match facts.others_decide(|| first.is_err()) {
        true => others,
        false => &[],
    };
    let (mut plans, mut refused) = (Vec::new(), Vec::new());
    for (other, schedulable) in others {
        match plan(
            pod,
            facts,
            &other.constraints,
            &other.image_common,
            schedulable,
        ) {
            Ok(plan) => plans.push(plan),
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
        Ok(first) => plans.insert(0, first),
        Err((refusal, late)) if plans.is_empty() => {
            if late {
                warn_bad_preferred_annotation(pod, &mut warnings);
            }
            return facts.refuse(refusal, warnings);
        }
        Err(_) => {}
    }
    warn_bad_preferred_annotation(pod, &mut warnings);
    // In a cluster of several OSes, the Pod keeps to nodes of the OSes that run it.
    // Images that run anywhere are kept to the OS its spec.os names (the kubelet's).
    let pin_os =
        (schedulable.other_os || !others.is_empty()) && (!facts.unconstrained || facts.spec_os);
    let several = plans.len() > 1;
    // (Read before `pin` writes the OS expression.)
    let daemon_set_other_os = facts.subject.daemon_set
        && pin_os
        && others.is_empty()
        && admits_other_os(pod, &facts.constraints.os, None);
    let pins = pins(pod, &plans, pin_os, settings);
    if facts.subject.after_admission {
        return after::judge(pod, facts, &plans, &pins, schedulable, warnings);
    }
    let changed = pin::write(pod, pins);
    if facts.subject.daemon_set {
        // The nodes of each OS its images run on where they do not (named by OS when several).
        let candidates = std::iter::once((&facts.constraints, &facts.image_common, schedulable))
            .chain(
                others
                    .iter()
                    .map(|(other, nodes)| (&other.constraints, &other.image_common, nodes)),
            );
        for (constraints, image_common, schedulable) in candidates {
            let (common, universe) = cluster_common(facts, image_common, schedulable);
            let os = (!others.is_empty()).then_some(constraints.os.as_str());
            warnings.extend(message::daemon_set(
                constraints.admits(),
                &common,
                &universe,
                os,
            ));
        }
        if daemon_set_other_os {
            warnings.push(message::daemon_set_other_os(&facts.constraints.os));
        }
    }
    warnings.extend(facts.fallback.clone());
    // The annotation records the architectures pinned: none for images that constrain none, nor
    // for a Pod pinned only to its OS (whose architectures the cluster's Nodes never cut). A Pod
    // that keeps several OSes records the platforms of those whose architectures were pinned
    // (`windows/amd64`).
    let recorded = match several {
        false => changed
            .architectures
            .then(|| platform::join(&plans[0].common, ",")),
        true => Some(
            plans
                .iter()
                .zip(&changed.pinned_plans)
                .filter(|(_, pinned)| **pinned)
                .flat_map(|(plan, _)| {
                    let os = &plan.constraints.os;
                    plan.common.iter().map(move |arch| format!("{os}/{arch}"))
                })
                .collect::<Vec<_>>()
                .join(","),
        )
        .filter(|platforms| !platforms.is_empty()),
    };
    if let Some(recorded) = recorded.filter(|_| !facts.unconstrained) {
        pin::record_architectures(pod, recorded);
    }
    match changed.architectures || changed.os {
        true => Outcome::Changed(warnings),
        false => Outcome::Unchanged(warnings),
    }
}

/// The architectures the images run on among those nodes may have (`schedulable`'s; none when
/// they share none), and those the Pod must be kept off: the nodes' when they are known; when
/// they are unknown, every architecture the images run on, and where the images run anywhere,
/// every architecture a node can report (so nothing is pinned). A Pod being created is kept off
/// the architectures its images do not run on of NodePools left out by their `minValues` too:
/// unpinned, it may admit enough of them to be served there.
pub(super) fn cluster_common(
    facts: &Facts,
    image_common: &Architectures,
    schedulable: &Schedulable,
) -> (Architectures, Architectures) {
    let mut universe = if facts.unconstrained && schedulable.unknown() {
        platform::every_architecture()
    } else {
        schedulable.architectures.clone()
    };
    let common = match (facts.unconstrained, schedulable.unknown()) {
        (true, _) => universe.clone(),
        (false, true) => image_common.clone(),
        (false, false) => image_common.intersection(&universe).cloned().collect(),
    };
    if !facts.subject.after_admission {
        universe.extend(
            schedulable
                .min_values_unmet
                .difference(image_common)
                .cloned(),
        );
    }
    (common, universe)
}

/// The Pod decided for the OS of `constraints`, whose nodes have `schedulable`'s architectures:
/// where it may run there, or the refusal (and whether it came after the Pod's own constraints
/// were found to admit some architecture: the Windows builds).
pub(super) fn plan<'a>(
    pod: &Value,
    facts: &Facts,
    constraints: &'a Constraints,
    image_common: &Architectures,
    schedulable: &Schedulable,
) -> Result<Plan<'a>, (Refusal, bool)> {
    let (subject, settings) = (facts.subject.name, facts.settings);
    let (common, universe) = cluster_common(facts, image_common, schedulable);
    if common.is_empty() {
        let refusal = match facts.subject.after_admission {
            true => after::nowhere(pod, facts, constraints, &universe, schedulable),
            false => message::no_schedulable(image_common, schedulable, subject),
        };
        return Err((refusal, false));
    }
    let finally = constraints.admits().among(&common);
    if finally.is_empty() {
        let refusal = match facts.subject.after_admission {
            true => after::nowhere(pod, facts, constraints, &universe, schedulable),
            false => message::explain(constraints, subject, image_common, &common, schedulable),
        };
        return Err((refusal, false));
    }
    let builds = if settings.pin_windows_build && constraints.os == "windows" {
        windows_build_pin(facts, constraints, &finally, schedulable).map_err(|r| (r, true))?
    } else {
        None
    };
    Ok(Plan {
        constraints,
        common,
        finally,
        universe,
        builds,
    })
}

/// The preferred-architecture annotation, when it names no architecture: a warning.
pub(super) fn warn_bad_preferred_annotation(pod: &Value, warnings: &mut Vec<String>) {
    if let Some(value) = pod::annotation(pod, PREFERRED_ANNOTATION) {
        if !platform::KNOWN_ARCHITECTURES.contains(&value) {
            warnings.push(message::bad_preferred_annotation(
                PREFERRED_ANNOTATION,
                value,
            ));
        }
    }
}

/// The architectures to prefer and their weights: the Pod's annotation (with
/// `preferredArchitectureWeight`), else the settings (`preferredArchitectures`, or
/// `preferredArchitecture`).
pub(super) fn preferences<'a>(pod: &'a Value, settings: &'a Settings) -> Vec<(&'a str, i64)> {
    match pod::annotation(pod, PREFERRED_ANNOTATION)
        .filter(|arch| platform::KNOWN_ARCHITECTURES.contains(arch))
    {
        Some(arch) => vec![(arch, settings.preferred_architecture_weight)],
        None => settings.preferences(),
    }
}

/// What pins the Pod to its plans (one per OS it keeps): each required term's expressions
/// (`os_pins`), the preferred architectures where the Pod has a choice and weighs none itself,
/// and the tolerations of the architectures it may finally run on. `edit::pin` writes them.
fn pins<'a>(pod: &Value, plans: &[Plan], pin_os: bool, settings: &'a Settings) -> Pins<'a> {
    let finally: Architectures = match plans {
        [only] => only.finally.clone(),
        _ => plans.iter().flat_map(|p| p.finally.clone()).collect(),
    };
    // Preferences matter only where the Pod has a choice; a Pod that already weighs
    // architectures keeps its own.
    let mut preferred: Vec<(String, i64)> = preferences(pod, settings)
        .into_iter()
        .filter(|(arch, _)| finally.len() > 1 && finally.contains(*arch))
        .map(|(arch, weight)| (arch.to_string(), weight))
        .collect();
    if !preferred.is_empty() && affinity::has_preferred_architecture(&pod["spec"]) {
        preferred.clear();
    }
    Pins {
        plans: plans
            .iter()
            .map(|plan| os_pins(pod, plan, pin_os, settings))
            .collect(),
        every_os: plans.len() == platform::NODE_OPERATING_SYSTEMS.len(),
        preferred,
        finally,
        tolerations: &settings.architecture_tolerations,
    }
}

/// What pins the Pod's required terms to one plan: the architecture expression for each term
/// that admits others, the OS expression (with `pin_os`) for each that admits nodes of another
/// OS (or one new term with what it needs), `matchNodeLabels` and the Windows builds.
fn os_pins(pod: &Value, plan: &Plan, pin_os: bool, settings: &Settings) -> OsPins {
    let constraints = plan.constraints;
    let per_term = |index: Option<usize>| {
        let admits = match index {
            None => constraints.selector_admits(),
            Some(index) => constraints.term_admits(index),
        };
        TermPins {
            architecture: (!admits.within(&plan.common, &plan.universe))
                .then(|| affinity::architecture_expression(&plan.common)),
            os: (pin_os && admits_other_os(pod, &constraints.os, index))
                .then(|| affinity::operating_system_expression(&constraints.os)),
            admits: admits != Admits::none(),
        }
    };
    let terms = match &constraints.terms {
        None => vec![per_term(None)],
        Some(terms) => (0..terms.len())
            .map(|index| match terms[index].empty {
                true => TermPins::default(),
                false => per_term(Some(index)),
            })
            .collect(),
    };
    // Only a value a node label can hold: the Pod's labels are not validated yet when mutating
    // admission runs, and the API server would refuse the Pod for it.
    let labels: Vec<(String, Vec<String>)> = settings
        .match_node_labels
        .iter()
        .filter_map(|key| {
            pod::label(pod, key)
                .filter(|value| check_label_value(value).is_ok())
                .map(|value| (key.clone(), vec![value.to_string()]))
        })
        .collect();
    let narrowed = plan
        .builds
        .iter()
        .map(|builds| {
            let builds = builds.iter().cloned().collect();
            (platform::WINDOWS_BUILD_LABEL.to_string(), builds)
        })
        .collect();
    OsPins {
        terms,
        labels,
        narrowed,
    }
}
