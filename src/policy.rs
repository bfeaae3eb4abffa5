//! The admission request routed to the decision: a Pod CREATE to `decide::decide_pod`, a Pod
//! UPDATE (the Pod itself, or its `ephemeralcontainers` subresource) to `decide::decide_update`, a
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
    let pod_update = request.kind == "Pod"
        && request.operation == "UPDATE"
        && matches!(request.sub_resource, "" | "ephemeralcontainers");
    if !request.sub_resource.is_empty() && !pod_update {
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
    let mut pod = request.object;
    let outcome = match request.operation {
        "CREATE" => {
            let subject = Subject {
                name: "Pod",
                daemon_set: false,
                one_per_node: false,
                after_admission: false,
                adds_terms: true,
            };
            decide::decide_pod(&mut pod, subject, settings, registry, cluster)
        }
        // An image swapped in, or an ephemeral container added (`kubectl debug`).
        "UPDATE" => {
            decide::decide_update(&mut pod, request.old_object, settings, registry, cluster)
        }
        _ => return Decision::accept(Vec::new()),
    };
    match outcome {
        Outcome::Unchanged(warnings) => Decision::accept(warnings),
        Outcome::Changed(warnings) => Decision {
            verdict: Verdict::Mutate(pod),
            warnings,
        },
        Outcome::Rejected(message, warnings) => Decision::reject(message, warnings),
    }
}
