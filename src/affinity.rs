//! Node affinity: what a Pod's required terms admit, and the surgical edits that pin it to the
//! architectures its images run on.
//!
//! Required terms are ORed by the scheduler, so a constraint must go into every term: a new ORed
//! term would let the Pod escape it.

use serde_json::{json, Value};

use crate::edit;
use crate::platform::{self, Architectures, ARCH_LABEL, BETA_ARCH_LABEL};

/// What a term's own architecture expressions admit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admits {
    /// No expression on the architecture.
    All,
    /// Only these architectures.
    Only(Architectures),
    /// Every architecture but these.
    AllBut(Architectures),
}

impl Admits {
    fn and(self, other: Admits) -> Admits {
        match (self, other) {
            (Admits::All, x) | (x, Admits::All) => x,
            (Admits::Only(a), Admits::Only(b)) => {
                Admits::Only(a.intersection(&b).cloned().collect())
            }
            (Admits::Only(a), Admits::AllBut(b)) | (Admits::AllBut(b), Admits::Only(a)) => {
                Admits::Only(a.difference(&b).cloned().collect())
            }
            (Admits::AllBut(a), Admits::AllBut(b)) => {
                Admits::AllBut(a.union(&b).cloned().collect())
            }
        }
    }

    /// What either of two ORed terms admits.
    fn or(self, other: Admits) -> Admits {
        match (self, other) {
            (Admits::All, _) | (_, Admits::All) => Admits::All,
            (Admits::Only(a), Admits::Only(b)) => Admits::Only(a.union(&b).cloned().collect()),
            (Admits::Only(a), Admits::AllBut(b)) | (Admits::AllBut(b), Admits::Only(a)) => {
                Admits::AllBut(b.difference(&a).cloned().collect())
            }
            (Admits::AllBut(a), Admits::AllBut(b)) => {
                Admits::AllBut(a.intersection(&b).cloned().collect())
            }
        }
    }

    /// Whether `architecture` passes these expressions.
    pub fn admits(&self, architecture: &str) -> bool {
        match self {
            Admits::All => true,
            Admits::Only(only) => only.contains(architecture),
            Admits::AllBut(excluded) => !excluded.contains(architecture),
        }
    }

    /// Whether the term already admits nothing outside `common`.
    fn within(&self, common: &Architectures) -> bool {
        matches!(self, Admits::Only(only) if only.is_subset(common))
    }

    /// Whether some architecture of `common` passes these expressions.
    fn meets(&self, common: &Architectures) -> bool {
        match self {
            Admits::All => !common.is_empty(),
            Admits::Only(only) => !only.is_disjoint(common),
            Admits::AllBut(excluded) => !common.is_subset(excluded),
        }
    }

    fn describe(&self) -> String {
        match self {
            Admits::All => "every architecture".to_string(),
            Admits::Only(only) if only.is_empty() => "no architecture".to_string(),
            Admits::Only(only) => platform::join(only, ", "),
            Admits::AllBut(excluded) => {
                format!("every architecture but {}", platform::join(excluded, ", "))
            }
        }
    }
}

fn is_arch_key(key: &Value) -> bool {
    key == ARCH_LABEL || key == BETA_ARCH_LABEL
}

