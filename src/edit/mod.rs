//! Editing: a plan written into the Pod's JSON, changing only the fields it names (`json`: the
//! paths; `affinity`: required and preferred node affinity; `tolerations`).

pub mod affinity;
pub mod json;
pub mod pin;
pub mod tolerations;

pub use self::json::{array_at, object_at};
