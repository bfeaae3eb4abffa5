//! The cluster hypotheses with `readNodes`: the decision for the cluster's Nodes (read no further
//! than it needs, `nodes::decide_from_nodes`), for a cluster whose pools could create every
//! platform, and, only where those two do not bound it (they differ, or `settle_from_cluster`
//! names why they cannot), for the nodes Karpenter's NodePools can create. Every hypothesis
//! reads through one `ClusterCache`.

use serde_json::Value;

use crate::message::Failure;
use crate::platform::{self, Architectures, NODE_OPERATING_SYSTEMS};
use crate::read::cache::ClusterCache;
use crate::read::constraint::{Admits, Constraints};
use crate::read::node_pools::{self, NodePool};
use crate::read::nodes::{self, Pools, Schedulable};
use crate::settings::{Settings, Toleration};

use super::facts::{Facts, OtherOs};
use super::os::{other_operating_system, read_other_operating_systems, OthersRead};
use super::outcome::{on_lookup_failure, Outcome};
use super::settle::{plan, settle};
use super::windows::windows_builds;

/// With `readNodes`: the decision for the cluster's Nodes and the nodes its pools may create
/// (`autoscaledArchitectures`, Karpenter's NodePools). The NodePools are read only when the
/// Nodes alone do not decide: when the verdict for the Nodes differs from the one for a cluster
/// whose pools could create nodes of every architecture and OS, or when those two do not bound
/// the NodePools' decision (the Pod's OS has no Node; images that run anywhere decided for the
/// other OSes on the Nodes alone only). Each Node list is read once.
pub(super) fn settle_from_cluster(
    pod: &mut Value,
    facts: &Facts,
    cluster: &mut ClusterCache,
    warnings: Vec<String>,
) -> Result<Outcome, Outcome> {
    let settings = facts.settings;
    let configured = pools_of(settings, |_| Architectures::new());
    let mut decided = pod.clone();
    let (nodes_alone, others_alone) =
        settle_noting_others(&mut decided, facts, cluster, &configured, warnings.clone());
    if nodes_alone.is_err() {
        // A Node list failed under `onLookupFailure: accept` or `reject`: that settles it.
        *pod = decided;
        return nodes_alone;
    }
    let every = pools_of(settings, |_| platform::every_architecture());
    let mut hypothetical = pod.clone();
    let (with_every, others_every) =
        settle_noting_others(&mut hypothetical, facts, cluster, &every, warnings.clone());
    // Where the Pod's OS has no Node nor configured pool, the Nodes alone decide as if it had
    // every architecture (`Schedulable` unknown): a NodePool of that OS can only narrow that, so
    // the two decisions above do not bound it and the NodePools are read.
    let os = facts.constraints.os.as_str();
    let os_unknown = settings.autoscaled(os).is_empty() && cluster.read_no_node_of(os);
    // Nor do they bound it where the Pod's own OS refused it on the Nodes alone, and it was
    // decided for the other OSes (images that run anywhere: `Facts::others_decide`), but not
    // with every architecture: NodePools that leave its own OS refusing it may add architectures
    // to another OS, and so their tolerations.
    let others_unbounded = others_alone && !others_every;
    if !os_unknown
        && !others_unbounded
        && same_verdict(&nodes_alone, &decided, &with_every, &hypothetical)
    {
        *pod = decided;
        return nodes_alone;
    }
    let pools = match node_pools::read(cluster) {
        Ok(pools) => pools,
        Err(cause) => {
            // The warnings of both decisions (a Node list that failed too), then the failure's.
            let (Ok(alone) | Err(alone)) = &nodes_alone;
            let mut warnings = warnings_of(alone).to_vec();
            let (Ok(every_outcome) | Err(every_outcome)) = &with_every;
            for warning in warnings_of(every_outcome) {
                if !warnings.contains(warning) {
                    warnings.push(warning.clone());
                }
            }
            let failure = Failure::node_pools(facts.subject.name, cause);
            on_lookup_failure(failure, settings, &mut warnings)?;
            // Decided as if they could create every architecture: never refused for want of a
            // node they could create.
            *pod = hypothetical;
            return Ok(match with_every {
                Ok(outcome) | Err(outcome) => with_warnings(outcome, warnings),
            });
        }
    };
    if pools.is_empty() {
        *pod = decided;
        return nodes_alone;
    }
    // Whether Karpenter's provisioner ignores the Pod (`settle_with_pools`), read once: the
    // rounds below change only the tolerations counted, which it does not read.
    let karpenter_ignores = match facts.subject.after_admission || facts.subject.one_per_node {
        false => node_pools::ignored_by_karpenter(pod),
        true => None,
    };
    // The pools count with the tolerations the returned Pod has: its own, and those
    // `architectureTolerations` adds for the architectures it is pinned to. A toleration added
    // for one architecture tolerates that taint on a pool of any architecture, which may add an
    // architecture, and its tolerations, to the pin. So the decision is made again with the
    // tolerations it returned until it returns those it counted (a fixpoint). Where the pools so
    // opened change the pin back (an OS without Nodes that a pool narrows), there may be none:
    // decided then counting every toleration the rounds saw. After admission nothing is added:
    // the first round is the fixpoint.
    let mut counted = node_pools::pod_tolerations(pod);
    let mut seen = counted.clone();
    let rounds = 1 + settings
        .architecture_tolerations
        .values()
        .map(Vec::len)
        .sum::<usize>();
    for _ in 0..rounds {
        let mut decided = pod.clone();
        let outcome = settle_with_pools(
            &mut decided,
            facts,
            cluster,
            &pools,
            &counted,
            karpenter_ignores,
            &warnings,
        );
        let returned = node_pools::pod_tolerations(&decided);
        let same = |a: &[Toleration], b: &[Toleration]| a.iter().all(|t| b.contains(t));
        if same(&returned, &counted) && same(&counted, &returned) {
            *pod = decided;
            return outcome;
        }
        for toleration in &returned {
            if !seen.contains(toleration) {
                seen.push(toleration.clone());
            }
        }
        counted = returned;
    }
    settle_with_pools(
        pod,
        facts,
        cluster,
        &pools,
        &seen,
        karpenter_ignores,
        &warnings,
    )
}

