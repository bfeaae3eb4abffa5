//! A Pod's required node affinity terms as the edit will find them: for each term, what decides
//! whether an expression the policy adds is written there (a term that matches nothing, one that
//! admits only Nodes without an architecture label, the keys it already has, its `In` lists), and
//! whether the paths the edit writes can hold what it writes. Read once from the JSON, so that the
//! decision knows exactly what its plan changes without editing anything.

use serde_json::Value;

use crate::platform::ARCH_LABEL;

/// One expression of a term, as far as the edit reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Expression<'a> {
    pub key: Option<&'a str>,
    /// The values of an `In` expression whose values are all strings.
    pub in_values: Option<Vec<&'a str>>,
}

/// One required term.
#[derive(Debug, Clone, PartialEq)]
pub struct RequiredTerm<'a> {
    /// It has neither expressions nor fields: it matches no node, and gets no label.
    pub matches_nothing: bool,
    /// It has `kubernetes.io/arch DoesNotExist`: it admits only Nodes without an architecture
    /// label (virtual nodes), and gets no label.
    pub only_unlabelled: bool,
    /// An expression can be appended to it (an object whose `matchExpressions` is a list, or
    /// none yet).
    pub pushable: bool,
    pub expressions: Vec<Expression<'a>>,
}

impl RequiredTerm<'_> {
    /// Whether it has an expression on `key`.
    pub fn has_key(&self, key: &str) -> bool {
        self.expressions.iter().any(|e| e.key == Some(key))
    }

    /// Whether it has an `In` expression on `key` whose values all pass `among`.
    pub fn keeps_within(&self, key: &str, among: impl Fn(&str) -> bool) -> bool {
        self.expressions.iter().any(|e| {
            e.key == Some(key)
                && e.in_values
                    .as_ref()
                    .is_some_and(|values| values.iter().all(|v| among(v)))
        })
    }
}

/// Whether each path the edit writes can hold what it writes there (every step an object or
/// absent, the last a list or absent): where one cannot, nothing is written there.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Writable {
    /// `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required: bool,
    /// `spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred: bool,
    pub tolerations: bool,
    pub annotations: bool,
}

/// Reads one required term.
pub fn read_term(term: &Value) -> RequiredTerm<'_> {
    let expressions: &[Value] = term["matchExpressions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let fields_empty = term["matchFields"].as_array().is_none_or(Vec::is_empty);
    fn expression(e: &Value) -> Expression<'_> {
        let strings = e["values"].as_array().and_then(|values| {
            values
                .iter()
                .map(Value::as_str)
                .collect::<Option<Vec<&str>>>()
        });
        Expression {
            key: e["key"].as_str(),
            in_values: strings.filter(|_| e["operator"] == "In"),
        }
    }
    RequiredTerm {
        matches_nothing: expressions.is_empty() && fields_empty,
        only_unlabelled: expressions
            .iter()
            .any(|e| e["key"] == ARCH_LABEL && e["operator"] == "DoesNotExist"),
        pushable: term.is_object()
            && (term["matchExpressions"].is_null() || term["matchExpressions"].is_array()),
        expressions: expressions.iter().map(expression).collect(),
    }
}

/// Whether `path` below `value` can be written as `edit::json` writes it.
fn writable(value: &Value, path: &[&str], leaf_list: bool) -> bool {
    let mut current = value;
    for (depth, key) in path.iter().enumerate() {
        if !current.is_object() {
            return false;
        }
        current = &current[*key];
        if current.is_null() {
            return true;
        }
        if depth + 1 == path.len() {
            return if leaf_list {
                current.is_array()
            } else {
                current.is_object()
            };
        }
    }
    true
}

/// Where the edit can write in a Pod (or a Pod template).
pub fn writable_paths(pod: &Value) -> Writable {
    let affinity =
        |last: &str, list| writable(pod, &["spec", "affinity", "nodeAffinity", last], list);
    Writable {
        required: affinity("requiredDuringSchedulingIgnoredDuringExecution", false),
        preferred: affinity("preferredDuringSchedulingIgnoredDuringExecution", true),
        tolerations: writable(pod, &["spec", "tolerations"], true),
        annotations: writable(pod, &["metadata", "annotations"], false),
    }
}