/// What one required term's expressions on `kubernetes.io/arch` admit.
pub fn term_admits(term: &Value) -> Admits {
    let expressions = term["matchExpressions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    expressions
        .iter()
        .filter(|expression| is_arch_key(&expression["key"]))
        .fold(Admits::All, |admits, expression| {
            let values = || -> Architectures {
                expression["values"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            };
            let this = match expression["operator"].as_str() {
                Some("In") => Admits::Only(values()),
                Some("NotIn") => Admits::AllBut(values()),
                Some("Exists") => Admits::All,
                // Every node has the label; numeric comparisons never match its values.
                Some("DoesNotExist") | Some("Gt") | Some("Lt") => {
                    Admits::Only(Architectures::new())
                }
                _ => Admits::All,
            };
            admits.and(this)
        })
}

/// A term with neither expressions nor fields matches no node.
fn is_empty_term(term: &Value) -> bool {
    let empty = |field: &str| term[field].as_array().is_none_or(Vec::is_empty);
    empty("matchExpressions") && empty("matchFields")
}

/// The verdict on a Pod's required terms against the common architectures.
#[derive(Debug, PartialEq)]
pub struct RequiredPlan {
    /// Indexes of the terms that need the architecture expression.
    pub to_constrain: Vec<usize>,
    /// Whether every non-empty term excludes all common architectures; then the description of
    /// what each term admits.
    pub conflict: Option<String>,
}

/// Decides, for each required term, whether it needs `kubernetes.io/arch In [common]`, and
/// whether any term can still place the Pod on an architecture in `common`.
pub fn plan_required(terms: &[Value], common: &Architectures) -> RequiredPlan {
    let mut to_constrain = Vec::new();
    let mut live = 0;
    let mut dead = Vec::new();
    for (index, term) in terms.iter().enumerate() {
        if is_empty_term(term) {
            continue;
        }
        let admits = term_admits(term);
        if !admits.within(common) {
            to_constrain.push(index);
        }
        if admits.meets(common) {
            live += 1;
        } else {
            dead.push(format!("term {index} admits {}", admits.describe()));
        }
    }
    let conflict = (live == 0 && !dead.is_empty()).then(|| dead.join("; "));
    RequiredPlan {
        to_constrain,
        conflict,
    }
}

/// What a Pod's required terms admit together: they are ORed. Terms with neither expressions
/// nor fields are left out; with no other term, the architecture is not constrained (`All`).
pub fn required_admits(terms: &[Value]) -> Admits {
    terms
        .iter()
        .filter(|term| !is_empty_term(term))
        .map(term_admits)
        .reduce(Admits::or)
        .unwrap_or(Admits::All)
}

/// What a Pod spec's own constraints admit: its architecture nodeSelector and its required
/// terms, which a node must both satisfy.
pub fn spec_admits(spec: &Value) -> Admits {
    let selector = &spec["nodeSelector"];
    let selected = [ARCH_LABEL, BETA_ARCH_LABEL]
        .iter()
        .filter_map(|key| selector[*key].as_str())
        .fold(Admits::All, |admits, arch| {
            admits.and(Admits::Only([arch.to_string()].into()))
        });
    let terms = crate::pod::required_terms(spec)
        .map(Vec::as_slice)
        .unwrap_or_default();
    selected.and(required_admits(terms))
}

/// The architectures outside `common` that a Pod spec's own constraints admit, among
/// `schedulable` when it is known (not empty): where a Pod whose images run only on `common`
/// could be placed and fail.
pub fn admitted_outside(
    spec: &Value,
    common: &Architectures,
    schedulable: &Architectures,
) -> Admits {
    let outside = spec_admits(spec).and(Admits::AllBut(common.clone()));
    if schedulable.is_empty() {
        outside
    } else {
        outside.and(Admits::Only(schedulable.clone()))
    }
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
                    .is_some_and(|list| list.iter().any(|e| is_arch_key(&e["key"])))
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

    fn set(list: &[&str]) -> Architectures {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn term(expressions: Value) -> Value {
        json!({"matchExpressions": expressions})
    }

    #[test]
    fn what_terms_admit() {
        assert_eq!(
            term_admits(&term(
                json!([{"key": "zone", "operator": "In", "values": ["a"]}])
            )),
            Admits::All
        );
        assert_eq!(
            term_admits(&term(json!([
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
                {"key": "beta.kubernetes.io/arch", "operator": "NotIn", "values": ["arm64"]}]))),
            Admits::Only(set(&["amd64"]))
        );
        assert_eq!(
            term_admits(&term(
                json!([{"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["s390x"]}])
            )),
            Admits::AllBut(set(&["s390x"]))
        );
        assert_eq!(
            term_admits(&term(
                json!([{"key": "kubernetes.io/arch", "operator": "DoesNotExist"}])
            )),
            Admits::Only(set(&[]))
        );
    }

    #[test]
    fn plans() {
        let common = set(&["amd64", "arm64"]);
        let terms = vec![
            term(json!([{"key": "zone", "operator": "In", "values": ["a"]}])),
            term(json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}])),
            term(
                json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64", "s390x"]}]),
            ),
            term(json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}])),
            json!({}),
        ];
        assert_eq!(
            plan_required(&terms, &common),
            RequiredPlan {
                to_constrain: vec![0, 2, 3],
                conflict: None
            }
        );
        let dead = vec![
            term(json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}])),
            term(
                json!([{"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["amd64", "arm64"]}]),
            ),
            json!({"matchExpressions": []}),
        ];
        assert_eq!(
            plan_required(&dead, &common),
            RequiredPlan {
                to_constrain: vec![0, 1],
                conflict: Some(
                    "term 0 admits s390x; term 1 admits every architecture but amd64, arm64".into()
                )
            }
        );
    }

    #[test]
    fn what_ored_terms_and_a_spec_admit() {
        let arch = |operator: &str, values: &[&str]| {
            term(json!([{"key": "kubernetes.io/arch", "operator": operator, "values": values}]))
        };
        let zone = term(json!([{"key": "zone", "operator": "In", "values": ["a"]}]));
        assert_eq!(required_admits(&[]), Admits::All);
        assert_eq!(required_admits(&[json!({})]), Admits::All);
        assert_eq!(
            required_admits(&[arch("In", &["amd64"]), json!({}), arch("In", &["s390x"])]),
            Admits::Only(set(&["amd64", "s390x"]))
        );
        assert_eq!(
            required_admits(&[arch("In", &["amd64"]), arch("NotIn", &["amd64", "s390x"])]),
            Admits::AllBut(set(&["s390x"]))
        );
        assert_eq!(
            required_admits(&[
                arch("NotIn", &["arm64", "s390x"]),
                arch("NotIn", &["s390x"])
            ]),
            Admits::AllBut(set(&["s390x"]))
        );
        assert_eq!(
            required_admits(&[arch("In", &["amd64"]), zone]),
            Admits::All
        );
        let spec = json!({"nodeSelector": {"kubernetes.io/arch": "arm64"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [arch("NotIn", &["s390x"])]}}}});
        assert_eq!(spec_admits(&spec), Admits::Only(set(&["arm64"])));
        assert_eq!(
            admitted_outside(&spec, &set(&["arm64"]), &set(&[])),
            Admits::Only(set(&[]))
        );
        let terms_only = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [arch("NotIn", &["s390x"])]}}}});
        assert_eq!(
            admitted_outside(&terms_only, &set(&["amd64"]), &set(&[])),
            Admits::AllBut(set(&["amd64", "s390x"]))
        );
        assert_eq!(
            admitted_outside(
                &terms_only,
                &set(&["amd64"]),
                &set(&["amd64", "arm64", "s390x"])
            ),
            Admits::Only(set(&["arm64"]))
        );
        assert!(Admits::AllBut(set(&["s390x"])).admits("amd64"));
        assert!(!Admits::Only(set(&["s390x"])).admits("amd64"));
    }
}