/// `settle_noting_others` with the NodePools counted for a Pod of `tolerations`. A Pod
/// Karpenter's provisioner ignores (`karpenter_ignores`, why) is served by no NodePool, and kept
/// off those of their architectures its images do not run on (nodes created for other Pods may
/// take it). None on an UPDATE: the Pod was admitted counting them, and may be where they
/// created nodes; nor for a DaemonSet's template, whose Pods Karpenter never creates a node for
/// (they go to every Node its template admits, those pools create for other Pods included).
fn settle_with_pools(
    pod: &mut Value,
    facts: &Facts,
    cluster: &mut ClusterCache,
    pools: &[NodePool],
    tolerations: &[Toleration],
    karpenter_ignores: Option<&'static str>,
    warnings: &[String],
) -> Result<Outcome, Outcome> {
    let settings = facts.settings;
    let min_values = pools.iter().any(|pool| pool.architecture_min_values > 1);
    // A pool's nodes carry the beta labels (their kubelet sets them, and Karpenter's scheduler
    // reads `beta.kubernetes.io/arch` as `kubernetes.io/arch`): an architecture the Pod admits
    // only on nodes without them is not counted (`Pools::beta_label_excluded`). One it does not
    // admit at all counts, as a Node of it does: the OS has nodes, none of them the Pod's.
    let admitted: Vec<(&str, Admits, Admits)> = NODE_OPERATING_SYSTEMS
        .iter()
        .map(|os| {
            let constraints = Constraints::read(&pod["spec"], os);
            (
                *os,
                constraints.admits_with_beta_labels(),
                constraints.admits(),
            )
        })
        .collect();
    let with_pools = |os: &str| {
        let every = node_pools::architectures(pools, os, tolerations, settings);
        // What the images run on for that OS, and the Pod's own constraints: the policy pins
        // the Pod to no more, and a pool whose minValues on the architecture asks for more of its
        // architectures than the Pod admits by one term is not the Pod's (named in messages; the
        // Pod is kept off those of its architectures the images do not run on, `cluster_common`).
        let images = if os == facts.constraints.os {
            Some((&facts.image_common, &facts.constraints))
        } else {
            facts
                .others
                .iter()
                .find(|other| other.constraints.os == os)
                .map(|other| (&other.image_common, &other.constraints))
        };
        let counted = match images.filter(|_| min_values) {
            _ if karpenter_ignores.is_some() => Architectures::new(),
            Some((images, constraints)) => {
                // After admission nothing is pinned: Karpenter reads the Pod's own terms.
                let any = platform::every_architecture();
                let images = match facts.subject.after_admission {
                    true => &any,
                    false => images,
                };
                let usable = node_pools::meeting_min_values(pools, images, constraints);
                node_pools::architectures(&usable, os, tolerations, settings)
            }
            None => every.clone(),
        };
        let (mut node_pools, mut beta_label_excluded) =
            (Architectures::new(), Architectures::new());
        let admitted = admitted.iter().find(|(of, ..)| *of == os);
        let without_beta_only = |arch: &String| matches!(admitted, Some((_, with_beta, any)) if any.admits(arch) && !with_beta.admits(arch));
        for arch in &counted {
            match without_beta_only(arch) {
                true => beta_label_excluded.insert(arch.clone()),
                false => node_pools.insert(arch.clone()),
            };
        }
        Pools {
            configured: settings.autoscaled(os),
            // (For a Pod Karpenter ignores, no node of the pools can take it where it admits the
            // architecture only on nodes without the beta labels.)
            min_values_unmet: every
                .difference(&counted)
                .filter(|arch| karpenter_ignores.is_none() || !without_beta_only(arch))
                .cloned()
                .collect(),
            node_pools,
            beta_label_excluded,
            karpenter_ignores,
        }
    };
    settle_noting_others(pod, facts, cluster, &with_pools, warnings.to_vec()).0
}

