//! Editing: the plan `decide` settled on, written into the Pod's JSON at the end (`write`),
//! changing only the fields it names (`json`: the paths; `affinity`: node affinity terms).

pub mod affinity;
pub mod json;
pub mod write;

pub use self::json::{array_at, object_at};
