//! Node affinity edits: the surgical changes that pin a Pod's required terms to the
//! architectures its images run on (and its OS, in a cluster of several), and the preferred term.
//!
//! Required terms are ORed by the scheduler, so a constraint must go into every term that needs
//! it: a new ORed term would let the Pod escape it.

use serde_json::{json, Value};

use crate::edit;
use crate::platform::{Architectures, ARCH_LABEL, BETA_ARCH_LABEL, OS_LABEL};
use crate::read::pod;

const REQUIRED_PATH: [&str; 3] = [
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
];

/// Appends `additions[index]` (the architecture and OS expressions) to each required term,
/// `key In [values]` for each of `labels` to every term that has requirements, admits Nodes with
/// an architecture label and has no expression on that key, and for each of `narrowed` to every
/// such term whose own `In` expression on that key does not keep within them already (the
/// Windows builds: the Pod's own list may name builds its images lack). A Pod without terms gets
/// one (with `additions[0]`), when there is anything to put in it. Returns whether anything
/// changed.
pub fn constrain_required(
    spec: &mut Value,
    additions: &[Vec<Value>],
    labels: &[(String, Vec<String>)],
    narrowed: &[(String, Vec<String>)],
) -> bool {
    let has_terms = spec["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        .as_array()
        .is_some_and(|terms| !terms.is_empty());
    let first = additions.first().map(Vec::as_slice).unwrap_or_default();
    if !has_terms && first.is_empty() && labels.is_empty() && narrowed.is_empty() {
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
                for expression in additions.get(index).into_iter().flatten() {
                    push_expression(term, expression.clone());
                    changed = true;
                }
                // A term that matches nothing is left so; one that admits only Nodes without an
                // architecture label (virtual nodes, which carry none of `labels` nor a Windows
                // build: the policy's own copy, or the Pod's) gets no label: it would lose them.
                if matches_nothing(term) || pod::admits_only_unlabelled(term) {
                    continue;
                }
                for (key, values) in labels {
                    if !has_expression_on(term, key) {
                        push_expression(term, in_expression(key, values));
                        changed = true;
                    }
                }
                for (key, values) in narrowed {
                    if !pod::term_keeps_within(term, key, |v| values.iter().any(|w| w == v)) {
                        push_expression(term, in_expression(key, values));
                        changed = true;
                    }
                }
            }
        }
        _ => {
            let mut expressions = first.to_vec();
            expressions.extend(
                labels
                    .iter()
                    .chain(narrowed)
                    .map(|(key, values)| in_expression(key, values)),
            );
            *terms = json!([{ "matchExpressions": expressions }]);
            changed = true;
        }
    }
    changed
}

/// Sets the Pod's required terms to `terms` (the policy's copies of its own, one per OS: see
/// `edit::pin`). Returns whether it could.
pub fn replace_required_terms(spec: &mut Value, terms: Vec<Value>) -> bool {
    match edit::object_at(spec, &REQUIRED_PATH) {
        Some(required) => {
            required.insert("nodeSelectorTerms".to_string(), Value::Array(terms));
            true
        }
        None => false,
    }
}

/// Appends to the Pod's required terms, for each term of `original` (the Pod's own spec before
/// the pins; without terms, one term that requires nothing) that may admit a Node without an
/// architecture label (no `In` or `Exists` expression on `kubernetes.io/arch` or its beta key;
/// and not empty, which matches no Node) and is pinned (it has no `DoesNotExist` on
/// `kubernetes.io/arch`: `pod::admits_only_unlabelled`, such as one of these copies), a copy of
/// it with `DoesNotExist` on both keys: the Nodes without the label that the Pod's own
/// constraints admit stay reachable, and no other Node is added. None when the Pod's own
/// nodeSelector names an architecture (either key), nor a copy the terms have already.
/// Returns whether it added any.
pub fn keep_without_architecture(spec: &mut Value, original: &Value) -> bool {
    let arch_keys = [ARCH_LABEL, BETA_ARCH_LABEL];
    if arch_keys
        .iter()
        .any(|key| !original["nodeSelector"][*key].is_null())
    {
        return false;
    }
    let needs_no_copy = |term: &Value| {
        pod::admits_only_unlabelled(term)
            || term["matchExpressions"].as_array().is_some_and(|list| {
                list.iter().any(|e| {
                    arch_keys.iter().any(|key| e["key"] == *key)
                        && matches!(e["operator"].as_str(), Some("In" | "Exists"))
                })
            })
    };
    // A Pod without terms requires nothing of a Node: one copy of its nodeSelector's term.
    let own: Vec<Value> = match pod::required_terms(original) {
        Some(terms) if !terms.is_empty() => terms
            .iter()
            .filter(|term| !matches_nothing(term))
            .cloned()
            .collect(),
        _ => vec![json!({})],
    };
    let [affinity, node_affinity, required] = REQUIRED_PATH;
    let Some(terms) = edit::array_at(
        spec,
        &[affinity, node_affinity, required, "nodeSelectorTerms"],
    ) else {
        return false;
    };
    let mut added = false;
    for mut term in own {
        if needs_no_copy(&term) {
            continue;
        }
        let Some(expressions) = edit::array_at(&mut term, &["matchExpressions"]) else {
            continue;
        };
        for key in arch_keys {
            let expression = json!({"key": key, "operator": "DoesNotExist"});
            if !expressions.contains(&expression) {
                expressions.push(expression);
            }
        }
        if !terms.contains(&term) {
            terms.push(term);
            added = true;
        }
    }
    added
}

/// Whether a required term matches no Node: it has no expression and no field (Kubernetes'
/// `nodeaffinity` reads an empty term so).
fn matches_nothing(term: &Value) -> bool {
    term["matchExpressions"]
        .as_array()
        .is_none_or(Vec::is_empty)
        && term["matchFields"].as_array().is_none_or(Vec::is_empty)
}

/// `key In [values]`, the expression the policy adds.
pub fn in_expression<'a>(key: &str, values: impl IntoIterator<Item = &'a String>) -> Value {
    json!({"key": key, "operator": "In", "values": values.into_iter().collect::<Vec<_>>()})
}

/// The architecture expression for the common set.
pub fn architecture_expression(common: &Architectures) -> Value {
    in_expression(ARCH_LABEL, common)
}

/// The OS expression: `kubernetes.io/os In [os]`.
pub fn operating_system_expression(os: &str) -> Value {
    json!({"key": OS_LABEL, "operator": "In", "values": [os]})
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
        let arch = architecture_expression(&common);
        let os = operating_system_expression("linux");
        assert!(constrain_required(
            &mut spec,
            &[vec![arch.clone(), os], vec![], vec![]],
            &labels,
            &[]
        ));
        // Twice: the labels are not added again; the given expressions are.
        let mut twice = spec.clone();
        assert!(constrain_required(
            &mut twice,
            &[vec![json!(1)]],
            &labels,
            &[]
        ));
        assert_eq!(
            twice["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchExpressions"][4],
            json!(1)
        );
        assert_eq!(
            spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"],
            json!([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "team", "operator": "In", "values": ["blue"]}]}, {}, {"x": 1}])
        );
        let mut none = json!({});
        assert!(!constrain_required(&mut none, &[vec![]], &[], &[]));
        assert_eq!(none, json!({}));
        let mut empty_required = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}});
        assert!(constrain_required(
            &mut empty_required,
            &[vec![arch]],
            &[],
            &[]
        ));
        assert_eq!(
            empty_required["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"],
            json!({"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]})
        );
    }
}