/// The pools of each OS: `autoscaledArchitectures`' for it, and what `node_pools` says the
/// NodePools can create there.
pub(super) fn pools_of<'a>(
    settings: &'a Settings,
    node_pools: impl Fn(&str) -> Architectures + 'a,
) -> impl Fn(&str) -> Pools + 'a {
    move |os| Pools {
        configured: settings.autoscaled(os),
        node_pools: node_pools(os),
        min_values_unmet: Architectures::new(),
        beta_label_excluded: Architectures::new(),
        karpenter_ignores: None,
    }
}

pub(super) fn warnings_of(outcome: &Outcome) -> &[String] {
    match outcome {
        Outcome::Unchanged(warnings)
        | Outcome::Changed(warnings)
        | Outcome::Rejected(_, warnings) => warnings,
    }
}

pub(super) fn with_warnings(outcome: Outcome, warnings: Vec<String>) -> Outcome {
    match outcome {
        Outcome::Unchanged(_) => Outcome::Unchanged(warnings),
        Outcome::Changed(_) => Outcome::Changed(warnings),
        Outcome::Rejected(message, _) => Outcome::Rejected(message, warnings),
    }
}

/// Whether two decisions accept the Pod alike: the same outcome (never a refusal, whose message
/// names what the cluster has), the same Pod and the same warnings.
pub(super) fn same_verdict(
    a: &Result<Outcome, Outcome>,
    pod_a: &Value,
    b: &Result<Outcome, Outcome>,
    pod_b: &Value,
) -> bool {
    match (a, b) {
        (Ok(Outcome::Unchanged(a)), Ok(Outcome::Unchanged(b))) => a == b,
        (Ok(Outcome::Changed(a)), Ok(Outcome::Changed(b))) => a == b && pod_a == pod_b,
        _ => false,
    }
}

