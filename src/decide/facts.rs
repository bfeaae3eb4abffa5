//! What the decision knows of a Pod and its images before it looks at the cluster (`Facts`),
//! the other OSes it may run on (`OtherOs`), and where it may run on one OS (`Placement`).

use crate::message::{self, Refusal};
use crate::platform::Architectures;
use crate::read::constraint::Constraints;
use crate::read::pod::Pod;
use crate::read::resolve::ImagePlatforms;
use crate::settings::Settings;

use super::answer::{refuse, Answer};
use super::running::Running;
use super::subject::Subject;

/// What the decision knows of the Pod and its images before it looks at the cluster.
pub struct Facts<'a> {
    pub pod: &'a Pod<'a>,
    pub subject: Subject,
    pub settings: &'a Settings,
    /// The Pod's constraints on the nodes of its own OS.
    pub constraints: &'a Constraints,
    /// The images looked up that constrain the Pod's architecture (not the WebAssembly ones
    /// that run anywhere: `ImagePlatforms::arch_free`).
    pub known: Vec<&'a ImagePlatforms>,
    /// The architectures every known image runs on for the Pod's OS (`fallbackArchitectures`
    /// when no image could be looked up; every architecture when none constrains).
    pub image_common: Architectures,
    /// Images were looked up, and none constrains the architecture: they run on every node.
    pub unconstrained: bool,
    /// No image that runs on a CPU architecture could be looked up: `image_common` is
    /// `fallbackArchitectures`, and the warning that says so.
    pub fallback: Option<String>,
    /// WebAssembly images were looked up (the fallback's messages say that only the others
    /// failed).
    pub webassembly: bool,
    /// The other node OSes the Pod may run on: it does not choose its OS (`spec.os`, the
    /// nodeSelector), its own constraints admit their nodes, and every known image runs on them
    /// (Linux and Windows builds in one index). Where the cluster has nodes of them, the Pod is
    /// decided for each, and keeps every OS that runs it (`settle`). For images that run
    /// anywhere (`unconstrained`), only where its own OS refuses it (`others_decide`).
    pub others: Vec<OtherOs>,
    /// Why no node of the Pod's own OS runs every image, when only `others` do (`image_common`
    /// is then empty).
    pub own_os_refusal: Option<Refusal>,
    /// After admission, what the images the Pod already runs run on: where it can be
    /// (`running`; none where not looked up).
    pub running: Option<Running>,
    /// The Pod is kept to its Windows images' OS builds (`pinWindowsBuild`; with `readNodes`,
    /// every process-isolated Windows Pod): set once the cluster says how it is isolated.
    pub pin_builds: bool,
}

impl Facts<'_> {
    /// The Pod's OS.
    pub fn os(&self) -> &str {
        &self.constraints.os
    }

    /// Whether the other OSes decide the Pod too, given whether its own OS refused it: always for
    /// images built for several OSes; for images that run anywhere, only where its own OS refuses
    /// it (it is left unpinned to any OS, and runs on a node of any that admits it).
    pub fn others_decide(&self, own_refused: impl FnOnce() -> bool) -> bool {
        !self.others.is_empty() && (!self.unconstrained || own_refused())
    }

    /// The setting that keeps the Pod to its images' Windows builds, as messages name it.
    pub fn builds_setting(&self) -> &'static str {
        match self.settings.pin_windows_build {
            true => "setting pinWindowsBuild",
            false => "setting readNodes",
        }
    }

    /// The other OS `os`, when the Pod may run there.
    pub fn other(&self, os: &str) -> Option<&OtherOs> {
        self.others.iter().find(|other| other.constraints.os == os)
    }

    /// No architecture fits: `refuse`, except that a Pod pinned to `fallbackArchitectures`
    /// that fit none of its nodes is left unpinned, with a warning (a guess never refuses it).
    pub fn refuse(&self, refusal: Refusal, mut warnings: Vec<String>) -> Answer {
        if self.fallback.is_some() {
            warnings.push(message::fallback_unfit(
                self.subject.name(),
                self.webassembly,
                &self.image_common,
            ));
            return Answer::Unchanged(warnings);
        }
        refuse(refusal, &mut warnings, self.settings)
    }
}

/// Another OS a Pod that states none may run on (`Facts::others`): its constraints read for
/// that OS, and the architectures every known image runs on for it.
pub struct OtherOs {
    pub constraints: Constraints,
    pub image_common: Architectures,
}

/// Where the Pod may run on one OS, and what pins it there.
pub struct Placement<'a> {
    pub constraints: &'a Constraints,
    /// The architectures every image runs on, among those of the cluster's nodes.
    pub common: Architectures,
    /// Of those, the ones the Pod's own constraints admit.
    pub finally: Architectures,
    /// The architectures nodes of the OS may have.
    pub universe: Architectures,
    /// The Windows OS builds to pin (`pinWindowsBuild`).
    pub builds: Option<Architectures>,
}
