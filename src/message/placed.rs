//! A Pod already placed: the refusals of a Pod bound to a Node its images or its OS do not fit,
//! and of a Pod after admission whose new images lack a build where it runs or may run.

use super::naming::{named, run_by};
use super::text::{Refusal, PREFIX};
use crate::platform::{self, Architectures};
use crate::read::pod::Pod;
use crate::read::resolve::ImagePlatforms;

/// The platform of a bound Pod's Node, as refusals name it: `linux/arm64`, or `windows/amd64,
/// OS build 10.0.20348` where the build counts.
pub(crate) fn placed(os: &str, arch: &str, build: Option<&str>) -> String {
    match build {
        Some(build) => format!("{os}/{arch}, OS build {build}"),
        None => format!("{os}/{arch}"),
    }
}

/// A Pod bound to a node of another OS than the one it chooses (`spec.os`, or a nodeSelector
/// on the OS label): the kubelet refuses it there, whatever its images run on. The DaemonSet
/// controller puts a Pod on every node its template admits, and `spec.os` alone does not keep
/// it off the others.
pub(crate) fn bound_other_os(subject: &str, node: &str, placed: &str, os: &str) -> Refusal {
    Refusal::new(
        format!("{PREFIX}: the {subject} is bound to node {node:?} ({placed}), but it asks for "),
        platform::quoted(os),
        " nodes (spec.os or its nodeSelector): the kubelet refuses it there. Give what creates it \
         a nodeSelector on kubernetes.io/os for that OS"
            .to_string(),
    )
}

/// A Pod bound to Node `node` (on `placed`) with images that have no build for it (`lacking`,
/// each with its platforms; their OS builds where the Node's `build` counts).
pub(crate) fn bound_without_build(
    subject: &str,
    node: &str,
    placed: &str,
    lacking: &[&&ImagePlatforms],
    build: Option<&str>,
    after_admission: Option<&Pod>,
) -> Refusal {
    let containers_lack = lacking.iter().any(|image| image.volume.is_none());
    let listing: Vec<String> = lacking
        .iter()
        .map(|image| {
            let platforms = image
                .platforms()
                .iter()
                .map(|platform| match (&platform.os_build, build) {
                    (Some(os_build), Some(_)) => format!("{platform} {os_build}"),
                    _ => platform.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ");
            match after_admission {
                Some(pod) => format!("{} runs only on {platforms}", run_by(image, pod)),
                None => format!("{} runs only on {platforms}", named(image)),
            }
        })
        .collect();
    if after_admission.is_some() {
        return Refusal::new(
            format!("{PREFIX}: the {subject} runs on node {node:?} ({placed}), which its new images have no build for: "),
            listing.join("; "),
            format!(". They would fail there with exec format error: use images with a build for {placed} (kubectl debug --image=<an image with one>)"),
        );
    }
    Refusal::new(
        format!("{PREFIX}: the {subject} is bound to node {node:?} ({placed}), which its images have no build for: "),
        listing.join("; "),
        if !containers_lack {
            ". The kubelet cannot mount them there: use images with a build for that platform (an index), or list them in imagePlatforms".to_string()
        } else if build.is_some() {
            ". Its containers cannot start there (a process-isolated Windows container needs the node's architecture and OS build)".to_string()
        } else {
            ". Its containers would fail there with exec format error".to_string()
        },
    )
}

/// A Pod after admission whose own constraints admit nodes where its new images do not run:
/// `elsewhere`, per OS, the architectures it may be on that some new image has no build for;
/// `each`, each new image with what it runs on; `bound`, the Node it is bound to (its platform
/// unknown without `readNodes`); `note`, where the cluster's architectures come from.
pub(crate) fn may_be_elsewhere(
    subject: &str,
    elsewhere: &[(String, Architectures)],
    each: &[String],
    bound: Option<&str>,
    note: &str,
) -> Refusal {
    let platforms = elsewhere
        .iter()
        .map(|(os, architectures)| match architectures.is_empty() {
            true => format!("{os} nodes"),
            false => format!("{os} nodes of {}", platform::join(architectures, ", ")),
        })
        .collect::<Vec<_>>()
        .join(", and ");
    let lead = match bound {
        Some(node) => format!(
            "{PREFIX}: the {subject} is bound to node {node:?}, which may be one of the {platforms} its constraints admit ({note}; setting readNodes reads the Node), where its new images have no build: "
        ),
        None => format!(
            "{PREFIX}: the {subject} may run on {platforms} ({note}; what its nodeSelector and required node affinity admit), where its new images have no build: "
        ),
    };
    Refusal::new(
        lead,
        each.join("; "),
        ". A Pod's node affinity cannot change once it is created: use images built for every platform it may run on (kubectl debug --image=<an image with a build for them>), or recreate the Pod so that the policy pins it".to_string(),
    )
}

/// A new image after admission with the architectures it runs on for each OS of `oses`.
pub(crate) fn new_image_runs_on(
    image: &ImagePlatforms,
    pod: &Pod,
    oses: &[(&str, Architectures)],
) -> String {
    let platforms: Vec<String> = oses
        .iter()
        .flat_map(|(os, architectures)| architectures.iter().map(move |a| format!("{os}/{a}")))
        .collect();
    if platforms.is_empty() {
        let names: Vec<&str> = oses.iter().map(|(os, _)| *os).collect();
        return format!("{} has no {} build", run_by(image, pod), names.join(" or "));
    }
    // The Windows OS builds, where every Windows entry names one.
    let windows: Vec<_> = image
        .platforms()
        .iter()
        .filter(|p| {
            oses.iter().any(|(os, a)| *os == "windows" && !a.is_empty()) && p.runs_on("windows")
        })
        .collect();
    let builds: Architectures = windows.iter().filter_map(|p| p.os_build.clone()).collect();
    let builds = match builds.is_empty() || windows.iter().any(|p| p.os_build.is_none()) {
        true => String::new(),
        false => format!(" (Windows build {})", platform::join(&builds, ", ")),
    };
    format!(
        "{} runs on {}{builds}",
        run_by(image, pod),
        platforms.join(", ")
    )
}
