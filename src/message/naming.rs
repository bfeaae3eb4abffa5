//! How texts name an image: by its reference or its image volume, with the containers that run
//! it after admission, with the architectures it runs on, and its index entries left out.

use super::text::{capped, PREFIX};
use crate::platform::{self, Architectures};
use crate::read::pod::Pod;
use crate::read::resolve::ImagePlatforms;

/// An image as messages name it: `"REF"` when a container runs it, `volume "NAME" image "REF"`
/// when only image volumes mount it.
pub(crate) fn named(image: &ImagePlatforms) -> String {
    match &image.volume {
        Some(volume) => format!("volume {volume:?} image {:?}", image.image),
        None => format!("{:?}", image.image),
    }
}

/// An image as messages name it where the word "image" stands before a container's reference:
/// `image "REF"`, or `volume "NAME" image "REF"`.
pub(crate) fn labelled(image: &ImagePlatforms) -> String {
    match &image.volume {
        Some(_) => named(image),
        None => format!("image {:?}", image.image),
    }
}

/// An image's index entries left out because no node reports their values.
pub(crate) fn left_out(image: &ImagePlatforms) -> String {
    capped(
        &format!(
            "{PREFIX}: {}: index entries left out of the architecture decision (no node reports ",
            labelled(image)
        ),
        &image.left_out().join(", "),
        ")",
    )
}

/// A new image of a Pod after admission, with the containers that run it: `image "REF" of
/// ephemeral container "debugger"`.
pub(crate) fn run_by(image: &ImagePlatforms, pod: &Pod) -> String {
    let containers: Vec<String> = pod
        .containers_running(&image.image)
        .into_iter()
        .map(|(kind, name)| format!("{kind} {name:?}"))
        .collect();
    match containers.is_empty() {
        true => labelled(image),
        false => format!("{} of {}", labelled(image), containers.join(", ")),
    }
}

/// An image with the architectures it runs on of `os`, or, when it has none there, the platforms
/// it has.
pub(crate) fn describe_image(
    image: &ImagePlatforms,
    architectures: &Architectures,
    os: &str,
) -> String {
    if !architectures.is_empty() {
        return format!(
            "{} runs on {}",
            named(image),
            platform::join(architectures, ", ")
        );
    }
    let others = image
        .platforms()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    format!("{} has no {os} build (only {others})", named(image))
}
