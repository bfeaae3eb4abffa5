//! What the decision knows of a Pod and its images before it looks at the cluster (`Facts`),
//! the other OSes it may run on (`OtherOs`), and the Pod decided for one OS (`Plan`).

use crate::message::{self, Refusal};
use crate::platform::Architectures;
use crate::read::constraint::Constraints;
use crate::read::resolve::ImagePlatforms;
use crate::settings::Settings;

use super::outcome::{refuse, Outcome, Subject};

/// What the decision knows of the Pod and its images before it looks at the cluster.
pub(super) struct Facts<'a> {
    pub(super) subject: Subject<'a>,
    pub(super) settings: &'a Settings,
    pub(super) constraints: Constraints,
    /// The images looked up that constrain the Pod's architecture (not the WebAssembly ones
    /// that run anywhere: `ImagePlatforms::arch_free`).
    pub(super) known: Vec<&'a ImagePlatforms>,
    /// The architectures every known image runs on for the Pod's OS (`fallbackArchitectures`
    /// when no image could be looked up; every architecture when none constrains).
    pub(super) image_common: Architectures,
    /// Images were looked up, and none constrains the architecture: they run on every node.
    pub(super) unconstrained: bool,
    /// No image that runs on a CPU architecture could be looked up: `image_common` is
    /// `fallbackArchitectures`, and the warning that says so.
    pub(super) fallback: Option<String>,
    /// WebAssembly images were looked up (the fallback's messages say that only the others
    /// failed).
    pub(super) webassembly: bool,
    /// The other node OSes the Pod may run on: it does not choose its OS (`spec.os`, the
    /// nodeSelector), its own constraints admit their nodes, and every known image runs on them
    /// (Linux and Windows builds in one index). Where the cluster has nodes of them, the Pod is
    /// decided for each, and keeps every OS that runs it (`settle`). For images that run
    /// anywhere (`unconstrained`), only where its own OS refuses it (`others_decide`).
    pub(super) others: Vec<OtherOs>,
    /// Why no node of the Pod's own OS runs every image, when only `others` do (`image_common`
    /// is then empty).
    pub(super) own_os_refusal: Option<Refusal>,
    /// The Pod names its OS in `spec.os`: the kubelet refuses it on a node of another OS, so it
    /// is kept to its OS even when its images run anywhere.
    pub(super) spec_os: bool,
}

impl Facts<'_> {
    /// Whether the other OSes decide the Pod too, given whether its own OS refused it: always for
    /// images built for several OSes; for images that run anywhere, only where its own OS refuses
    /// it (it is left unpinned to any OS, and runs on a node of any that admits it).
    pub(super) fn others_decide(&self, own_refused: impl FnOnce() -> bool) -> bool {
        !self.others.is_empty() && (!self.unconstrained || own_refused())
    }

    /// No architecture fits: `refuse`, except that a Pod pinned to `fallbackArchitectures`
    /// that fit none of its nodes is left unpinned, with a warning (a guess never refuses it).
    pub(super) fn refuse(&self, refusal: Refusal, mut warnings: Vec<String>) -> Outcome {
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
pub(super) struct OtherOs {
    pub(super) constraints: Constraints,
    pub(super) image_common: Architectures,
}

/// The Pod decided for one OS: where it may run, and what pins it there.
pub(super) struct Plan<'a> {
    pub(super) constraints: &'a Constraints,
    /// The architectures every image runs on, among those of the cluster's nodes.
    pub(super) common: Architectures,
    /// Of those, the ones the Pod's own constraints admit.
    pub(super) finally: Architectures,
    /// The architectures nodes of the OS may have.
    pub(super) universe: Architectures,
    /// The Windows OS builds to pin (`pinWindowsBuild`).
    pub(super) builds: Option<Architectures>,
}
