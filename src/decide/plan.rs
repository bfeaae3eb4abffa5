//! The plan: what the decision asks `edit` to write into the Pod's JSON, and nothing else. Each
//! part holds only what changes the Pod (an expression a term already has, a toleration it
//! already has, a path that cannot hold the value: none of them is in it), so that two plans are
//! equal exactly when they leave the Pod alike.

use crate::settings::Toleration;

/// `key In [values]`: the only expression the policy adds to a required term.
#[derive(Debug, Clone, PartialEq)]
pub struct Expression {
    pub key: String,
    pub values: Vec<String>,
}

impl Expression {
    pub fn new<'a>(key: &str, values: impl IntoIterator<Item = &'a String>) -> Expression {
        Expression {
            key: key.to_string(),
            values: values.into_iter().cloned().collect(),
        }
    }
}

/// One required term as the plan leaves it: one of the Pod's (by index) or a new one, with the
/// expressions appended to its `matchExpressions`.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub from: Option<usize>,
    pub added: Vec<Expression>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// The Pod's required terms, where they change (in order).
    pub terms: Option<Vec<Term>>,
    /// Copies of the Pod's own terms for the Nodes without an architecture label, appended
    /// after the terms (`edit::affinity::keep_without_architecture`).
    pub unlabelled_copies: bool,
    /// Preferred terms to append: an architecture and its weight.
    pub preferred: Vec<(String, i64)>,
    /// Tolerations to append.
    pub tolerations: Vec<Toleration>,
    /// What the annotation `image-arch-affinity.kubewarden.io/architectures` records.
    pub annotation: Option<String>,
}
