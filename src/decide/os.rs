//! The node OSes a Pod may run on besides its own (images built for several OSes), and whether
//! its own constraints admit nodes of another OS.

use crate::platform::{self, Architectures};
use crate::read::constraint::Admits;
use crate::read::pod::Pod;
use crate::read::resolve::ImagePlatforms;

use super::facts::OtherOs;
use super::images::image_architectures;

/// The node OSes other than `os` a Pod that does not choose its OS (`spec.os`, the nodeSelector)
/// may run on: those whose nodes its constraints admit and on which every known image runs (all
/// of them, on every architecture, where no known image constrains the platform).
pub fn other_operating_systems(
    pod: &Pod,
    os: &str,
    known: &[&ImagePlatforms],
    subject: &str,
) -> Vec<OtherOs> {
    if pod.chosen_os.is_some() {
        return Vec::new();
    }
    platform::other_operating_systems(os)
        .filter_map(|other| {
            let constraints = pod.on(other)?.clone();
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

/// Whether the Pod admits a node of an OS other than `os`: through required term `index` with
/// its nodeSelector, or (`None`) through any of its constraints (`Constraints::admits`).
pub fn admits_other_os(pod: &Pod, os: &str, term: Option<usize>) -> bool {
    platform::other_operating_systems(os).any(|other| {
        let Some(constraints) = pod.on(other) else {
            return false;
        };
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
/// Pod whose node affinity can no longer change is kept off the others (`after_admission`),
/// where a Pod being created would be pinned to its OS all the same. Errors are the host's.
pub fn admitted_on_other_os(
    pod: &Pod,
    os: &str,
    mut architectures_of: impl FnMut(&str) -> Result<Option<Architectures>, String>,
) -> Result<bool, String> {
    for other in platform::other_operating_systems(os) {
        let Some(admits) = pod.on(other).map(|constraints| constraints.admits()) else {
            continue;
        };
        if admits == Admits::none() {
            continue;
        }
        let Some(architectures) = architectures_of(other)? else {
            continue;
        };
        let universe = platform::or_every(&architectures);
        if !admits.among(&universe).is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}
