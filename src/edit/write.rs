//! The plan `decide` settled on, written into the Pod's JSON at the end, once: the required
//! terms, the preferred architectures, the tolerations, the annotation that records what was
//! pinned, and the copies of the Pod's own terms for Nodes without an architecture label. Nothing
//! here decides: every value written comes from the `Plan`, and every other value of the Pod is
//! left as it came.

use serde_json::{json, Value};

use crate::decide::plan::{Plan, Term};
use crate::edit::{self, affinity};
use crate::read::pod::ARCHITECTURES_ANNOTATION;
use crate::read::record::DECISION_ANNOTATION;

const REQUIRED_PATH: [&str; 3] = [
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
];

const PREFERRED_PATH: [&str; 3] = [
    "affinity",
    "nodeAffinity",
    "preferredDuringSchedulingIgnoredDuringExecution",
];

/// Writes `plan` into the Pod (or Pod template) `pod`.
pub fn write(pod: &mut Value, plan: &Plan) {
    // What the terms are written from: the Pod's own nodeSelector and terms, as they came.
    let own = match plan.terms.is_some() || plan.unlabelled_copies {
        true => own_scheduling(&pod["spec"]),
        false => Value::Null,
    };
    let Some(spec) = pod.get_mut("spec") else {
        return;
    };
    if let Some(terms) = &plan.terms {
        write_terms(spec, &own, terms);
    }
    if !plan.preferred.is_empty() {
        if let Some(list) = edit::array_at(spec, &PREFERRED_PATH) {
            for (arch, weight) in &plan.preferred {
                list.push(affinity::preferred_term(arch, *weight));
            }
        }
    }
    if !plan.tolerations.is_empty() {
        if let Some(list) = edit::array_at(spec, &["tolerations"]) {
            list.extend(
                plan.tolerations
                    .iter()
                    .filter_map(|t| serde_json::to_value(t).ok()),
            );
        }
    }
    if plan.unlabelled_copies {
        affinity::keep_without_architecture(spec, &own);
    }
    if let Some(recorded) = &plan.annotation {
        if let Some(annotations) = edit::object_at(pod, &["metadata", "annotations"]) {
            annotations.insert(
                ARCHITECTURES_ANNOTATION.to_string(),
                Value::String(recorded.clone()),
            );
        }
    }
}

/// Writes `value`, the record of the decision on the template `pod` (`read::record::record`).
pub fn record(pod: &mut Value, value: String) {
    if let Some(annotations) = edit::object_at(pod, &["metadata", "annotations"]) {
        annotations.insert(DECISION_ANNOTATION.to_string(), Value::String(value));
    }
}

/// The parts of a Pod spec the terms are written from: its nodeSelector and required terms.
fn own_scheduling(spec: &Value) -> Value {
    let required =
        &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    json!({"nodeSelector": spec["nodeSelector"], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": required["nodeSelectorTerms"]}}}})
}

/// Sets the required terms to `terms`: each a copy of the Pod's own term (`own` is its spec as
/// it came) or a new one, with the plan's expressions appended.
fn write_terms(spec: &mut Value, own: &Value, terms: &[Term]) {
    let own_terms = &own["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    let written: Vec<Value> = terms
        .iter()
        .map(|term| {
            let mut written = match term.from {
                Some(index) => own_terms[index].clone(),
                None => json!({ "matchExpressions": [] }),
            };
            for expression in &term.added {
                affinity::push_expression(
                    &mut written,
                    affinity::in_expression(&expression.key, &expression.values),
                );
            }
            written
        })
        .collect();
    if let Some(required) = edit::object_at(spec, &REQUIRED_PATH) {
        required.insert("nodeSelectorTerms".to_string(), Value::Array(written));
    }
}
