//! The policy's messages and warnings: every text an operator reads is built here, one file per
//! concern; `decide` decides which one applies. `text` holds what they share (the prefix, the
//! three-part `Refusal`, how a text is cut to a warning's length), `naming` how they name an
//! image, `lookup` the failed lookups, `refusal` the decision at creation, `placed` a Pod already
//! placed (bound to a Node, or after admission), `notes` where the architectures a decision
//! counts come from.

mod lookup;
mod naming;
mod notes;
mod placed;
mod refusal;
mod text;

pub(crate) use self::lookup::{fallback, fallback_unfit, Failure};
pub(crate) use self::naming::{labelled, left_out, named};
pub(crate) use self::notes::{nodes_note, pools_note, schedulable_note};
pub(crate) use self::placed::{
    bound_other_os, bound_without_build, may_be_elsewhere, new_image_runs_on, placed,
};
pub(crate) use self::refusal::{
    absent_builds, bad_preferred_annotation, builds_not_admitted, built_for, daemon_set,
    daemon_set_os_not_in_cluster, daemon_set_other_os, explain, no_common_architecture,
    no_common_build, no_node_os, no_schedulable, os_not_in_cluster,
};
pub(crate) use self::text::Refusal;
pub use self::text::PREFIX;
