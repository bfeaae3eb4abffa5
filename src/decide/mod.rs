//! The decision on one Pod or Pod template, the same for both, in the steps of docs/design.md
//! (`decide`): read its images and the constraints on its nodes (`constraint`), decide from
//! them, and edit it (`affinity`, `tolerations`); the texts are `message`'s. Plain Rust over
//! plain data: `policy` routes requests here, `workload` finds the templates.

pub mod workload;

use serde_json::Value;

use crate::edit;
use crate::edit::affinity;
use crate::edit::tolerations;
use crate::host::cluster::Cluster;
use crate::host::registry::Registry;
use crate::message::{self, Failure, Refusal};
use crate::platform::{self, Architectures};
use crate::read::cache::ClusterCache;
use crate::read::constraint::{Admits, Constraints};
use crate::read::node_pools;
use crate::read::nodes::{self, Builds, Pools, Schedulable};
use crate::read::pod::{self, PodImage};
use crate::read::resolve::{self, ImagePlatforms};
use crate::read::webassembly;
use crate::settings::{self, OnLookupFailure, OnNoCommonArchitecture, Settings};

/// Annotation in which the policy records the architectures it computed.
pub const ARCHITECTURES_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/architectures";
/// Pod annotation that names the preferred architecture, overriding the setting.
pub const PREFERRED_ANNOTATION: &str = "image-arch-affinity.kubewarden.io/preferred-architecture";
pub(crate) use crate::message::capped;
pub use crate::message::PREFIX;

const PREFERRED_PATH: [&str; 3] = [
    "affinity",
    "nodeAffinity",
    "preferredDuringSchedulingIgnoredDuringExecution",
];

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict<Object = Value> {
    /// Let the object through unchanged.
    Accept,
    /// Let the object through as given (the whole object, changed only where needed).
    Mutate(Object),
    /// Refuse it with this message.
    Reject(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision<Object = Value> {
    pub verdict: Verdict<Object>,
    pub warnings: Vec<String>,
}

impl Decision {
    pub fn accept(warnings: Vec<String>) -> Decision {
        Decision {
            verdict: Verdict::Accept,
            warnings,
        }
    }

    pub fn reject(message: String, warnings: Vec<String>) -> Decision {
        Decision {
            verdict: Verdict::Reject(message),
            warnings,
        }
    }
}

/// What happened to a Pod (or Pod template), with the warnings for the user.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Unchanged(Vec<String>),
    Changed(Vec<String>),
    Rejected(String, Vec<String>),
}

/// The Pod or Pod template decided, as messages name it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// `Pod`, `Pod template`.
    pub name: &'a str,
    /// A DaemonSet's template under `validate`: warn about the nodes its Pods will fail on.
    pub daemon_set: bool,
}

/// Applies the policy to a Pod, or to a Pod template (an object with `metadata` and `spec`),
/// editing it in place. The cluster is read only with `readNodes`.
pub fn decide_pod(
    pod: &mut Value,
    subject: Subject,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Outcome {
    let mut cache = ClusterCache::new(cluster);
    steps(pod, subject, settings, registry, &mut cache).unwrap_or_else(|outcome| outcome)
}

/// What the decision knows of the Pod and its images before it looks at the cluster.
struct Facts<'a> {
    subject: Subject<'a>,
    settings: &'a Settings,
    constraints: Constraints,
    /// The images looked up that constrain the Pod's architecture (not the WebAssembly ones
    /// that run anywhere: `ImagePlatforms::arch_free`).
    known: Vec<&'a ImagePlatforms>,
    /// The architectures every known image runs on for the Pod's OS (`fallbackArchitectures`
    /// when no image could be looked up; every architecture when none constrains).
    image_common: Architectures,
    /// Images were looked up, and none constrains the architecture: they run on every node.
    unconstrained: bool,
    /// No image that runs on a CPU architecture could be looked up: `image_common` is
    /// `fallbackArchitectures`, and the warning that says so.
    fallback: Option<String>,
    /// WebAssembly images were looked up (the fallback's messages say that only the others
    /// failed).
    webassembly: bool,
    /// The other node OSes the Pod may run on: it does not choose its OS (`spec.os`, the
    /// nodeSelector), its own constraints admit their nodes, and every known image runs on them
    /// (Linux and Windows builds in one index). Where the cluster has nodes of them, the Pod is
    /// decided for each, and keeps every OS that runs it (`settle`).
    others: Vec<OtherOs>,
    /// Why no node of the Pod's own OS runs every image, when only `others` do (`image_common`
    /// is then empty).
    own_os_refusal: Option<Refusal>,
    /// The Pod names its OS in `spec.os`: the kubelet refuses it on a node of another OS, so it
    /// is kept to its OS even when its images run anywhere.
    spec_os: bool,
}

/// Another OS a Pod that states none may run on (`Facts::others`): its constraints read for
/// that OS, and the architectures every known image runs on for it.
struct OtherOs {
    constraints: Constraints,
    image_common: Architectures,
}

/// The Pod decided for one OS: where it may run, and what pins it there.
struct Plan<'a> {
    constraints: &'a Constraints,
    /// The architectures every image runs on, among those of the cluster's nodes.
    common: Architectures,
    /// Of those, the ones the Pod's own constraints admit.
    finally: Architectures,
    /// The architectures nodes of the OS may have.
    universe: Architectures,
    /// The Windows OS builds to pin (`pinWindowsBuild`).
    builds: Option<Architectures>,
}

