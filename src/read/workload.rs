//! Workloads (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs,
//! ReplicationControllers) as the policy reads them: where each keeps its Pod template, whether
//! its controller's own template was checked already, and the parts of a template the decision
//! reads (an UPDATE that leaves them as they were needs no lookup).

use serde_json::Value;

use crate::read::pod::{self, PREFERRED_ANNOTATION};
use crate::settings::Settings;

/// Where a workload kind keeps its Pod template, or `None` for kinds the policy does not handle.
pub fn template_path(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => Some(&["spec", "template"]),
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template"]),
        _ => None,
    }
}

/// The Pod template at `path`.
pub fn template<'a>(object: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(object, |value, key| &value[*key])
}

/// The Pod template at `path`, when it has a spec to edit.
pub fn template_mut<'a>(object: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter()
        .try_fold(object, |value, key| value.get_mut(*key))
        .filter(|template| template["spec"].is_object())
}

/// Controllers whose own template the policy already checked when they were applied.
pub fn owned_by_checked_controller(kind: &str, object: &Value) -> bool {
    let owner_kind = match kind {
        "ReplicaSet" => "Deployment",
        "Job" => "CronJob",
        _ => return false,
    };
    object["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|owners| {
            owners.iter().any(|owner| {
                owner["controller"].as_bool() == Some(true) && owner["kind"] == owner_kind
            })
        })
}

/// The parts of a Pod template that the decision reads. An UPDATE that leaves them as they were
/// (a scale, a label change on the workload) needs no lookup.
pub fn scheduling_view(template: &Value, settings: &Settings) -> Value {
    let spec = &template["spec"];
    let labels: Vec<&Value> = settings
        .match_node_labels
        .iter()
        .map(|key| &template["metadata"]["labels"][key.as_str()])
        .collect();
    let images: Vec<(&str, Option<&str>)> = pod::images(template)
        .iter()
        .map(|image| (image.reference, image.volume))
        .collect();
    serde_json::json!([
        images,
        spec["nodeSelector"],
        spec["affinity"]["nodeAffinity"],
        spec["os"],
        spec["nodeName"],
        spec["tolerations"],
        spec["runtimeClassName"],
        template["metadata"]["annotations"][PREFERRED_ANNOTATION],
        labels,
    ])
}
