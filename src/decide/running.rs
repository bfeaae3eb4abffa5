//! After admission, where a Pod can be is bounded by the images it runs. A bound Pod's, by those
//! the kubelet has shown to run there (`pod_update::started_images` of the Pod before the update:
//! containers that started, the ones a swap replaces too); one whose containers never started
//! bounds nothing: it may have been admitted where its images do not run (a DaemonSet's, one
//! created bound). A Pod not yet placed, by its images but the new ones: it will be placed where
//! they run, or fail whatever the new ones run on. So an image swap
//! or `kubectl debug` is judged against the platforms those images run on too, not only those
//! its constraints and the cluster allow. They are looked up only where that can change the
//! answer: not where the new images run on every platform the settings allow, nor where they
//! constrain nothing, nor where they run on none of the architectures the Pod's constraints admit
//! (the Pod is refused however its other images narrow where it is).

use crate::host::registry::Registry;
use crate::platform::{self, Architectures, NODE_OPERATING_SYSTEMS};
use crate::read::pod::{Pod, PodImage};
use crate::read::resolve::{self, ImagePlatforms, Learned};
use crate::read::webassembly;
use crate::settings::Settings;

use super::images::constraining;

/// The platforms every image a Pod already runs runs on.
#[derive(Debug, Clone, PartialEq)]
pub struct Running {
    /// Per node OS, the architectures they all run on there.
    by_os: Vec<(&'static str, Architectures)>,
    /// The Windows OS builds they all have, where each names its builds.
    pub builds: Option<Architectures>,
}

impl Running {
    /// The architectures of `os` they all run on (none: they share none there).
    pub fn architectures(&self, os: &str) -> Option<&Architectures> {
        self.by_os.iter().find(|(o, _)| *o == os).map(|(_, a)| a)
    }
}

/// What the images the Pod runs run on (a bound Pod's: those it has run on its node, `ran`;
/// else its images but `new`), where the new ones (`resolved`) do not run on every platform the
/// settings allow; `None` where they do, or where nothing is known of the others (none ran, none
/// constrains, none could be looked up).
pub fn running(
    pod: &Pod,
    new: &[PodImage],
    ran: &[PodImage],
    resolved: &[ImagePlatforms],
    settings: &Settings,
    registry: &mut dyn Registry,
) -> Option<Running> {
    let wasm_runtime = webassembly::runtime(pod.runtime_class, settings);
    let new_known = known(resolved, wasm_runtime);
    if new_known.is_empty() {
        return None;
    }
    // Per OS the Pod may be on (`oses`), the architectures the new images all run on there.
    let new_common: Vec<Architectures> = oses(pod, settings)
        .map(|os| common(&new_known, os))
        .collect();
    let allowed = allowed(settings);
    if covers_the_settings(&new_common, &allowed)
        || runs_on_none_admitted(&new_common, pod, &allowed)
    {
        return None;
    }
    let before: Vec<PodImage> = match pod.bound_node {
        Some(_) => ran.to_vec(),
        None => pod
            .images
            .iter()
            .filter(|image| !new.iter().any(|n| n.reference == image.reference))
            .copied()
            .collect(),
    };
    if before.is_empty() {
        return None;
    }
    let looked_up = resolve::resolve_images(&before, settings, registry);
    let known = known(&looked_up, wasm_runtime);
    if known.is_empty() {
        return None;
    }
    let by_os = NODE_OPERATING_SYSTEMS
        .into_iter()
        .map(|os| (os, common(&known, os)))
        .collect();
    Some(Running {
        by_os,
        builds: builds(&known),
    })
}

/// The images looked up that constrain the platform.
fn known(resolved: &[ImagePlatforms], wasm_runtime: bool) -> Vec<&ImagePlatforms> {
    let looked_up = resolved
        .iter()
        .filter(|image| matches!(image.found, Learned::Built { .. }))
        .collect();
    constraining(looked_up, wasm_runtime)
}

/// The Windows OS builds every one of `known` that has a Windows build has, where each names its
/// builds (one that does not runs on any build).
fn builds(known: &[&ImagePlatforms]) -> Option<Architectures> {
    let mut shared: Option<Architectures> = None;
    for image in known {
        let windows: Vec<_> = image
            .platforms()
            .iter()
            .filter(|p| p.runs_on("windows"))
            .collect();
        if windows.is_empty() || windows.iter().any(|p| p.os_build.is_none()) {
            continue;
        }
        let builds: Architectures = windows.iter().filter_map(|p| p.os_build.clone()).collect();
        shared = Some(match shared {
            None => builds,
            Some(so_far) => so_far.intersection(&builds).cloned().collect(),
        });
    }
    shared
}

/// The architectures every one of `known` runs on for `os`.
fn common(known: &[&ImagePlatforms], os: &str) -> Architectures {
    let mut each = known.iter().map(|image| image.architectures_on(os));
    let first = each.next().unwrap_or_default();
    each.fold(first, |so_far, next| {
        so_far.intersection(&next).cloned().collect()
    })
}

/// Whether the new images, running on `new_common` per OS the Pod may be on (its own and those
/// `clusterOperatingSystems` lists), run on every platform the settings allow there (`allowed`).
fn covers_the_settings(new_common: &[Architectures], allowed: &Architectures) -> bool {
    new_common.iter().all(|common| allowed.is_subset(common))
}

/// Whether the new images, running on `new_common` per OS the Pod may be on, run on none of the
/// allowed architectures the Pod's constraints admit (which admit one at least) on any of them.
fn runs_on_none_admitted(new_common: &[Architectures], pod: &Pod, allowed: &Architectures) -> bool {
    let admitted = pod.constraints.admits().among(allowed);
    !admitted.is_empty()
        && new_common
            .iter()
            .all(|common| common.is_disjoint(&admitted))
}

/// Every architecture the settings allow a node of.
fn allowed(settings: &Settings) -> Architectures {
    match settings.read_nodes {
        true => platform::every_architecture(),
        false => platform::or_every(&settings.schedulable()),
    }
}

/// The Pod's OS, then those `clusterOperatingSystems` lists.
fn oses<'a>(pod: &'a Pod, settings: &'a Settings) -> impl Iterator<Item = &'a str> {
    let own = pod.constraints.os.as_str();
    std::iter::once(own).chain(
        settings
            .cluster_operating_systems
            .iter()
            .map(String::as_str),
    )
}
