//! The admission request routed through the steps, once each: `read` the Pod (or a workload's
//! Pod template) and, for a Pod UPDATE, the images it did not run before; `decide` on what was
//! read (`decide::create`, `decide::update`); `edit` the object with the plan at the end. Anything
//! else is accepted. The request comes from `lib.rs`, and the response goes back there.

use serde_json::Value;

use crate::decide::{self, Answer, Subject};
use crate::edit::write;
use crate::host::cluster::Cluster;
use crate::host::registry::Registry;
use crate::read::pod::Pod;
use crate::read::pod_update;
use crate::read::record;
use crate::read::workload;
use crate::settings::{Settings, TemplateMode};

pub use crate::message::PREFIX;
pub use crate::read::pod::{ARCHITECTURES_ANNOTATION, PREFERRED_ANNOTATION};
pub use crate::read::record::DECISION_ANNOTATION;

/// The admission request fields the decision reads.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub kind: &'a str,
    pub operation: &'a str,
    pub sub_resource: &'a str,
    pub object: Value,
    /// The object before an UPDATE (null otherwise).
    pub old_object: &'a Value,
    /// When it is decided: seconds since the Unix epoch (for the decisions templates record).
    pub now: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict<Object = Value> {
    /// Let the object through unchanged.
    Accept,
    /// Let the object through as given (the whole object, changed only where needed).
    Mutate(Object),
    /// Refuse it with this message.
    Reject(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision<Object = Value> {
    pub verdict: Verdict<Object>,
    pub warnings: Vec<String>,
}

impl Decision {
    pub fn accept(warnings: Vec<String>) -> Decision {
        Decision {
            verdict: Verdict::Accept,
            warnings,
        }
    }

    /// The decision on `object` from the answer on it (or on the Pod template at `template`):
    /// its plan written into it where `write` says so, and, where `record` gives the settings
    /// and the time, the record of a decision without warnings (`record`): on a template pinned
    /// now, or renewed on one that carries a record already.
    fn of(
        answer: Answer,
        mut object: Value,
        template: &[&str],
        write: bool,
        record: Option<(&Settings, u64)>,
    ) -> Decision {
        let record = record.filter(|(settings, _)| {
            write && answer.warnings().is_empty() && settings.template_decision_seconds > 0
        });
        let (verdict, warnings) = match answer {
            Answer::Rejected(message, warnings) => (Verdict::Reject(message), warnings),
            Answer::Pinned(plan, warnings) if write => {
                if let Some(pod) = workload::template_mut(&mut object, template) {
                    write::write(pod, &plan);
                    if let Some((settings, now)) = record {
                        let value = record::record(pod, settings, now);
                        write::record(pod, value);
                    }
                }
                (Verdict::Mutate(object), warnings)
            }
            Answer::Unchanged(warnings) => match renewal(&object, template, record) {
                Some(value) => {
                    if let Some(pod) = workload::template_mut(&mut object, template) {
                        write::record(pod, value);
                    }
                    (Verdict::Mutate(object), warnings)
                }
                None => (Verdict::Accept, warnings),
            },
            Answer::Pinned(_, warnings) => (Verdict::Accept, warnings),
        };
        Decision { verdict, warnings }
    }
}

/// The record a template decided unchanged renews its own with: where it carries one, and
/// another.
fn renewal(object: &Value, template: &[&str], record: Option<(&Settings, u64)>) -> Option<String> {
    let pod = workload::template(object, template);
    let (recorded, (settings, now)) = (record::recorded(pod)?, record?);
    Some(record::record(pod, settings, now)).filter(|renewed| renewed != recorded)
}

/// Decides on one admission request.
pub fn evaluate(
    request: Request<'_>,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Decision {
    let updates_pod = request.kind == "Pod"
        && request.operation == "UPDATE"
        && matches!(request.sub_resource, "" | "ephemeralcontainers");
    if !request.sub_resource.is_empty() && !updates_pod {
        return Decision::accept(Vec::new());
    }
    if request.kind != "Pod" {
        return evaluate_workload(request, settings, registry, cluster);
    }
    if request.operation == "CREATE" && record::reusable(&request.object, settings, request.now) {
        // Created from a template whose decision it carries, unchanged: that decision stands.
        return Decision::accept(Vec::new());
    }
    let answer = {
        let pod = Pod::read(&request.object, settings);
        match request.operation {
            "CREATE" => decide::create(&pod, Subject::Pod, settings, registry, cluster),
            // An image swapped in, or an ephemeral container added (`kubectl debug`).
            "UPDATE" => {
                let update = pod_update::update(&request.object, request.old_object);
                decide::update(&pod, &update.new, &update.ran, settings, registry, cluster)
            }
            _ => return Decision::accept(Vec::new()),
        }
    };
    Decision::of(answer, request.object, &[], true, None)
}

/// A workload CREATE or UPDATE: the same decision on its Pod template at apply time, so that a
/// workload whose Pods could never run is refused when it is applied, not in a retry loop later.
fn evaluate_workload(
    request: Request<'_>,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Decision {
    let (kind, object, now) = (request.kind, request.object, request.now);
    let Some(path) = workload::template_path(kind) else {
        return Decision::accept(Vec::new());
    };
    if !matches!(request.operation, "CREATE" | "UPDATE")
        || workload::owned_by_checked_controller(kind, &object)
    {
        return Decision::accept(Vec::new());
    }
    let template = workload::template(&object, path);
    if request.operation == "UPDATE"
        && workload::scheduling_view(template, settings)
            == workload::scheduling_view(workload::template(request.old_object, path), settings)
    {
        return Decision::accept(Vec::new());
    }
    if !template["spec"].is_object() {
        return Decision::accept(Vec::new());
    }
    let mode = match kind {
        "DaemonSet" if settings.daemon_set_templates == TemplateMode::Mutate => {
            TemplateMode::Mutate
        }
        _ => settings.workload_templates,
    };
    let subject = Subject::Template {
        mode,
        daemon_set: kind == "DaemonSet",
    };
    let answer = {
        let pod = Pod::read(template, settings);
        decide::create(&pod, subject, settings, registry, cluster)
    };
    let record = Some((settings, now));
    Decision::of(answer, object, path, mode == TemplateMode::Mutate, record)
}
