//! A Pod bound to a Node (`spec.nodeName`, a DaemonSet Pod's target), with `readNodes`: judged
//! against that Node's platform, never pinned.

use std::ops::ControlFlow;

use crate::host::registry::Registry;
use crate::message::{self, Failure};
use crate::platform;
use crate::read::cluster::ClusterReader;
use crate::read::node::Node;
use crate::read::pod::{Pod, PodImage};
use crate::read::resolve::{self, ImagePlatforms};
use crate::read::webassembly;
use crate::settings::Settings;

use super::answer::{on_lookup_failure, refuse, settled, Answer};
use super::images::{constraining, known_images};
use super::subject::Subject;
use super::windows_builds::{process_isolated, windows_builds_named};

/// A Pod bound to a node (`spec.nodeName`, or a DaemonSet Pod's target node), with `readNodes`:
/// accepted unchanged when every image runs on the node's OS and architecture, else rejected
/// (or, with `onNoCommonArchitecture: accept`, accepted with a warning). It is never pinned: the
/// scheduler does not place it. A node that cannot be read follows `onLookupFailure`.
pub fn judge(
    images: &[PodImage],
    name: &str,
    pod: &Pod,
    subject: Subject,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut ClusterReader,
) -> Answer {
    let (after_admission, subject) = (subject.after_admission(), subject.name());
    let mut warnings = Vec::new();
    let node = match cluster.bound_node(name) {
        Ok(node) => node,
        Err(cause) => {
            let failure = Failure::bound_node(name, subject, cause);
            let read = on_lookup_failure(failure, settings, &mut warnings);
            return settled(read.map_continue(|()| Answer::Unchanged(warnings)));
        }
    };
    let (os, arch) = platform_of(&node, pod, settings);
    // The kubelet refuses a Pod on a node of another OS than the one it chooses: no image
    // lookup can change that. (After admission only the new images are judged: the Pod's place
    // was settled before them.)
    let chosen = pod.chosen_os.filter(|_| !after_admission);
    if let Some(chosen) = chosen.filter(|chosen| *chosen != os) {
        let build = node.windows_build.as_deref();
        let build = build.filter(|_| settings.pin_windows_build && os == "windows");
        let placed = message::placed(os, arch, build);
        let refusal = message::bound_other_os(subject, name, &placed, chosen);
        return refuse(refusal, &mut warnings, settings);
    }
    let bound = Bound {
        name,
        node: &node,
        os,
        arch,
        pod,
        subject,
        after_admission,
    };
    let resolved = resolve::resolve_images(images, settings, registry);
    judge_images(&bound, &resolved, settings, cluster, warnings)
}

/// A Pod bound to a Node, where the Node was read.
struct Bound<'a> {
    name: &'a str,
    node: &'a Node,
    os: &'a str,
    arch: &'a str,
    pod: &'a Pod<'a>,
    subject: &'a str,
    after_admission: bool,
}

/// The answer on a bound Pod's images (`resolved`): accepted where each runs on the Node.
fn judge_images(
    bound: &Bound,
    resolved: &[ImagePlatforms],
    settings: &Settings,
    cluster: &mut ClusterReader,
    mut warnings: Vec<String>,
) -> Answer {
    let Bound {
        name,
        node,
        os,
        arch,
        pod,
        subject,
        after_admission,
    } = *bound;
    let known = match known_images(resolved, subject, settings, &mut warnings) {
        // A bound Pod is never pinned: no fallback for it.
        ControlFlow::Continue((known, _)) if known.is_empty() => {
            return Answer::Unchanged(warnings)
        }
        ControlFlow::Continue((known, _)) => {
            constraining(known, webassembly::runtime(pod.runtime_class, settings))
        }
        ControlFlow::Break(answer) => return answer,
    };
    // A Windows Node's OS build counts for a process-isolated Pod whose images name builds (a
    // platform that names none runs on any build); where none does, `pinWindowsBuild` still
    // names it in messages.
    let build = node.windows_build.as_deref().filter(|_| os == "windows");
    let build = match build {
        Some(_) if windows_builds_named(&known) => {
            match process_isolated(pod, subject, settings, cluster, &mut warnings) {
                ControlFlow::Continue(isolated) => build.filter(|_| isolated),
                ControlFlow::Break(answer) => return answer,
            }
        }
        _ => build.filter(|_| settings.pin_windows_build),
    };
    let fits = |platform: &platform::Platform| {
        platform.runs_on(os)
            && platform.architecture == arch
            && build.is_none_or(|build| platform.os_build.as_deref().is_none_or(|b| b == build))
    };
    let lacking: Vec<&&ImagePlatforms> = known
        .iter()
        .filter(|image| !image.platforms().iter().any(fits))
        .collect();
    if lacking.is_empty() {
        return Answer::Unchanged(warnings);
    }
    let placed = message::placed(os, arch, build);
    let after_admission = after_admission.then_some(pod);
    let refusal =
        message::bound_without_build(subject, name, &placed, &lacking, build, after_admission);
    refuse(refusal, &mut warnings, settings)
}

/// The platform of the Node a Pod is bound to: its OS (the Pod's when the Node says none) and
/// architecture.
fn platform_of<'a>(node: &'a Node, pod: &'a Pod, settings: &'a Settings) -> (&'a str, &'a str) {
    let pod_os = pod.chosen_os.unwrap_or(&settings.default_operating_system);
    let os = node.os.as_deref().unwrap_or(pod_os);
    (os, node.architecture.as_deref().unwrap_or_default())
}
