//! Node affinity edits: the expressions the policy appends to a required term, its preferred
//! term, and the copies of a Pod's own terms that keep Nodes without an architecture label
//! reachable.
//!
//! Required terms are ORed by the scheduler, so a constraint must go into every term that needs
//! it: a new ORed term would let the Pod escape it.

use serde_json::{json, Value};

use crate::edit;
use crate::platform::{ARCH_LABEL, BETA_ARCH_LABEL};
use crate::read::terms::read_term;

const REQUIRED_PATH: [&str; 3] = [
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
];

/// Appends to the Pod's required terms, for each term of `original` (the Pod's own spec before
/// the pins; without terms, one term that requires nothing) that may admit a Node without an
/// architecture label (no `In` or `Exists` expression on `kubernetes.io/arch` or its beta key;
/// and not empty, which matches no Node) and is pinned (it has no `DoesNotExist` on
/// `kubernetes.io/arch`: `RequiredTerm::only_unlabelled`, such as one of these copies), a copy of
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
        read_term(term).only_unlabelled
            || term["matchExpressions"].as_array().is_some_and(|list| {
                list.iter().any(|e| {
                    arch_keys.iter().any(|key| e["key"] == *key)
                        && matches!(e["operator"].as_str(), Some("In" | "Exists"))
                })
            })
    };
    // A Pod without terms requires nothing of a Node: one copy of its nodeSelector's term.
    let own_terms = original["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        .as_array();
    let own: Vec<Value> = match own_terms {
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

/// Appends an expression to a term's `matchExpressions`, creating the list if needed.
pub fn push_expression(term: &mut Value, expression: Value) {
    if let Some(list) = edit::array_at(term, &["matchExpressions"]) {
        list.push(expression);
    }
}

/// A preferred term for one architecture.
pub fn preferred_term(architecture: &str, weight: i64) -> Value {
    json!({"weight": weight, "preference": {"matchExpressions": [
        {"key": ARCH_LABEL, "operator": "In", "values": [architecture]}]}})
}
