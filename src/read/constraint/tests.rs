//! Unit tests of `read::constraint`.

use super::*;
use serde_json::json;

fn set(list: &[&str]) -> Architectures {
    list.iter().map(|s| s.to_string()).collect()
}

fn spec_with_terms(selector: Value, terms: Value) -> Value {
    json!({"nodeSelector": selector, "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}})
}

fn selected(selector: Value) -> Admits {
    Constraints::read(&json!({ "nodeSelector": selector }), "linux").admits()
}

fn admits(selector: Value, terms: Value) -> Admits {
    Constraints::read(&spec_with_terms(selector, terms), "linux").admits()
}

#[test]
fn selector_and_terms_are_one_constraint() {
    let arch = |op: &str, values: &[&str]| json!({"matchExpressions": [{"key": "kubernetes.io/arch", "operator": op, "values": values}]});
    // No required node affinity constrains nothing; one with zero terms matches no node.
    assert_eq!(selected(json!({})), Admits::All);
    assert_eq!(admits(json!({}), json!([])), Admits::none());
    assert_eq!(admits(json!({}), json!([{}])), Admits::none());
    assert_eq!(
        selected(json!({"kubernetes.io/arch": "arm64"})),
        Admits::Only(set(&["arm64"]))
    );
    assert_eq!(
        admits(
            json!({"kubernetes.io/arch": "arm64"}),
            json!([arch("In", &["s390x"])])
        ),
        Admits::none()
    );
    assert_eq!(
        selected(json!({"kubernetes.io/arch": "amd64", "beta.kubernetes.io/arch": "arm64"})),
        Admits::none()
    );
    // A beta arch selector needs the beta label: only nodes that have it.
    assert_eq!(
        selected(json!({"beta.kubernetes.io/arch": "arm64"})),
        Admits::Only(set(&["arm64"]))
    );
    assert_eq!(
        admits(
            json!({}),
            json!([arch("In", &["amd64"]), arch("NotIn", &["amd64", "s390x"])])
        ),
        Admits::AllBut(set(&["s390x"]))
    );
    // Another OS's nodes are not the Pod's.
    assert_eq!(
        selected(json!({"kubernetes.io/os": "windows"})),
        Admits::none()
    );
    // Impossible requirements on other labels and on the name.
    let zone = json!([{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]},
        {"key": "zone", "operator": "NotIn", "values": ["a"]}]}]);
    assert_eq!(admits(json!({}), zone), Admits::none());
    let named = json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]},
                         {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}]);
    assert_eq!(admits(json!({}), named), Admits::All);
    let ranks = |low: &str, high: &str, not: &str| {
        json!([{"matchExpressions": [
        {"key": "rank", "operator": "Gt", "values": [low]},
        {"key": "rank", "operator": "Lt", "values": [high]},
        {"key": "rank", "operator": "NotIn", "values": [not]}]}])
    };
    assert_eq!(admits(json!({}), ranks("1", "3", "2")), Admits::All);
    assert_eq!(admits(json!({}), ranks("1", "2", "x")), Admits::none());
    // Integer label values have no sign: below 0 there is none, from -1 up there is 0.
    assert_eq!(admits(json!({}), ranks("-5", "0", "x")), Admits::none());
    assert_eq!(admits(json!({}), ranks("-5", "1", "x")), Admits::All);
    assert_eq!(admits(json!({}), ranks("-5", "1", "0")), Admits::All);
    // Numeric comparisons on the architecture admit only numeric ones.
    assert_eq!(
        admits(
            json!({}),
            json!([{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "Gt", "values": ["1"]}]}])
        ),
        Admits::Only(set(&["386"]))
    );
}

#[test]
fn within_a_universe() {
    let all = set(&["amd64", "arm64", "s390x"]);
    assert!(Admits::AllBut(set(&["s390x"])).within(&set(&["amd64", "arm64"]), &all));
    assert!(!Admits::AllBut(set(&["s390x"])).within(&set(&["amd64"]), &all));
    assert!(!Admits::AllBut(set(&["s390x"])).within(&set(&["amd64", "arm64"]), &set(&[])));
    assert!(Admits::Only(set(&["arm64"])).within(&set(&["arm64"]), &set(&[])));
}
