//! The answer with `readNodes`, over views of the cluster: the Nodes alone (with the settings'
//! pools), the Nodes with pools that could create every platform, and, only where those two do
//! not bound it, the nodes Karpenter's NodePools can create for the Pod (counted with the
//! tolerations the answer gives it, until they agree). Each view is answered by `settle`; the
//! Nodes are read through one `ClusterReader`, no further than the answer needs (`node_reads`).

use std::ops::ControlFlow;

use crate::message::Failure;
use crate::platform::{self, Architectures};
use crate::read::cluster::ClusterReader;
use crate::read::node_pools::NodePool;
use crate::settings::{same_toleration, Toleration};

use super::answer::{on_lookup_failure, settled, Answer, Step};
use super::cluster_view::{Pools, Schedulable};
use super::facts::{Facts, OtherOs};
use super::node_pools::{counted, pools_of};
use super::node_reads::{of_operating_system, other_operating_system, view_of_os};
use super::os::{admits_other_os, admitted_on_other_os};
use super::placement::place;
use super::settle::settle;
use super::windows_builds::windows_builds;

/// The answer for the cluster's Nodes and the nodes its pools may create
/// (`autoscaledArchitectures`, Karpenter's NodePools). The NodePools are read only when the
/// Nodes alone do not decide: when the answer for the Nodes differs from the one for a cluster
/// whose pools could create nodes of every architecture and OS, or when those two do not bound
/// the NodePools' answer (the Pod's OS has no Node; images that run anywhere decided for the
/// other OSes on the Nodes alone only). Each Node list is read once.
pub fn answer(facts: &Facts, cluster: &mut ClusterReader, warnings: Vec<String>) -> Answer {
    let settings = facts.settings;
    let configured = pools_of(settings, |_| Architectures::new());
    let (alone, others_alone) = on_nodes(facts, cluster, &configured, warnings.clone());
    // A Node list failed under `onLookupFailure: accept` or `reject`: that settles it.
    let alone = match alone {
        ControlFlow::Break(answer) => return answer,
        ControlFlow::Continue(answer) => answer,
    };
    let every = pools_of(settings, |_| platform::every_architecture());
    let (with_every, others_every) = on_nodes(facts, cluster, &every, warnings.clone());
    // Where the Pod's OS has no Node nor configured pool, the Nodes alone decide as if it had
    // every architecture (`Schedulable` unknown): a NodePool of that OS can only narrow that, so
    // the two answers above do not bound it. Nor do they where the Pod's own OS refused it on
    // the Nodes alone and it was decided for the other OSes (images that run anywhere), but not
    // with every architecture: NodePools that leave its own OS refusing it may add
    // architectures to another OS, and so their tolerations.
    let os_unknown =
        settings.autoscaled(facts.os()).is_empty() && cluster.read_no_node_of(facts.os());
    let others_unbounded = others_alone && !others_every;
    let same = match (&alone, &with_every) {
        (Answer::Unchanged(a), ControlFlow::Continue(Answer::Unchanged(b))) => a == b,
        (Answer::Pinned(p, a), ControlFlow::Continue(Answer::Pinned(q, b))) => p == q && a == b,
        _ => false,
    };
    if !os_unknown && !others_unbounded && same {
        return alone;
    }
    match cluster.node_pools() {
        Ok(pools) if pools.is_empty() => alone,
        Ok(pools) => with_node_pools(facts, cluster, &pools, &warnings),
        Err(cause) => {
            // The warnings of both answers, then the failure's.
            let every = settled(with_every);
            let mut warnings = alone.warnings().to_vec();
            for warning in every.warnings() {
                if !warnings.contains(warning) {
                    warnings.push(warning.clone());
                }
            }
            let failure = Failure::node_pools(facts.subject.name(), cause);
            match on_lookup_failure(failure, settings, &mut warnings) {
                ControlFlow::Break(answer) => answer,
                // As if they could create every architecture: never refused for want of a node
                // they could create.
                ControlFlow::Continue(()) => every.with_warnings(warnings),
            }
        }
    }
}