impl Facts<'_> {
    /// No architecture fits: `refuse`, except that a Pod pinned to `fallbackArchitectures`
    /// that fit none of its nodes is left unpinned, with a warning (a guess never refuses it).
    fn refuse(&self, refusal: Refusal, mut warnings: Vec<String>) -> Outcome {
        if self.fallback.is_some() {
            warnings.push(message::fallback_unfit(
                self.subject.name,
                self.webassembly,
                &self.image_common,
            ));
            return Outcome::Unchanged(warnings);
        }
        refuse(refusal, &mut warnings, self.settings)
    }
}

/// The steps of docs/design.md ("What it does, step by step"), each a function that either
/// gives what the next one needs or settles the outcome (the error).
fn steps(
    pod: &mut Value,
    subject: Subject,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut ClusterCache,
) -> Result<Outcome, Outcome> {
    // 1. Skip what the policy does not place; check a bound Pod against its node.
    let images = placed_by_scheduler(pod, subject.name, settings, registry, cluster)?;
    // 2, 5. The OS, and every constraint on the Pod's nodes.
    let constraints = Constraints::read_pod(pod, &settings.default_operating_system);
    if !platform::NODE_OPERATING_SYSTEMS.contains(&constraints.os.as_str()) {
        // No node runs that OS: no lookup can change the answer.
        let refusal = message::no_node_os(&constraints.os, subject.name);
        return Err(refuse(refusal, &mut Vec::new(), settings));
    }
    // 3, 4. What every image runs on.
    let mut warnings = Vec::new();
    let resolved = resolve::resolve_images(&images, settings, registry);
    let (looked_up, failed) = known_images(&resolved, subject.name, settings, &mut warnings)?;
    let looked_up_count = looked_up.len();
    let known = constraining(looked_up, webassembly::runtime(pod, settings));
    let webassembly = known.len() < looked_up_count;
    // No image that runs on a CPU architecture could be looked up (WebAssembly ones say
    // nothing of it): `fallbackArchitectures` stand in for those that failed.
    let fallback =
        (known.is_empty() && !failed.is_empty() && !settings.fallback_architectures.is_empty())
            .then(|| message::fallback(subject.name, &failed, webassembly, settings));
    let unconstrained = fallback.is_none() && known.is_empty();
    // Images built for several OSes: the other OSes a Pod that states none may run on.
    let others = match fallback.is_none() && !unconstrained {
        true => other_operating_systems(pod, &constraints.os, &known, subject.name),
        false => Vec::new(),
    };
    let mut own_os_refusal = None;
    let image_common = if fallback.is_some() {
        settings.fallback_architectures.iter().cloned().collect()
    } else if unconstrained {
        platform::every_architecture()
    } else {
        match image_architectures(&known, &constraints.os, subject.name) {
            Ok(common) => common,
            Err(refusal) if others.is_empty() => {
                return Err(refuse(refusal, &mut warnings, settings))
            }
            // Only the other OSes run every image: decided there (`settle`).
            Err(refusal) => {
                own_os_refusal = Some(refusal);
                Architectures::new()
            }
        }
    };
    let facts = Facts {
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
        spec_os: pod["spec"]["os"]["name"]
            .as_str()
            .is_some_and(|os| !os.is_empty()),
    };
    // 6, 7. The architectures the cluster has; where the Pod may finally run; the edits.
    if !settings.read_nodes {
        let mut schedulable = Schedulable::configured(settings.schedulable());
        schedulable.other_os = settings.other_operating_system(&facts.constraints.os);
        let others: Vec<(&OtherOs, Schedulable)> = facts
            .others
            .iter()
            .filter(|other| {
                settings
                    .cluster_operating_systems
                    .contains(&other.constraints.os)
            })
            .map(|other| (other, schedulable.clone()))
            .collect();
        return Ok(settle(pod, &facts, &schedulable, &others, warnings));
    }
    settle_from_cluster(pod, &facts, cluster, warnings)
}

/// With `readNodes`: the decision for the cluster's Nodes and the nodes its pools may create
/// (`autoscaledArchitectures`, Karpenter's NodePools). The NodePools are read only when the
/// Nodes alone do not decide: when the verdict for the Nodes differs from the one for a cluster
/// whose pools could create nodes of every architecture and OS (each Node list is read once).
fn settle_from_cluster(
    pod: &mut Value,
    facts: &Facts,
    cluster: &mut ClusterCache,
    warnings: Vec<String>,
) -> Result<Outcome, Outcome> {
    let settings = facts.settings;
    let configured = pools_of(settings, |_| Architectures::new());
    let mut decided = pod.clone();
    let nodes_alone =
        settle_from_nodes(&mut decided, facts, cluster, &configured, warnings.clone());
    if nodes_alone.is_err() {
        // A Node list failed under `onLookupFailure: accept` or `reject`: that settles it.
        *pod = decided;
        return nodes_alone;
    }
    let every = pools_of(settings, |_| platform::every_architecture());
    let mut hypothetical = pod.clone();
    let with_every = settle_from_nodes(&mut hypothetical, facts, cluster, &every, warnings.clone());
    // Where the Pod's OS has no Node nor configured pool, the Nodes alone decide as if it had
    // every architecture (`Schedulable` unknown): a NodePool of that OS can only narrow that, so
    // the two decisions above do not bound it and the NodePools are read.
    let os = facts.constraints.os.as_str();
    let os_unknown = settings.autoscaled(os).is_empty() && cluster.read_no_node_of(os);
    if !os_unknown && same_verdict(&nodes_alone, &decided, &with_every, &hypothetical) {
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
    let tolerations = node_pools::pod_tolerations(pod);
    let with_pools = pools_of(settings, |os| {
        node_pools::architectures(&pools, os, &tolerations, settings)
    });
    settle_from_nodes(pod, facts, cluster, &with_pools, warnings)
}

/// The pools of each OS: `autoscaledArchitectures`' for it, and what `node_pools` says the
/// NodePools can create there.
fn pools_of<'a>(
    settings: &'a Settings,
    node_pools: impl Fn(&str) -> Architectures + 'a,
) -> impl Fn(&str) -> Pools + 'a {
    move |os| Pools {
        configured: settings.autoscaled(os),
        node_pools: node_pools(os),
    }
}

