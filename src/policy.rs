//! The admission request routed to the decision: a Pod CREATE to `decide::decide_pod`, a
//! workload to `decide::workload` (which applies the same decision to its Pod template),
//! anything else accepted. The data flows one way: request (`lib.rs`) -> read (`read::pod`,
//! `read::constraint`, `read::resolve`) -> decide (`decide`) -> edit (`edit::pin`) -> response
//! (`lib.rs`).

use serde_json::Value;

use crate::decide;
use crate::decide::workload;
pub use crate::decide::{
    Decision, Outcome, Subject, Verdict, ARCHITECTURES_ANNOTATION, PREFERRED_ANNOTATION, PREFIX,
};
use crate::host::cluster::Cluster;
use crate::host::registry::Registry;
use crate::settings::Settings;

/// The admission request fields the decision reads.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub kind: &'a str,
    pub operation: &'a str,
    pub sub_resource: &'a str,
    pub object: Value,
    /// The object before an UPDATE (null otherwise).
    pub old_object: &'a Value,
}

/// Decides on one admission request.
pub fn evaluate(
    request: Request<'_>,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Decision {
    if !request.sub_resource.is_empty() {
        return Decision::accept(Vec::new());
    }
    if request.kind != "Pod" {
        return workload::evaluate(
            request.kind,
            request.operation,
            request.object,
            request.old_object,
            settings,
            registry,
            cluster,
        );
    }
    if request.operation != "CREATE" {
        return Decision::accept(Vec::new());
    }
    let mut pod = request.object;
    let subject = Subject {
        name: "Pod",
        daemon_set: false,
    };
    match decide::decide_pod(&mut pod, subject, settings, registry, cluster) {
        Outcome::Unchanged(warnings) => Decision::accept(warnings),
        Outcome::Changed(warnings) => Decision {
            verdict: Verdict::Mutate(pod),
            warnings,
        },
        Outcome::Rejected(message, warnings) => Decision::reject(message, warnings),
    }
}