/// The answer with Karpenter's NodePools, counted with the tolerations the Pod is answered with:
/// its own, and those `architectureTolerations` adds for the architectures it is pinned to. A
/// toleration added for one architecture tolerates that taint on a pool of any architecture,
/// which may add an architecture, and its tolerations, to the pin: so the Pod is answered again
/// with the tolerations the answer gave it until they are those it counted (a fixpoint). Where
/// the pools so opened change the pin back (an OS without Nodes that a pool narrows), there may
/// be none: answered then counting every toleration the rounds saw. After admission nothing is
/// added: the first round is the fixpoint.
fn with_node_pools(
    facts: &Facts,
    cluster: &mut ClusterReader,
    pools: &[NodePool],
    warnings: &[String],
) -> Answer {
    // Whether Karpenter's provisioner ignores the Pod, read once (the rounds change only the
    // tolerations counted, which it does not read). None on an UPDATE: the Pod was admitted
    // counting them, and may be where they created nodes; nor for a DaemonSet's template, whose
    // Pods Karpenter never creates a node for.
    let ignores = match facts.subject.after_admission() || facts.subject.one_per_node() {
        false => facts.pod.karpenter_ignores,
        true => None,
    };
    let mut answer_with = |tolerations: &[Toleration]| {
        let pools_of = counted(facts, pools, tolerations, ignores);
        settled(on_nodes(facts, cluster, &pools_of, warnings.to_vec()).0)
    };
    let own = &facts.pod.tolerations;
    let mut counted = own.clone();
    let mut seen = counted.clone();
    let rounds = 1 + facts
        .settings
        .architecture_tolerations
        .values()
        .map(Vec::len)
        .sum::<usize>();
    for _ in 0..rounds {
        let answer = answer_with(&counted);
        let mut returned = own.clone();
        if let Answer::Pinned(plan, _) = &answer {
            returned.extend(plan.tolerations.iter().cloned());
        }
        if within(&returned, &counted) && within(&counted, &returned) {
            return answer;
        }
        for toleration in &returned {
            if !within(std::slice::from_ref(toleration), &seen) {
                seen.push(toleration.clone());
            }
        }
        counted = returned;
    }
    answer_with(&seen)
}

/// Whether each of `tolerations` is one of `others` (Kubernetes' defaults filled in).
fn within(tolerations: &[Toleration], others: &[Toleration]) -> bool {
    tolerations
        .iter()
        .all(|t| others.iter().any(|other| same_toleration(t, other)))
}

/// The answer for the cluster's Nodes of the Pod's OS with the pools of `pools_of` (read no
/// further than it needs, `view_of_os`), and whether the Pod's own OS refused it on the view the
/// Nodes settled on while the other OSes answered it (images that run anywhere:
/// `Facts::others_decide`). Nodes that cannot be read follow `onLookupFailure` (`ignoreImage`:
/// every architecture the images run on counts).
fn on_nodes(
    facts: &Facts,
    cluster: &mut ClusterReader,
    pools_of: &dyn Fn(&str) -> Pools,
    warnings: Vec<String>,
) -> (Step<Answer>, bool) {
    let os = facts.os();
    // A Windows Pod pinned to its images' OS builds reads every Windows Node's build.
    let (subject, setting) = (facts.subject.name(), facts.builds_setting());
    let all_nodes = facts.pin_builds
        && os == "windows"
        && matches!(
            windows_builds(&facts.known, &facts.image_common, subject, setting),
            Ok(Some(_))
        );
    let mut answer = |cluster: &mut ClusterReader, view: &Schedulable| {
        answer_on(
            facts,
            cluster,
            pools_of,
            view,
            !facts.unconstrained,
            &warnings,
        )
    };
    let admits = facts.constraints.admits();
    let read = view_of_os(
        cluster,
        os,
        &facts.image_common,
        &admits,
        &pools_of(os),
        all_nodes,
        &mut answer,
    );
    let view = match read {
        Ok(view) => view,
        Err(cause) => {
            let mut warnings = warnings.clone();
            let failure = Failure::nodes(os, facts.subject.name(), cause);
            let answer =
                on_lookup_failure(failure, facts.settings, &mut warnings).map_continue(|()| {
                    let unknown = Schedulable::configured(Architectures::new());
                    settle(facts, &unknown, &[], warnings)
                });
            return (answer, false);
        }
    };
    let answer_there = answer(cluster, &view);
    let own_refused = facts.unconstrained
        && facts
            .others_decide(|| place(facts, facts.constraints, &facts.image_common, &view).is_err());
    match (own_refused, answer_there) {
        (true, ControlFlow::Continue(_)) => (
            answer_on(facts, cluster, pools_of, &view, true, &warnings),
            true,
        ),
        (_, answer_there) => (answer_there, false),
    }
}

