//! Workloads (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs,
//! ReplicationControllers): the same rules applied to their Pod template at apply time, so that a
//! workload whose Pods could never run is refused when it is applied, not in a retry loop later.

use serde_json::Value;

use crate::cluster::Cluster;
use crate::constraint::Admits;
use crate::decision::{self, capped, Decision, Outcome, Verdict, PREFERRED_ANNOTATION, PREFIX};
use crate::platform::{self, Architectures};
use crate::pod;
use crate::registry::Registry;
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
    serde_json::json!([
        pod::images(template),
        spec["nodeSelector"],
        spec["affinity"]["nodeAffinity"],
        spec["os"],
        spec["nodeName"],
        spec["tolerations"],
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
    let daemon_set = kind == "DaemonSet" && mode == TemplateMode::Validate;
    let decided = decision::decide_pod(pod_template, "Pod template", settings, registry, cluster);
    match decided.outcome {
        Outcome::Rejected(message, warnings) => Decision {
            verdict: Verdict::Reject(message),
            warnings,
        },
        Outcome::Changed(warnings) if mode == TemplateMode::Mutate => Decision {
            verdict: Verdict::Mutate(object),
            warnings,
        },
        Outcome::Changed(mut warnings) | Outcome::Unchanged(mut warnings) => {
            if let (true, Some(common), Some(admits), Some(schedulable)) = (
                daemon_set,
                &decided.architectures,
                decided.admits,
                decided.schedulable,
            ) {
                warnings.extend(daemon_set_warning(admits, common, schedulable));
            }
            Decision {
                verdict: Verdict::Accept,
                warnings,
            }
        }
    }
}

/// A DaemonSet runs a Pod on every node its template admits. When its images do not run on every
/// architecture the template admits (`admits`, read by `constraint` like any Pod's), those Pods
/// crash-loop: name those architectures, among the schedulable ones when they are known
/// (`schedulableArchitectures`, or read from Nodes). Cut to fit a warning, keeping the advice.
fn daemon_set_warning(
    admits: Admits,
    common: &Architectures,
    schedulable: Architectures,
) -> Option<String> {
    let mut outside = admits.and(Admits::AllBut(common.clone()));
    if !schedulable.is_empty() {
        outside = outside.and(Admits::Only(schedulable));
    }
    let (lead, failing, tail) = match outside {
        Admits::Only(failing) if failing.is_empty() => return None,
        Admits::Only(failing) => ("the ", failing, " nodes"),
        Admits::AllBut(fine) => ("any node whose architecture is not ", fine, ""),
        Admits::All => ("any node whose architecture is not ", common.clone(), ""),
    };
    Some(capped(
        &format!(
            "{PREFIX}: this DaemonSet's images run only on {}: its Pods will fail on {lead}",
            platform::join(common, ", ")
        ),
        &platform::join(&failing, ", "),
        &format!(
            "{tail}. Add a required node affinity on kubernetes.io/arch, or set daemonSetTemplates: mutate"
        ),
    ))
}