fn warnings_of(outcome: &Outcome) -> &[String] {
    match outcome {
        Outcome::Unchanged(warnings)
        | Outcome::Changed(warnings)
        | Outcome::Rejected(_, warnings) => warnings,
    }
}

fn with_warnings(outcome: Outcome, warnings: Vec<String>) -> Outcome {
    match outcome {
        Outcome::Unchanged(_) => Outcome::Unchanged(warnings),
        Outcome::Changed(_) => Outcome::Changed(warnings),
        Outcome::Rejected(message, _) => Outcome::Rejected(message, warnings),
    }
}

/// Whether two decisions accept the Pod alike: the same outcome (never a refusal, whose message
/// names what the cluster has), the same Pod and the same warnings.
fn same_verdict(
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

/// The node OSes other than `os` a Pod that does not choose its OS (`spec.os`, the nodeSelector)
/// may run on: those whose nodes its constraints admit and on which every known image runs.
fn other_operating_systems(
    pod: &Value,
    os: &str,
    known: &[&ImagePlatforms],
    subject: &str,
) -> Vec<OtherOs> {
    if pod::chosen_operating_system(pod).is_some() {
        return Vec::new();
    }
    platform::other_operating_systems(os)
        .filter_map(|other| {
            let constraints = Constraints::read(&pod["spec"], other);
            if constraints.admits() == Admits::none() {
                return None;
            }
            let image_common = image_architectures(known, other, subject).ok()?;
            Some(OtherOs {
                constraints,
                image_common,
            })
        })
        .collect()
}

/// Steps 6 and 7 with `readNodes`: the decision `settle` makes for the cluster's Nodes of the
/// Pod's OS, which `nodes::decide_from_nodes` reads no further than that decision needs. Nodes
/// that cannot be read follow `onLookupFailure` (`ignoreImage`: every architecture the images
/// run on counts).
fn settle_from_nodes(
    pod: &mut Value,
    facts: &Facts,
    cluster: &mut ClusterCache,
    pools: &dyn Fn(&str) -> Pools,
    mut warnings: Vec<String>,
) -> Result<Outcome, Outcome> {
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
    // decision for its own.
    let mut others: Option<Result<OthersRead, Outcome>> = None;
    let mut decide = |cache: &mut ClusterCache, schedulable: &Schedulable| {
        if !facts.others.is_empty() {
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
    let read = nodes::decide_from_nodes(
        cluster,
        os,
        &facts.image_common,
        &facts.constraints.admits(),
        &pools(os),
        windows_builds_from_nodes,
        &mut decide,
    );
    match read {
        Ok(Ok((outcome, decided))) => {
            *pod = decided;
            Ok(outcome)
        }
        Ok(Err(outcome)) => Err(outcome),
        Err(cause) => {
            let failure = Failure::nodes(os, facts.subject.name, cause);
            on_lookup_failure(failure, settings, &mut warnings)?;
            let unknown = Schedulable::configured(Architectures::new());
            Ok(settle(pod, facts, &unknown, &[], warnings))
        }
    }
}

/// What `read_other_operating_systems` read: whether the cluster has nodes of another OS, the
/// Nodes of each of `Facts::others` it has (by index), and the warnings so far.
struct OthersRead {
    found: bool,
    present: Vec<(usize, Schedulable)>,
    warnings: Vec<String>,
}

/// With `readNodes`, for a Pod whose images run on other OSes too (`Facts::others`): every Node
/// of each other OS (one list each, `kubernetes.io/os=<os>`, the list that tells whether the
/// cluster has any), with its `autoscaledArchitectures` pools. Returns whether the cluster has
/// nodes of another OS, and the other OSes it has nodes of, by index in `Facts::others`. Nodes
/// that cannot be read follow `onLookupFailure` (`ignoreImage`: the Pod keeps to its own OS).
fn read_other_operating_systems(
    facts: &Facts,
    cluster: &mut ClusterCache,
    pools: &dyn Fn(&str) -> Pools,
    warnings: &mut Vec<String>,
) -> Result<(bool, Vec<(usize, Schedulable)>), Outcome> {
    let settings = facts.settings;
    let mut present = Vec::new();
    for (index, other) in facts.others.iter().enumerate() {
        let os = other.constraints.os.as_str();
        match nodes::of_operating_system(cluster, os, &pools(os)) {
            Ok(Some(schedulable)) => present.push((index, schedulable)),
            Ok(None) => {}
            Err(cause) => {
                let failure =
                    Failure::other_os_nodes(os, &facts.constraints.os, facts.subject.name, cause);
                on_lookup_failure(failure, settings, warnings)?;
                return Ok((true, Vec::new()));
            }
        }
    }
    Ok((!present.is_empty(), present))
}

/// With `readNodes`: whether the cluster has nodes of an OS other than the Pod's
/// (`nodes::other_operating_system`), read only for a Pod the OS pin could change: one whose
/// images constrain where it runs (or that names its OS in `spec.os`) and whose own constraints
/// admit nodes of another OS. Nodes
/// that cannot be read follow `onLookupFailure` (`ignoreImage`: the Pod is pinned to its OS).
fn other_operating_system(
    pod: &Value,
    facts: &Facts,
    cluster: &mut ClusterCache,
    pools: &dyn Fn(&str) -> Pools,
    warnings: &mut Vec<String>,
) -> Result<bool, Outcome> {
    let os = facts.constraints.os.as_str();
    if (facts.unconstrained && !facts.spec_os) || !admits_other_os(pod, os, None) {
        return Ok(false);
    }
    let settings = facts.settings;
    match nodes::other_operating_system(cluster, os, pools) {
        Ok(found) => Ok(found),
        Err(cause) => {
            let other = platform::other_operating_systems(os)
                .collect::<Vec<_>>()
                .join(", ");
            let failure = Failure::other_os_nodes(&other, os, facts.subject.name, cause);
            on_lookup_failure(failure, settings, warnings)?;
            Ok(true)
        }
    }
}

/// Whether the Pod admits a node of an OS other than `os`: through required term `index` with
/// its nodeSelector, or (`None`) through any of its constraints (`Constraints::admits`).
fn admits_other_os(pod: &Value, os: &str, term: Option<usize>) -> bool {
    platform::other_operating_systems(os).any(|other| {
        let constraints = Constraints::read(&pod["spec"], other);
        let admits = match term {
            None => constraints.admits(),
            Some(index) => constraints.term_admits(index),
        };
        admits != Admits::none()
    })
}

/// Steps 6 and 7 for a cluster whose architectures are `schedulable`'s: where the Pod may finally
/// run (or why nowhere), and the fewest edits. `others`: the other OSes the Pod may run on that
/// the cluster has nodes of (`Facts::others`), with their nodes' architectures; the Pod keeps
/// every OS that runs it, and is refused (for its own OS's reason) only when none does.
fn settle(
    pod: &mut Value,
    facts: &Facts,
    schedulable: &Schedulable,
    others: &[(&OtherOs, Schedulable)],
    mut warnings: Vec<String>,
) -> Outcome {
    let settings = facts.settings;
    let first = match &facts.own_os_refusal {
        Some(refusal) => Err((refusal.clone(), false)),
        None => plan(facts, &facts.constraints, &facts.image_common, schedulable),
    };
    let mut plans: Vec<Plan> = others
        .iter()
        .filter_map(|(other, schedulable)| {
            plan(facts, &other.constraints, &other.image_common, schedulable).ok()
        })
        .collect();
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
    let changed = pin(pod, &plans, pin_os, settings);
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
        record_architectures(pod, recorded);
    }
    match changed.architectures || changed.os {
        true => Outcome::Changed(warnings),
        false => Outcome::Unchanged(warnings),
    }
}

/// The architectures the images run on among those nodes may have (`schedulable`'s; none when
/// they share none), and those nodes may have: when they are unknown, every architecture the
/// images run on, and where the images run anywhere, every architecture a node can report (so
/// nothing is pinned).
fn cluster_common(
    facts: &Facts,
    image_common: &Architectures,
    schedulable: &Schedulable,
) -> (Architectures, Architectures) {
    let universe = if facts.unconstrained && schedulable.architectures.is_empty() {
        platform::every_architecture()
    } else {
        schedulable.architectures.clone()
    };
    let common = match (facts.unconstrained, universe.is_empty()) {
        (true, _) => universe.clone(),
        (false, true) => image_common.clone(),
        (false, false) => image_common.intersection(&universe).cloned().collect(),
    };
    (common, universe)
}

/// The Pod decided for the OS of `constraints`, whose nodes have `schedulable`'s architectures:
/// where it may run there, or the refusal (and whether it came after the Pod's own constraints
/// were found to admit some architecture: the Windows builds).
fn plan<'a>(
    facts: &Facts,
    constraints: &'a Constraints,
    image_common: &Architectures,
    schedulable: &Schedulable,
) -> Result<Plan<'a>, (Refusal, bool)> {
    let (subject, settings) = (facts.subject.name, facts.settings);
    let (common, universe) = cluster_common(facts, image_common, schedulable);
    if common.is_empty() {
        let refusal = message::no_schedulable(image_common, schedulable, subject);
        return Err((refusal, false));
    }
    let finally = constraints.admits().among(&common);
    if finally.is_empty() {
        let refusal = message::explain(constraints, subject, image_common, &common, schedulable);
        return Err((refusal, false));
    }
    let builds = if settings.pin_windows_build && constraints.os == "windows" {
        windows_build_pin(facts, &finally, schedulable).map_err(|r| (r, true))?
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

/// Step 1: the Pod's images when the scheduler will place it. A Pod bound to a node (or a
/// DaemonSet's, which targets one) is checked against that node when Nodes are read (the
/// outcome), and left alone otherwise; so is a Pod without images.
fn placed_by_scheduler<'a>(
    pod: &'a Value,
    subject: &str,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut ClusterCache,
) -> Result<Vec<PodImage<'a>>, Outcome> {
    let unchanged = || Outcome::Unchanged(Vec::new());
    if !pod.is_object() || !pod["spec"].is_object() {
        return Err(unchanged());
    }
    let bound = match pod::skip_reason(pod) {
        None => None,
        Some(_) => match pod::bound_node(pod).filter(|_| settings.read_nodes) {
            Some(node) => Some(node),
            None => return Err(unchanged()),
        },
    };
    let images = pod::images(pod);
    if images.is_empty() {
        return Err(unchanged());
    }
    if let Some(node) = bound {
        return Err(decide_bound(
            &images, node, pod, subject, settings, registry, cluster,
        ));
    }
    Ok(images)
}