/// The answer for one view of the Nodes of the Pod's OS: with the other OSes its images run on
/// (`with_others`: each read once), or for its own OS, then pinned to it where the cluster has
/// nodes of another OS (read only for an answer that pin can change). A failed read settles the
/// answer per `onLookupFailure` (the break).
fn answer_on(
    facts: &Facts,
    cluster: &mut ClusterReader,
    pools_of: &dyn Fn(&str) -> Pools,
    view: &Schedulable,
    with_others: bool,
    warnings: &[String],
) -> Step<Answer> {
    let mut read_warnings = warnings.to_vec();
    if with_others && !facts.others.is_empty() {
        let (found, present) = other_nodes(facts, cluster, pools_of, &mut read_warnings)?;
        let view = Schedulable {
            other_os: found,
            ..view.clone()
        };
        let present: Vec<(&OtherOs, Schedulable)> = present
            .into_iter()
            .map(|(index, view)| (&facts.others[index], view))
            .collect();
        return ControlFlow::Continue(settle(facts, &view, &present, read_warnings));
    }
    let answer = settle(facts, view, &[], warnings.to_vec());
    if matches!(answer, Answer::Rejected(..)) {
        return ControlFlow::Continue(answer);
    }
    match other_os_nodes(facts, cluster, pools_of, &mut read_warnings)? {
        false => ControlFlow::Continue(answer),
        true => {
            let view = Schedulable {
                other_os: true,
                ..view.clone()
            };
            ControlFlow::Continue(settle(facts, &view, &[], read_warnings))
        }
    }
}

/// For a Pod whose images run on other OSes too (`Facts::others`): every Node of each other OS
/// (one list each, `kubernetes.io/os=<os>`, the list that tells whether the cluster has any),
/// with its pools. Whether the cluster has nodes of another OS (NodePools left out by their
/// `minValues` included), and the other OSes it has nodes of, by index in `Facts::others`. Nodes
/// that cannot be read follow `onLookupFailure` (`ignoreImage`: the Pod keeps to its own OS).
fn other_nodes(
    facts: &Facts,
    cluster: &mut ClusterReader,
    pools_of: &dyn Fn(&str) -> Pools,
    warnings: &mut Vec<String>,
) -> Step<(bool, Vec<(usize, Schedulable)>)> {
    let mut present = Vec::new();
    for (index, other) in facts.others.iter().enumerate() {
        let os = other.constraints.os.as_str();
        match of_operating_system(cluster, os, &pools_of(os)) {
            Ok(Some(view)) => present.push((index, view)),
            Ok(None) => {}
            Err(cause) => {
                let failure = Failure::other_os_nodes(os, facts.os(), facts.subject.name(), cause);
                on_lookup_failure(failure, facts.settings, warnings)?;
                return ControlFlow::Continue((true, Vec::new()));
            }
        }
    }
    // An OS whose only pools are NodePools left out by their `minValues` serves the Pod none of
    // its architectures, but one not kept to its own OS may admit enough of them to be served.
    let left_out = facts
        .others
        .iter()
        .any(|other| !pools_of(&other.constraints.os).min_values_unmet.is_empty());
    ControlFlow::Continue((!present.is_empty() || left_out, present))
}

/// Whether the cluster has nodes of an OS other than the Pod's (`other_operating_system`), read
/// only for a Pod the OS pin could change: one whose images constrain where it runs (or that
/// names its OS in `spec.os`) and whose own constraints admit nodes of another OS. Nodes that
/// cannot be read follow `onLookupFailure` (`ignoreImage`: the Pod is pinned to its OS).
fn other_os_nodes(
    facts: &Facts,
    cluster: &mut ClusterReader,
    pools_of: &dyn Fn(&str) -> Pools,
    warnings: &mut Vec<String>,
) -> Step<bool> {
    let (pod, os) = (facts.pod, facts.os());
    if (facts.unconstrained && !pod.spec_os) || !admits_other_os(pod, os, None) {
        return ControlFlow::Continue(false);
    }
    let found = match facts.subject.counts_admitted_other_os() {
        false => other_operating_system(cluster, os, pools_of),
        true => admitted_on_other_os(pod, os, |other| {
            of_operating_system(cluster, other, &pools_of(other))
                .map(|read| read.map(|view| view.architectures))
        }),
    };
    match found {
        Ok(found) => ControlFlow::Continue(found),
        Err(cause) => {
            let other = platform::other_operating_systems(os)
                .collect::<Vec<_>>()
                .join(", ");
            let failure = Failure::other_os_nodes(&other, os, facts.subject.name(), cause);
            on_lookup_failure(failure, facts.settings, warnings)?;
            ControlFlow::Continue(true)
        }
    }
}