/// Steps 6 and 7 with `readNodes`: the decision `settle` makes for the cluster's Nodes of the
/// Pod's OS, which `nodes::decide_from_nodes` reads no further than that decision needs. Nodes
/// that cannot be read follow `onLookupFailure` (`ignoreImage`: every architecture the images
/// run on counts). With it, whether the Pod's own OS refused it on the cluster settled on while
/// the other OSes decided it (images that run anywhere: `Facts::others_decide`).
fn settle_noting_others(
    pod: &mut Value,
    facts: &Facts,
    cluster: &mut ClusterCache,
    pools: &dyn Fn(&str) -> Pools,
    mut warnings: Vec<String>,
) -> (Result<Outcome, Outcome>, bool) {
    let settings = facts.settings;
    let os = facts.constraints.os.as_str();
    // A Windows Pod pinned to its images' OS builds reads every Windows Node's build.
    let windows_builds_from_nodes = settings.pin_windows_build
        && os == "windows"
        && matches!(
            windows_builds(&facts.known, &facts.image_common, facts.subject.name),
            Ok(Some(_))
        );
    // The Nodes of another OS are read after those of the Pod's OS, once, and only for an
    // outcome the OS pin can change (`other_operating_system`).
    let mut other_os: Option<Result<(bool, Vec<String>), Outcome>> = None;
    // A Pod whose images run on several OSes reads the Nodes of the others once, whatever the
    // decision for its own (`with_others`); one whose images run anywhere, only where its own OS
    // refuses it on the Nodes read (below).
    let mut others: Option<Result<OthersRead, Outcome>> = None;
    let mut decide = |cache: &mut ClusterCache, schedulable: &Schedulable, with_others: bool| {
        if with_others && !facts.others.is_empty() {
            let read = others.get_or_insert_with(|| {
                let mut warnings = warnings.clone();
                read_other_operating_systems(facts, cache, pools, &mut warnings).map(
                    |(found, present)| OthersRead {
                        found,
                        present,
                        warnings,
                    },
                )
            });
            let read = match read {
                Err(outcome) => return Err(outcome.clone()),
                Ok(read) => read,
            };
            let schedulable = Schedulable {
                other_os: read.found,
                ..schedulable.clone()
            };
            let present: Vec<(&OtherOs, Schedulable)> = read
                .present
                .iter()
                .map(|(index, schedulable)| (&facts.others[*index], schedulable.clone()))
                .collect();
            let mut decided = pod.clone();
            let outcome = settle(
                &mut decided,
                facts,
                &schedulable,
                &present,
                read.warnings.clone(),
            );
            return Ok((outcome, decided));
        }
        let mut decided = pod.clone();
        let outcome = settle(&mut decided, facts, schedulable, &[], warnings.clone());
        if matches!(outcome, Outcome::Rejected(..)) {
            return Ok((outcome, decided));
        }
        // The warnings so far, and those of a failed read (`ignoreImage`); the outcome of one
        // (`accept`, `reject`) carries them all.
        let read = other_os.get_or_insert_with(|| {
            let mut warnings = warnings.clone();
            other_operating_system(pod, facts, cache, pools, &mut warnings)
                .map(|found| (found, warnings))
        });
        match read {
            Err(outcome) => Err(outcome.clone()),
            Ok((false, _)) => Ok((outcome, decided)),
            Ok((true, warnings)) => {
                let mut decided = pod.clone();
                let schedulable = Schedulable {
                    other_os: true,
                    ..schedulable.clone()
                };
                let outcome = settle(&mut decided, facts, &schedulable, &[], warnings.clone());
                Ok((outcome, decided))
            }
        }
    };
    // `decide_from_nodes` decides for the clusters the Nodes read so far allow, and last for the
    // one it settles on: a Pod whose images run anywhere refused there is decided for the other
    // OSes too, on that cluster (`Facts::others_decide`).
    let mut refused_on: Option<Schedulable> = None;
    let read = nodes::decide_from_nodes(
        cluster,
        os,
        &facts.image_common,
        &facts.constraints.admits(),
        &pools(os),
        windows_builds_from_nodes,
        &mut |cache, schedulable| {
            let own_refused = || {
                let (constraints, images) = (&facts.constraints, &facts.image_common);
                plan(pod, facts, constraints, images, schedulable).is_err()
            };
            refused_on = (facts.unconstrained && facts.others_decide(own_refused))
                .then(|| schedulable.clone());
            decide(cache, schedulable, !facts.unconstrained)
        },
    );
    // Only where the Nodes were read: a failed list is decided by `onLookupFailure` below.
    let others_decided = refused_on.is_some() && matches!(read, Ok(Ok(_)));
    let read = match (read, refused_on) {
        (Ok(Ok(_)), Some(schedulable)) => Ok(decide(cluster, &schedulable, true)),
        (read, _) => read,
    };
    let outcome = match read {
        Ok(Ok((outcome, decided))) => {
            *pod = decided;
            Ok(outcome)
        }
        Ok(Err(outcome)) => Err(outcome),
        Err(cause) => {
            let failure = Failure::nodes(os, facts.subject.name, cause);
            match on_lookup_failure(failure, settings, &mut warnings) {
                Err(outcome) => Err(outcome),
                Ok(()) => {
                    let unknown = Schedulable::configured(Architectures::new());
                    Ok(settle(pod, facts, &unknown, &[], warnings))
                }
            }
        }
    };
    (outcome, others_decided)
}
