//! What a Pod UPDATE brings (`update`): the images of the containers it adds or gives another
//! image, but those the Pod already ran, and, for a bound Pod, the images the kubelet has shown
//! to run on its node (`started_images`, read from the old object's container statuses).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::image::ImageRef;
use crate::read::pod::PodImage;

/// What a Pod UPDATE brings, and what bounds it.
#[derive(Debug, Default, PartialEq)]
pub struct Update<'a> {
    /// The images of the containers, init containers and ephemeral containers the UPDATE adds or
    /// gives another image (image volumes cannot change) that the old Pod has not already run,
    /// in any spelling of the same reference (`busybox` is `docker.io/library/busybox:latest`),
    /// each once: a bound Pod has run those its statuses show started (`ran`), a Pod not yet
    /// placed every image it named. Another container's image that never started on the Pod's
    /// node is new there.
    pub new: Vec<PodImage<'a>>,
    /// A bound Pod's images the kubelet has shown to run on its node (`started_images`), read
    /// only where the UPDATE changes an image; none for a Pod not yet placed.
    pub ran: Vec<PodImage<'a>>,
}

/// What the UPDATE from `old` to `new` brings (`Update`). Most UPDATEs change no image: nothing
/// is read then but the two lists of containers.
pub fn update<'a>(new: &'a Value, old: &'a Value) -> Update<'a> {
    let changed = changed_images(new, old);
    if changed.is_empty() {
        return Update::default();
    }
    let bound = old["spec"]["nodeName"]
        .as_str()
        .is_some_and(|n| !n.is_empty());
    let ran = match bound {
        true => started_images(old),
        false => Vec::new(),
    };
    // What the Pod has run, then each image brought once.
    let mut seen: BTreeSet<String> = match bound {
        true => ran
            .iter()
            .map(|image| canonical_text(image.reference))
            .collect(),
        false => container_images(old).map(canonical_text).collect(),
    };
    let new = changed
        .into_iter()
        .filter(|reference| seen.insert(canonical_text(reference)))
        .map(|reference| PodImage {
            reference,
            volume: None,
        })
        .collect();
    Update { new, ran }
}

/// The images of the new object's containers that the old object's container of the same kind
/// and name did not name (in any spelling): those of the containers the UPDATE adds or gives
/// another image.
fn changed_images<'a>(new: &'a Value, old: &Value) -> Vec<&'a str> {
    containers(new)
        .filter_map(|(list, container)| {
            let image = container["image"].as_str()?;
            let kept = old["spec"][list]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .any(|before| {
                    before["name"] == container["name"]
                        && before["image"].as_str().is_some_and(|b| {
                            b == image || canonical_text(b) == canonical_text(image)
                        })
                });
            (!kept).then_some(image)
        })
        .collect()
}

/// The images the kubelet has shown to run on the Pod's node: those of its containers, init
/// containers and ephemeral containers whose status (the stored one, which a spec UPDATE cannot
/// change) says the container's current run started, runs, or exited 0, for the image the spec
/// names (compared in canonical form); the run before (`lastState`) may be of another image. A
/// container that never started (`exec format error`) proves nothing, nor
/// does a Pod no kubelet has reported on: a Pod admitted where its images do not run (a
/// DaemonSet's, one created bound, one created while the policy was down) bounds nothing.
pub fn started_images(pod: &Value) -> Vec<PodImage<'_>> {
    let mut images: Vec<PodImage> = Vec::new();
    for (list, statuses) in [
        ("initContainers", "initContainerStatuses"),
        ("containers", "containerStatuses"),
        ("ephemeralContainers", "ephemeralContainerStatuses"),
    ] {
        let statuses = pod["status"][statuses]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for container in pod["spec"][list]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let Some(reference) = container["image"].as_str() else {
                continue;
            };
            let name = container["name"].as_str();
            let status = statuses
                .iter()
                .find(|status| name.is_some() && status["name"].as_str() == name);
            if status.is_some_and(|status| ran(status, reference))
                && !images.iter().any(|image| image.reference == reference)
            {
                images.push(PodImage {
                    reference,
                    volume: None,
                });
            }
        }
    }
    images
}

/// Whether a container status shows `reference` ran: its current run started, runs, or exited
/// 0, with the status's image the same reference.
fn ran(status: &Value, reference: &str) -> bool {
    let same_image = status["image"]
        .as_str()
        .and_then(canonical)
        .is_some_and(|image| Some(image) == canonical(reference));
    same_image
        && (status["started"] == true
            || status["state"]["running"].is_object()
            || status["state"]["terminated"]["exitCode"].as_i64() == Some(0))
}

/// The references the Pod's containers, init containers and ephemeral containers run, in order.
fn container_images(pod: &Value) -> impl Iterator<Item = &str> {
    containers(pod).filter_map(|(_, container)| container["image"].as_str())
}

/// The Pod's containers, init containers and ephemeral containers, each with its list's name.
fn containers(pod: &Value) -> impl Iterator<Item = (&'static str, &Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |list| {
            pod["spec"][list]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(move |container| (list, container))
        })
}

