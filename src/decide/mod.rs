//! The decision on one Pod or Pod template, the same for both, in the steps of docs/design.md:
//! this file is the pipeline (`steps`) and its outcomes; each step's decisions have a module of
//! their own (`images`, `os`, `settle`, `cluster`, `bound`, `windows`, `outcome`), and
//! `workload` finds a workload's Pod template. It reads through `read` (the Pod, its images'
//! platforms, the cluster through one `ClusterCache`), words its refusals with `message`, and
//! has `edit` write the pins it settled on. Plain Rust over plain data: `policy` routes
//! requests here.

mod bound;
mod cluster;
mod images;
mod os;
mod outcome;
mod settle;
mod windows;
pub mod workload;

use serde_json::Value;

use crate::host::cluster::Cluster;
use crate::host::registry::Registry;
use crate::message::{self, Refusal};
use crate::platform::{self, Architectures};
use crate::read::cache::ClusterCache;
use crate::read::constraint::Constraints;
use crate::read::nodes::Schedulable;
use crate::read::pod::{self, PodImage};
use crate::read::resolve::{self, ImagePlatforms};
use crate::read::webassembly;
use crate::settings::Settings;

pub use crate::edit::pin::ARCHITECTURES_ANNOTATION;
pub use crate::message::PREFIX;
pub use crate::read::pod::PREFERRED_ANNOTATION;

use self::bound::decide_bound;
use self::cluster::settle_from_cluster;
use self::images::{constraining, image_architectures, known_images};
use self::os::other_operating_systems;
use self::outcome::refuse;
use self::settle::settle;

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
