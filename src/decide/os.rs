//! The node OSes a Pod may run on besides its own (images built for several OSes), and what the
//! cluster has of them with `readNodes`: each read once, and only for an outcome the OS pin can
//! change.

use serde_json::Value;

use crate::message::Failure;
use crate::platform::{self, Architectures};
use crate::read::cache::ClusterCache;
use crate::read::constraint::{Admits, Constraints};
use crate::read::nodes::{self, Pools, Schedulable};
use crate::read::pod;
use crate::read::resolve::ImagePlatforms;

use super::facts::{Facts, OtherOs};
use super::images::image_architectures;
use super::outcome::{on_lookup_failure, Outcome};

/// The node OSes other than `os` a Pod that does not choose its OS (`spec.os`, the nodeSelector)
/// may run on: those whose nodes its constraints admit and on which every known image runs (all
/// of them, on every architecture, where no known image constrains the platform).
pub(super) fn other_operating_systems(
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
            let image_common = match known.is_empty() {
                true => platform::every_architecture(),
                false => image_architectures(known, other, subject).ok()?,
            };
            Some(OtherOs {
                constraints,
                image_common,
            })
        })
        .collect()
}

/// What `read_other_operating_systems` read: whether the cluster has nodes of another OS, the
/// Nodes of each of `Facts::others` it has (by index), and the warnings so far.
pub(super) struct OthersRead {
    pub(super) found: bool,
    pub(super) present: Vec<(usize, Schedulable)>,
    pub(super) warnings: Vec<String>,
}

/// With `readNodes`, for a Pod whose images run on other OSes too (`Facts::others`): every Node
/// of each other OS (one list each, `kubernetes.io/os=<os>`, the list that tells whether the
/// cluster has any), with its `autoscaledArchitectures` pools. Returns whether the cluster has
/// nodes of another OS (NodePools left out by their `minValues` included), and the other OSes it
/// has nodes of, by index in `Facts::others`. Nodes that cannot be read follow `onLookupFailure`
/// (`ignoreImage`: the Pod keeps to its own OS).
pub(super) fn read_other_operating_systems(
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
    // An OS whose only pools are NodePools left out by their `minValues` serves the Pod none of
    // its architectures, but one not kept to its own OS may admit enough of them to be served.
    let left_out = facts
        .others
        .iter()
        .any(|other| !pools(&other.constraints.os).min_values_unmet.is_empty());
    Ok((!present.is_empty() || left_out, present))
}

/// With `readNodes`: whether the cluster has nodes of an OS other than the Pod's
/// (`nodes::other_operating_system`), read only for a Pod the OS pin could change: one whose
/// images constrain where it runs (or that names its OS in `spec.os`) and whose own constraints
/// admit nodes of another OS. Nodes that cannot be read follow `onLookupFailure` (`ignoreImage`:
/// the Pod is pinned to its OS).
pub(super) fn other_operating_system(
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
    let found = match facts.subject.counts_admitted_other_os() {
        false => nodes::other_operating_system(cluster, os, pools),
        true => admitted_on_other_os(pod, os, |other| {
            nodes::of_operating_system(cluster, other, &pools(other))
                .map(|read| read.map(|schedulable| schedulable.architectures))
        }),
    };
    match found {
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
pub(super) fn admits_other_os(pod: &Value, os: &str, term: Option<usize>) -> bool {
    platform::other_operating_systems(os).any(|other| {
        let constraints = Constraints::read(&pod["spec"], other);
        let admits = match term {
            None => constraints.admits(),
            Some(index) => constraints.term_admits(index),
        };
        admits != Admits::none()
    })
}

/// After admission, whether the Pod may be on a node of an OS other than `os`: one the cluster
/// may have (`architectures_of(other)`: the architectures its nodes of `other` may have, empty
/// when unknown, `None` when it has none) whose architecture the Pod's own constraints admit. A
/// Pod whose node affinity can no longer change is kept off the others (`after::judge`), where
/// a Pod being created would be pinned to its OS all the same. Errors are the host's.
pub(super) fn admitted_on_other_os(
    pod: &Value,
    os: &str,
    mut architectures_of: impl FnMut(&str) -> Result<Option<Architectures>, String>,
) -> Result<bool, String> {
    for other in platform::other_operating_systems(os) {
        let admits = Constraints::read(&pod["spec"], other).admits();
        if admits == Admits::none() {
            continue;
        }
        let universe = match architectures_of(other)? {
            None => continue,
            Some(architectures) if architectures.is_empty() => platform::every_architecture(),
            Some(architectures) => architectures,
        };
        if !admits.among(&universe).is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}
