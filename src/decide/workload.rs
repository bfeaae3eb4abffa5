//! Workloads (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs,
//! ReplicationControllers): the same rules applied to their Pod template at apply time, so that a
//! workload whose Pods could never run is refused when it is applied, not in a retry loop later.

use serde_json::Value;

use crate::decide::{self, Decision, Outcome, Subject, Verdict, PREFERRED_ANNOTATION};
use crate::host::cluster::Cluster;
use crate::host::registry::Registry;
use crate::read::pod;
use crate::settings::{Settings, TemplateMode};

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

fn template<'a>(object: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(object, |value, key| &value[*key])
}

fn template_mut<'a>(object: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter()
        .try_fold(object, |value, key| value.get_mut(*key))
        .filter(|template| template["spec"].is_object())
}

/// Controllers whose own template the policy already checked when they were applied.
fn owned_by_checked_controller(kind: &str, object: &Value) -> bool {
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
fn scheduling_view(template: &Value, settings: &Settings) -> Value {
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

/// Decides on a workload CREATE or UPDATE.
pub fn evaluate(
    kind: &str,
    operation: &str,
    mut object: Value,
    old_object: &Value,
    settings: &Settings,
    registry: &mut dyn Registry,
    cluster: &mut dyn Cluster,
) -> Decision {
    let accept = || Decision {
        verdict: Verdict::Accept,
        warnings: Vec::new(),
    };
    let Some(path) = template_path(kind) else {
        return accept();
    };
    if !matches!(operation, "CREATE" | "UPDATE") || owned_by_checked_controller(kind, &object) {
        return accept();
    }
    if operation == "UPDATE"
        && scheduling_view(template(&object, path), settings)
            == scheduling_view(template(old_object, path), settings)
    {
        return accept();
    }
    let mode = match kind {
        "DaemonSet" if settings.daemon_set_templates == TemplateMode::Mutate => {
            TemplateMode::Mutate
        }
        _ => settings.workload_templates,
    };
    let Some(pod_template) = template_mut(&mut object, path) else {
        return accept();
    };
    let subject = Subject {
        name: "Pod template",
        daemon_set: kind == "DaemonSet" && mode == TemplateMode::Validate,
        one_per_node: kind == "DaemonSet",
        after_admission: false,
        adds_terms: mode == TemplateMode::Mutate,
    };
    match decide::decide_pod(pod_template, subject, settings, registry, cluster) {
        Outcome::Rejected(message, warnings) => Decision {
            verdict: Verdict::Reject(message),
            warnings,
        },
        Outcome::Changed(warnings) if mode == TemplateMode::Mutate => Decision {
            verdict: Verdict::Mutate(object),
            warnings,
        },
        Outcome::Changed(warnings) | Outcome::Unchanged(warnings) => Decision {
            verdict: Verdict::Accept,
            warnings,
        },
    }
}
