//! Node affinity edits: the surgical changes that pin a Pod's required terms to the
//! architectures its images run on, and the preferred term.
//!
//! Required terms are ORed by the scheduler, so a constraint must go into every term that needs
//! it: a new ORed term would let the Pod escape it.

use serde_json::{json, Value};

use crate::edit;
use crate::platform::{Architectures, ARCH_LABEL, BETA_ARCH_LABEL};

const REQUIRED_PATH: [&str; 3] = [
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
];

/// Puts `kubernetes.io/arch In [common]` into each required term whose `to_constrain` flag is
/// set, and `key In [values]` for each of `labels` into every term that has requirements and no
/// expression on that key. A Pod without terms gets one (`to_constrain[0]`: with the
/// architecture expression), when there is anything to put in it. Returns whether anything
/// changed.
pub fn constrain_required(
    spec: &mut Value,
    to_constrain: &[bool],
    common: &Architectures,
    labels: &[(String, Vec<String>)],
) -> bool {
    let has_terms = spec["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        .as_array()
        .is_some_and(|terms| !terms.is_empty());
    if !has_terms && to_constrain.first() != Some(&true) && labels.is_empty() {
        return false;
    }
    let Some(required) = edit::object_at(spec, &REQUIRED_PATH) else {
        return false;
    };
    let terms = required.entry("nodeSelectorTerms").or_insert(Value::Null);
    let mut changed = false;
    match terms.as_array_mut() {
        Some(terms) if !terms.is_empty() => {
            for (index, term) in terms.iter_mut().enumerate() {
                if to_constrain.get(index) == Some(&true) {
                    push_expression(term, architecture_expression(common));
                    changed = true;
                }
                if term["matchExpressions"]
                    .as_array()
                    .is_none_or(Vec::is_empty)
                    && term["matchFields"].as_array().is_none_or(Vec::is_empty)
                {
                    continue; // an empty term matches nothing; leave it so
                }
                for (key, values) in labels {
                    if !has_expression_on(term, key) {
                        push_expression(term, in_expression(key, values));
                        changed = true;
                    }
                }
            }
        }
        _ => {
            let mut expressions = Vec::new();
            if to_constrain.first() == Some(&true) {
                expressions.push(architecture_expression(common));
            }
            expressions.extend(
                labels
                    .iter()
                    .map(|(key, values)| in_expression(key, values)),
            );
            *terms = json!([{ "matchExpressions": expressions }]);
            changed = true;
        }
    }
    changed
}

/// `key In [values]`, the expression the policy adds.
pub fn in_expression<'a>(key: &str, values: impl IntoIterator<Item = &'a String>) -> Value {
    json!({"key": key, "operator": "In", "values": values.into_iter().collect::<Vec<_>>()})
}

/// The architecture expression for the common set.
pub fn architecture_expression(common: &Architectures) -> Value {
    in_expression(ARCH_LABEL, common)
}

/// Whether a term already has an expression on `key`.
pub fn has_expression_on(term: &Value, key: &str) -> bool {
    term["matchExpressions"]
        .as_array()
        .is_some_and(|list| list.iter().any(|e| e["key"] == key))
}

/// Appends an expression to a term's `matchExpressions`, creating the list if needed.
pub fn push_expression(term: &mut Value, expression: Value) {
    if let Some(list) = edit::array_at(term, &["matchExpressions"]) {
        list.push(expression);
    }
}

/// Whether any preferred term already weighs the architecture.
pub fn has_preferred_architecture(spec: &Value) -> bool {
    spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        .as_array()
        .is_some_and(|terms| {
            terms.iter().any(|term| {
                term["preference"]["matchExpressions"]
                    .as_array()
                    .is_some_and(|list| {
                        list.iter()
                            .any(|e| e["key"] == ARCH_LABEL || e["key"] == BETA_ARCH_LABEL)
                    })
            })
        })
}

/// A preferred term for one architecture.
pub fn preferred_term(architecture: &str, weight: i64) -> Value {
    json!({"weight": weight, "preference": {"matchExpressions": [
        {"key": ARCH_LABEL, "operator": "In", "values": [architecture]}]}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constrains_the_flagged_terms_and_leaves_empty_ones() {
        let common: Architectures = ["amd64".to_string()].into();
        let mut spec = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, {}, {"x": 1}]}}}});
        let labels = [("team".to_string(), vec!["blue".to_string()])];
        assert!(constrain_required(
            &mut spec,
            &[true, false, false],
            &common,
            &labels
        ));
        assert_eq!(
            spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"],
            json!([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "team", "operator": "In", "values": ["blue"]}]}, {}, {"x": 1}])
        );
        let mut none = json!({});
        assert!(!constrain_required(&mut none, &[false], &common, &[]));
        assert_eq!(none, json!({}));
        let mut empty_required = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}});
        assert!(constrain_required(
            &mut empty_required,
            &[true],
            &common,
            &[]
        ));
        assert_eq!(
            empty_required["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"],
            json!({"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]})
        );
    }
}