/// Step 7: the Windows OS builds to pin a Windows Pod to (`pinWindowsBuild`): those every image
/// has, cut to those the cluster's Windows Nodes report with `readNodes`; the error is the
/// refusal when they share none, or no Node has one.
fn windows_build_pin(
    facts: &Facts,
    finally: &Architectures,
    schedulable: &Schedulable,
) -> Result<Option<Architectures>, Refusal> {
    let subject = facts.subject.name;
    let Some(builds) = windows_builds(&facts.known, finally, subject)? else {
        return Ok(None);
    };
    let Some(nodes) = schedulable.nodes.as_deref() else {
        return Ok(Some(builds));
    };
    match nodes::windows_builds(nodes, finally, &builds, &schedulable.pools) {
        Builds::Covered => Ok(None),
        Builds::Pin(found) => Ok(Some(found)),
        Builds::Absent {
            reported,
            unlabelled,
        } => Err(message::absent_builds(
            &builds, &reported, unlabelled, finally, subject,
        )),
    }
}

/// `onLookupFailure` applied to a read that failed (images, Nodes, Windows Nodes, a bound Pod's
/// node): `reject` and `accept` settle the outcome; `ignoreImage` adds its warnings and lets
/// the caller go on without what could not be read.
fn on_lookup_failure(
    failure: Failure,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Result<(), Outcome> {
    match settings.on_lookup_failure {
        OnLookupFailure::Reject => Err(Outcome::Rejected(
            failure.rejection(),
            std::mem::take(warnings),
        )),
        OnLookupFailure::Accept => {
            warnings.extend(failure.warnings(true));
            Err(Outcome::Unchanged(std::mem::take(warnings)))
        }
        OnLookupFailure::IgnoreImage => {
            warnings.extend(failure.warnings(false));
            Ok(())
        }
    }
}

/// The preferred-architecture annotation, when it names no architecture: a warning.
fn warn_bad_preferred_annotation(pod: &Value, warnings: &mut Vec<String>) {
    if let Some(value) = pod::annotation(pod, PREFERRED_ANNOTATION) {
        if !platform::KNOWN_ARCHITECTURES.contains(&value) {
            warnings.push(message::bad_preferred_annotation(
                PREFERRED_ANNOTATION,
                value,
            ));
        }
    }
}

/// A Pod bound to a node (`spec.nodeName`, or a DaemonSet Pod's target node), with `readNodes`:
/// accepted unchanged when every image runs on the node's OS and architecture, else rejected
/// (or, with `onNoCommonArchitecture: accept`, accepted with a warning). It is never pinned: the
/// scheduler does not place it. A node that cannot be read follows `onLookupFailure`.
fn decide_bound(
    images: &[PodImage],
    name: &str,
    pod: &Value,
    subject: &str,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut ClusterCache,
) -> Outcome {
    let mut warnings = Vec::new();
    let node = match nodes::bound_node(cluster, name) {
        Ok(node) => node,
        Err(cause) => {
            let failure = Failure::bound_node(name, subject, cause);
            return match on_lookup_failure(failure, settings, &mut warnings) {
                Err(outcome) => outcome,
                Ok(()) => Outcome::Unchanged(warnings),
            };
        }
    };
    let pod_os = pod::operating_system(pod, &settings.default_operating_system);
    let os = node.os.as_deref().unwrap_or(pod_os);
    let arch = node.architecture.as_deref().unwrap_or_default();
    // With pinWindowsBuild, a Windows Node's OS build counts too (a platform that names none
    // runs on any).
    let build = node
        .windows_build
        .as_deref()
        .filter(|_| settings.pin_windows_build && os == "windows");
    let fits = |platform: &platform::Platform| {
        platform.runs_on(os)
            && platform.architecture == arch
            && build.is_none_or(|build| platform.os_build.as_deref().is_none_or(|b| b == build))
    };
    let placed = match build {
        Some(build) => format!("{os}/{arch}, OS build {build}"),
        None => format!("{os}/{arch}"),
    };
    // The kubelet refuses a Pod on a node of another OS than the one it chooses: no image
    // lookup can change that.
    if let Some(chosen) = pod::chosen_operating_system(pod).filter(|chosen| *chosen != os) {
        let refusal = message::bound_other_os(subject, name, &placed, chosen);
        return refuse(refusal, &mut warnings, settings);
    }
    let resolved = resolve::resolve_images(images, settings, registry);
    let known = match known_images(&resolved, subject, settings, &mut warnings) {
        // A bound Pod is never pinned: no fallback for it.
        Ok((known, _)) if known.is_empty() => return Outcome::Unchanged(warnings),
        Ok((known, _)) => constraining(known, webassembly::runtime(pod, settings)),
        Err(outcome) => return outcome,
    };
    let lacking: Vec<&&ImagePlatforms> = known
        .iter()
        .filter(|image| {
            !image
                .platforms
                .as_deref()
                .unwrap_or_default()
                .iter()
                .any(fits)
        })
        .collect();
    let containers_lack = lacking.iter().any(|image| image.volume.is_none());
    let lacking: Vec<String> = lacking
        .iter()
        .map(|image| {
            let platforms = image
                .platforms
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|platform| match (&platform.os_build, build) {
                    (Some(os_build), Some(_)) => format!("{platform} {os_build}"),
                    _ => platform.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ");
            format!("{} runs only on {platforms}", message::named(image))
        })
        .collect();
    if lacking.is_empty() {
        return Outcome::Unchanged(warnings);
    }
    refuse(
        Refusal::new(
            format!("{PREFIX}: the {subject} is bound to node {name:?} ({placed}), which its images have no build for: "),
            lacking.join("; "),
            if !containers_lack {
                ". The kubelet cannot mount them there: use images with a build for that platform (an index), or list them in imagePlatforms".to_string()
            } else if build.is_some() {
                ". Its containers cannot start there (a process-isolated Windows container needs the node's architecture and OS build)".to_string()
            } else {
                ". Its containers would fail there with exec format error".to_string()
            },
        ),
        &mut warnings,
        settings,
    )
}

/// Step 4: of the images looked up, those that constrain the Pod's architecture: all but the
/// WebAssembly ones that run on any node (only WebAssembly builds, or a WebAssembly build and a
/// Pod under one of `wasmRuntimeClasses`).
fn constraining(known: Vec<&ImagePlatforms>, webassembly_runtime: bool) -> Vec<&ImagePlatforms> {
    known
        .into_iter()
        .filter(|image| !image.arch_free(webassembly_runtime))
        .collect()
}

/// Steps 3 and 4: the images whose platforms are known (platform-less artifacts left out),
/// and those whose lookup failed (as `message::named` names them), after the failures were
/// handled per `onLookupFailure` (warnings added to `warnings`); the error is the outcome when
/// they decide it.
fn known_images<'a>(
    resolved: &'a [ImagePlatforms],
    subject: &str,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Result<(Vec<&'a ImagePlatforms>, Vec<String>), Outcome> {
    // A platform-less artifact that only image volumes mount says nothing of where the Pod runs:
    // the Pod is decided as if it had no such volume.
    let (known, failed): (Vec<&ImagePlatforms>, Vec<&ImagePlatforms>) = resolved
        .iter()
        .filter(|image| !image.platformless)
        .partition(|image| image.platforms.is_ok());
    warnings.extend(
        known
            .iter()
            .filter(|image| !image.left_out.is_empty())
            .map(|image| message::left_out(image)),
    );
    if failed.is_empty() {
        return Ok((known, Vec::new()));
    }
    let failures: Vec<(String, &str)> = failed
        .iter()
        .map(|image| {
            let cause = image.platforms.as_ref().err().map_or("", String::as_str);
            (message::labelled(image), cause)
        })
        .collect();
    on_lookup_failure(Failure::images(subject, &failures), settings, warnings)?;
    // No image left: unchanged, unless `fallbackArchitectures` stand in for them (`steps`).
    if known.is_empty() && settings.fallback_architectures.is_empty() {
        return Err(Outcome::Unchanged(std::mem::take(warnings)));
    }
    Ok((known, failed.into_iter().map(message::named).collect()))
}

/// Writes what the Pod needs so that it admits exactly the nodes it admitted whose architecture
/// is in a plan's `common` (and, with `pin_os`, whose OS is that plan's): the required terms
/// (`pin_required`), and, for the architectures it may finally run on, the preferred
/// architecture and the tolerations. With several plans (images that run on several OSes), each
/// required term becomes one term per OS whose nodes it admits, each pinned for its OS. Returns
/// what changed.
fn pin(pod: &mut Value, plans: &[Plan], pin_os: bool, settings: &Settings) -> Changed {
    let [only] = plans else {
        // Every node OS runs the images, and each needs the same expressions: no OS to tell
        // apart, the Pod is pinned as for one.
        let copies: Vec<(Value, Changed)> = plans
            .iter()
            .map(|plan| {
                let mut copy = pod.clone();
                let changed = pin_required(&mut copy, plan, false, settings);
                (copy, changed)
            })
            .collect();
        let pinned_plans = copies.iter().map(|(_, c)| c.architectures).collect();
        let mut changed = match copies.as_slice() {
            [(first, changed), rest @ ..]
                if plans.len() == platform::NODE_OPERATING_SYSTEMS.len()
                    && rest.iter().all(|(copy, _)| copy == first) =>
            {
                *pod = first.clone();
                changed.clone()
            }
            _ => {
                let split = split_terms(pod, plans, pin_os, settings);
                Changed {
                    architectures: split,
                    os: split,
                    pinned_plans: Vec::new(),
                }
            }
        };
        changed.pinned_plans = pinned_plans;
        let finally: Architectures = plans.iter().flat_map(|p| p.finally.clone()).collect();
        changed.architectures |= pin_preferences(pod, &finally, settings);
        return changed;
    };
    let mut changed = pin_required(pod, only, pin_os, settings);
    changed.architectures |= pin_preferences(pod, &only.finally, settings);
    changed
}

/// For several plans: each required term (or the one new term) becomes one copy per plan whose
/// OS's nodes it admits, each pinned for its OS (`pin_required`). The first copy stays where the
/// term was, the others follow the Pod's terms (in the terms' order, then the plans'), so every
/// term the Pod wrote keeps its place. Returns whether anything changed.
fn split_terms(pod: &mut Value, plans: &[Plan], pin_os: bool, settings: &Settings) -> bool {
    let pinned: Vec<Value> = plans
        .iter()
        .map(|plan| {
            let mut copy = pod.clone();
            pin_required(&mut copy, plan, pin_os, settings);
            copy["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                .take()
        })
        .collect();
    let count = pinned
        .iter()
        .filter_map(Value::as_array)
        .map(Vec::len)
        .max()
        .unwrap_or_default();
    let original = &plans[0].constraints.terms;
    let (mut terms, mut more) = (Vec::new(), Vec::new());
    for index in 0..count {
        let empty = original
            .as_ref()
            .and_then(|terms| terms.get(index))
            .is_some_and(|term| term.empty);
        let mut copies = plans
            .iter()
            .zip(&pinned)
            .filter(|(plan, pinned)| {
                let admits = match original {
                    None => plan.constraints.selector_admits(),
                    Some(_) => plan.constraints.term_admits(index),
                };
                admits != Admits::none() && !empty && !pinned[index].is_null()
            })
            .map(|(_, pinned)| pinned[index].clone());
        // A term that admits nodes of no plan's OS (or matches nothing) stays as the first plan
        // pins it.
        terms.push(copies.next().unwrap_or_else(|| pinned[0][index].clone()));
        more.extend(copies);
    }
    terms.extend(more);
    let before = &pod["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    if before.as_array() == Some(&terms) {
        return false;
    }
    pod.get_mut("spec")
        .is_some_and(|spec| affinity::replace_required_terms(spec, terms))
}

/// Pins the Pod's required terms for one plan: the architecture expression into each term that
/// admits others, the OS expression (with `pin_os`) into each that admits nodes of another OS
/// (or one new term with what it needs), `matchNodeLabels` and the Windows builds.
fn pin_required(pod: &mut Value, plan: &Plan, pin_os: bool, settings: &Settings) -> Changed {
    let constraints = plan.constraints;
    // Per required term (or the one new term): the architecture expression where it admits
    // others, the OS expression where it admits nodes of another OS.
    let per_term = |index: Option<usize>| {
        let admits = match index {
            None => constraints.selector_admits(),
            Some(index) => constraints.term_admits(index),
        };
        let architecture = (!admits.within(&plan.common, &plan.universe))
            .then(|| affinity::architecture_expression(&plan.common));
        let os = (pin_os && admits_other_os(pod, &constraints.os, index))
            .then(|| affinity::operating_system_expression(&constraints.os));
        (architecture, os)
    };
    let (architectures, operating_systems): (Vec<Vec<Value>>, Vec<Vec<Value>>) =
        match &constraints.terms {
            None => vec![per_term(None)],
            Some(terms) => (0..terms.len())
                .map(|index| match terms[index].empty {
                    true => (None, None),
                    false => per_term(Some(index)),
                })
                .collect(),
        }
        .into_iter()
        .map(|(architecture, os)| (Vec::from_iter(architecture), Vec::from_iter(os)))
        .unzip();
    // Only a value a node label can hold: the Pod's labels are not validated yet when mutating
    // admission runs, and the API server would refuse the Pod for it.
    let mut labels: Vec<(String, Vec<String>)> = settings
        .match_node_labels
        .iter()
        .filter_map(|key| {
            pod::label(pod, key)
                .filter(|value| settings::check_label_value(value).is_ok())
                .map(|value| (key.clone(), vec![value.to_string()]))
        })
        .collect();
    if let Some(builds) = &plan.builds {
        labels.push((
            platform::WINDOWS_BUILD_LABEL.to_string(),
            builds.iter().cloned().collect(),
        ));
    }
    let mut changed = Changed::default();
    let Some(spec) = pod.get_mut("spec") else {
        return changed;
    };
    if architectures.iter().any(|added| !added.is_empty()) || !labels.is_empty() {
        changed.architectures |= affinity::constrain_required(spec, &architectures, &labels);
    }
    // After the architectures and labels: the expressions the policy adds keep their order.
    if operating_systems.iter().any(|added| !added.is_empty()) {
        changed.os = affinity::constrain_required(spec, &operating_systems, &[]);
    }
    changed
}

/// The preferred architectures (where the Pod has a choice among `finally`, and weighs none
/// itself) and the tolerations of `finally`. Returns whether anything changed.
fn pin_preferences(pod: &mut Value, finally: &Architectures, settings: &Settings) -> bool {
    // Preferences matter only where the Pod has a choice.
    let preferred: Vec<(String, i64)> = preferences(pod, settings)
        .into_iter()
        .filter(|(arch, _)| finally.len() > 1 && finally.contains(*arch))
        .map(|(arch, weight)| (arch.to_string(), weight))
        .collect();
    let Some(spec) = pod.get_mut("spec") else {
        return false;
    };
    let mut changed = false;
    // A Pod that already weighs architectures keeps its own preferences.
    if !preferred.is_empty() && !affinity::has_preferred_architecture(spec) {
        if let Some(list) = edit::array_at(spec, &PREFERRED_PATH) {
            for (arch, weight) in &preferred {
                list.push(affinity::preferred_term(arch, *weight));
            }
            changed = true;
        }
    }
    changed | tolerations::add_for(spec, finally, &settings.architecture_tolerations)
}

/// What `pin` changed: what the architectures need (with `matchNodeLabels`, preferences and
/// tolerations), and the OS expression; with several plans, which of them had their
/// architectures pinned.
#[derive(Debug, Default, Clone)]
struct Changed {
    architectures: bool,
    os: bool,
    pinned_plans: Vec<bool>,
}

/// The architectures to prefer and their weights: the Pod's annotation (with
/// `preferredArchitectureWeight`), else the settings (`preferredArchitectures`, or
/// `preferredArchitecture`).
fn preferences<'a>(pod: &'a Value, settings: &'a Settings) -> Vec<(&'a str, i64)> {
    match pod::annotation(pod, PREFERRED_ANNOTATION)
        .filter(|arch| platform::KNOWN_ARCHITECTURES.contains(arch))
    {
        Some(arch) => vec![(arch, settings.preferred_architecture_weight)],
        None => settings.preferences(),
    }
}

fn record_architectures(pod: &mut Value, recorded: String) {
    if let Some(annotations) = edit::object_at(pod, &["metadata", "annotations"]) {
        annotations.insert(
            ARCHITECTURES_ANNOTATION.to_string(),
            Value::String(recorded),
        );
    }
}

/// No architecture both runs every image and is admitted by the Pod's own constraints (or the
/// cluster's nodes): reject, or accept unchanged with a warning (`onNoCommonArchitecture:
/// accept`). Takes the warnings gathered so far.
fn refuse(refusal: Refusal, warnings: &mut Vec<String>, settings: &Settings) -> Outcome {
    let mut warnings = std::mem::take(warnings);
    let Refusal {
        lead,
        listing,
        tail,
    } = refusal;
    match settings.on_no_common_architecture {
        OnNoCommonArchitecture::Reject => {
            Outcome::Rejected(format!("{lead}{listing}{tail}"), warnings)
        }
        OnNoCommonArchitecture::Accept => {
            warnings.push(capped(
                &lead,
                &listing,
                &format!(
                    "{tail} (accepted without an architecture constraint: setting onNoCommonArchitecture: accept)"
                ),
            ));
            Outcome::Unchanged(warnings)
        }
    }
}

/// The Windows OS builds (`major.minor.build`) that every known image has a build for on one of
/// `architectures`: `None` when no image says (an image with a Windows platform without
/// `os.version` runs on any build); the error is the rejection message when they share none.
fn windows_builds(
    known: &[&ImagePlatforms],
    architectures: &Architectures,
    subject: &str,
) -> Result<Option<Architectures>, Refusal> {
    let mut shared: Option<Architectures> = None;
    let mut each = Vec::new();
    for image in known {
        let platforms: Vec<&platform::Platform> = image
            .platforms
            .as_deref()
            .unwrap_or_default()
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
        each.push(format!(
            "{} is built for {}",
            message::named(image),
            platform::join(&builds, ", ")
        ));
        shared = Some(match shared {
            None => builds,
            Some(so_far) => so_far.intersection(&builds).cloned().collect(),
        });
    }
    match shared {
        Some(builds) if builds.is_empty() => Err(Refusal::new(
            format!("{PREFIX}: no Windows OS build runs every image of this {subject}: "),
            each.join("; "),
            ". A Windows node runs a process-isolated container only on the OS build it was built for (node.kubernetes.io/windows-build; setting pinWindowsBuild)".to_string(),
        )),
        other => Ok(other),
    }
}

/// The architectures on which every known image runs for `os`; the error is the rejection
/// message naming each image and what it has.
fn image_architectures(
    known: &[&ImagePlatforms],
    os: &str,
    subject: &str,
) -> Result<Architectures, Refusal> {
    let per_image: Vec<(&ImagePlatforms, Architectures)> = known
        .iter()
        .map(|image| {
            let architectures = image
                .platforms
                .as_deref()
                .unwrap_or_default()
                .iter()
                .filter(|platform| platform.runs_on(os))
                .map(|platform| platform.architecture.clone())
                .collect();
            (*image, architectures)
        })
        .collect();
    let mut common: Option<Architectures> = None;
    for (_, architectures) in &per_image {
        common = Some(match common {
            None => architectures.clone(),
            Some(so_far) => so_far.intersection(architectures).cloned().collect(),
        });
    }
    let common = common.unwrap_or_default();
    if common.is_empty() {
        let each = per_image
            .iter()
            .map(|(image, architectures)| message::describe_image(image, architectures, os))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Refusal::new(
            format!("{PREFIX}: no {os} node architecture runs every image of this {subject}: "),
            each,
            ". Use images built for a common architecture".to_string(),
        ));
    }
    Ok(common)
}