/// A reference in canonical form (`busybox` is `docker.io/library/busybox:latest`); none where
/// it does not parse.
fn canonical(reference: &str) -> Option<String> {
    ImageRef::parse(reference).ok().map(|r| r.to_string())
}

/// A reference in canonical form, or as written where it does not parse.
fn canonical_text(reference: &str) -> String {
    canonical(reference).unwrap_or_else(|| reference.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_update_brings_the_changed_containers_images_its_pod_has_not_run() {
        let old = json!({
            "spec": {
                "nodeName": "node-1",
                "containers": [
                    {"name": "app", "image": "ghcr.io/org/app:1"},
                    {"name": "sidecar", "image": "ghcr.io/org/sidecar:1"},
                    {"name": "never", "image": "ghcr.io/org/never:1"}
                ]
            },
            "status": {"containerStatuses": [
                {"name": "app", "image": "ghcr.io/org/app:1", "started": true},
                {"name": "sidecar", "image": "ghcr.io/org/sidecar:1", "started": true},
                {"name": "never", "image": "ghcr.io/org/never:1", "started": false}
            ]}
        });
        let references = |images: &[PodImage]| -> Vec<String> {
            images.iter().map(|i| i.reference.to_string()).collect()
        };
        // No image changes: nothing is read.
        let mut relabelled = old.clone();
        relabelled["metadata"] = json!({"labels": {"a": "b"}});
        assert_eq!(update(&relabelled, &old), Update::default());
        // The app takes the sidecar's image (run), then the one that never started (new), and
        // a debug container runs the app's image.
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("ghcr.io/org/sidecar:1");
        let brought = update(&new, &old);
        assert_eq!(references(&brought.new), Vec::<String>::new());
        assert_eq!(
            references(&brought.ran),
            ["ghcr.io/org/app:1", "ghcr.io/org/sidecar:1"]
        );
        new["spec"]["containers"][0]["image"] = json!("ghcr.io/org/never:1");
        new["spec"]["ephemeralContainers"] =
            json!([{"name": "debug", "image": "ghcr.io/org/app:1"}]);
        assert_eq!(references(&update(&new, &old).new), ["ghcr.io/org/never:1"]);
        // Not yet placed: every image the old Pod named counts as run.
        let mut pending = old.clone();
        pending["spec"]["nodeName"] = json!(null);
        let mut new = pending.clone();
        new["spec"]["containers"][0]["image"] = json!("ghcr.io/org/never:1");
        new["spec"]["containers"][1]["image"] = json!("docker.io/library/busybox:latest");
        new["spec"]["containers"][2]["image"] = json!("busybox");
        let brought = update(&new, &pending);
        assert_eq!(
            references(&brought.new),
            ["docker.io/library/busybox:latest"]
        );
        assert_eq!(brought.ran, Vec::new());
    }

    #[test]
    fn started_images_are_those_whose_current_run_shows_they_ran() {
        let pod = json!({
            "spec": {
                "initContainers": [{"name": "init", "image": "busybox"}],
                "containers": [
                    {"name": "app", "image": "ghcr.io/org/app:1"},
                    {"name": "crashing", "image": "ghcr.io/org/crash:1"},
                    {"name": "swapped", "image": "ghcr.io/org/new:1"},
                    {"name": "restarted", "image": "ghcr.io/org/restarted:1"},
                    {"image": "ghcr.io/org/nameless:1"}
                ],
                "ephemeralContainers": [{"name": "debugger", "image": "ghcr.io/org/debug:1"}]
            },
            "status": {
                // Another spelling of the same reference; completed.
                "initContainerStatuses": [{"name": "init", "image": "docker.io/library/busybox:latest",
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
                "containerStatuses": [
                    {"name": "app", "image": "ghcr.io/org/app:1", "started": true,
                     "state": {"running": {}}},
                    {"name": "crashing", "image": "ghcr.io/org/crash:1", "started": false,
                     "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                     "lastState": {"terminated": {"exitCode": 1}}},
                    // The status of the image before the swap.
                    {"name": "swapped", "image": "ghcr.io/org/old:1", "started": true,
                     "state": {"running": {}}},
                    // The run before exited 0; this one never started.
                    {"name": "restarted", "image": "ghcr.io/org/restarted:1", "started": false,
                     "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                     "lastState": {"terminated": {"exitCode": 0}}},
                    {"image": "ghcr.io/org/nameless:1", "started": true, "state": {"running": {}}}
                ],
                "ephemeralContainerStatuses": [{"name": "debugger", "image": "ghcr.io/org/debug:1",
                    "state": {"running": {}}}]
            }
        });
        let started: Vec<&str> = started_images(&pod)
            .iter()
            .map(|image| image.reference)
            .collect();
        assert_eq!(
            started,
            ["busybox", "ghcr.io/org/app:1", "ghcr.io/org/debug:1"]
        );
        assert_eq!(started_images(&json!({"spec": pod["spec"]})), []);
    }
}
