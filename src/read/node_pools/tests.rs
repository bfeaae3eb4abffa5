//! Unit tests of `read::node_pools`.

use super::*;
use serde_json::json;

fn set(values: &[&str]) -> Architectures {
    values.iter().map(|v| v.to_string()).collect()
}

fn pool(spec: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
}

fn parse(pools: Vec<Value>) -> Vec<NodePool> {
    parse_list(json!({"items": pools}).to_string().as_bytes()).unwrap()
}

#[test]
fn min_values_on_the_architecture_keep_a_pool_from_pods_that_admit_fewer() {
    let pools = parse(vec![
        pool(json!({"template": {"spec": {"requirements": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"], "minValues": 2},
            {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 20}]}}})),
        pool(json!({"template": {"spec": {"requirements": [
            {"key": "beta.kubernetes.io/arch", "operator": "Exists", "minValues": 3}]}}})),
        pool(json!({"template": {"spec": {"requirements": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]}}})),
    ]);
    let min_values: Vec<usize> = pools.iter().map(|p| p.architecture_min_values).collect();
    assert_eq!(min_values, [2, 3, 0]);
    let serving_pod = |images: &[&str], pod: Value| -> Vec<usize> {
        let constraints = Constraints::read_pod(
            &pod["spec"],
            crate::read::pod::chosen_operating_system(&pod),
            "linux",
        );
        meeting_min_values(&pools, &set(images), &constraints)
            .iter()
            .map(|p| p.architecture_min_values)
            .collect()
    };
    let serving = |images: &[&str]| serving_pod(images, json!({"spec": {}}));
    assert_eq!(serving(&["arm64"]), [0]);
    assert_eq!(serving(&["amd64", "arm64"]), [2, 0]);
    assert_eq!(serving(&["amd64", "arm64", "s390x"]), [2, 3, 0]);
    // The Pod's own constraints count too: a nodeSelector on arm64 admits one architecture.
    let arm_selector = json!({"spec": {"nodeSelector": {"kubernetes.io/arch": "arm64"}}});
    assert_eq!(serving_pod(&["amd64", "arm64"], arm_selector), [0]);
    // Karpenter relaxes ORed terms one at a time: one term must admit enough by itself.
    let term = |values: &[&str]| {
        json!({"matchExpressions": [
        {"key": "kubernetes.io/arch", "operator": "In", "values": values}]})
    };
    let terms = |list: Vec<Value>| {
        json!({"spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list}}}}})
    };
    let one_each = terms(vec![term(&["amd64"]), term(&["arm64"])]);
    assert_eq!(serving_pod(&["amd64", "arm64"], one_each), [0]);
    let both = terms(vec![term(&["s390x"]), term(&["amd64", "arm64"])]);
    assert_eq!(serving_pod(&["amd64", "arm64"], both), [2, 0]);
}

#[test]
fn requirements_and_labels_narrow_the_platforms() {
    let pools = parse(vec![pool(json!({"template": {
        "metadata": {"labels": {"kubernetes.io/os": "linux", "team": "a"}},
        "spec": {"requirements": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64", "bad value"]},
            {"key": "beta.kubernetes.io/arch", "operator": "NotIn", "values": ["amd64"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]}}}))]);
    assert_eq!(pools[0].os, Possible::Only(set(&["linux"])));
    assert_eq!(pools[0].architecture, Possible::Only(set(&["arm64"])));
    let settings = Settings::default();
    assert_eq!(
        architectures(&pools, "linux", &[], &settings),
        set(&["arm64"])
    );
    assert_eq!(architectures(&pools, "windows", &[], &settings), set(&[]));
    // A label value that names no architecture the policy knows is on no node it pins to.
    let unknown = parse(vec![pool(json!({"template": {"spec": {"requirements": [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["x86_64", "arm64"]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux", "plan9"]}]}}}))]);
    assert_eq!(
        architectures(&unknown, "linux", &[], &settings),
        set(&["arm64"])
    );
    assert_eq!(architectures(&unknown, "plan9", &[], &settings), set(&[]));
}

#[test]
fn no_requirement_is_any_architecture_of_either_os() {
    let pools = parse(vec![pool(json!({"template": {"spec": {"requirements": [
        {"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["s390x"]}]}}}))]);
    let settings = Settings::default();
    let linux = architectures(&pools, "linux", &[], &settings);
    assert!(linux.contains("amd64") && linux.contains("ppc64le") && !linux.contains("s390x"));
    assert_eq!(architectures(&pools, "windows", &[], &settings), linux);
    // autoscaledArchitectures does not narrow it (Karpenter may launch what the cloud has).
    let settings: Settings = serde_json::from_value(json!({"readNodes": true,
        "autoscaledArchitectures": [{"os": "linux", "architectures": ["amd64"]}]}))
    .unwrap();
    assert_eq!(architectures(&pools, "linux", &[], &settings), linux);
    // DoesNotExist and numeric operators on a well-known label: nothing.
    let none = parse(vec![pool(json!({"template": {"spec": {"requirements": [
        {"key": "kubernetes.io/os", "operator": "DoesNotExist"}]}}}))]);
    assert_eq!(
        architectures(&none, "linux", &[], &Settings::default()),
        set(&[])
    );
}

#[test]
fn only_ready_dynamic_pools_that_are_not_deleted_count() {
    let mut not_ready = pool(json!({}));
    not_ready["status"]["conditions"][0]["status"] = json!("False");
    let mut deleting = pool(json!({}));
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let static_pool = pool(json!({"replicas": 2}));
    let no_status = json!({"metadata": {"name": "new"}, "spec": {}});
    assert_eq!(parse(vec![not_ready, deleting, static_pool, no_status]), []);
    assert_eq!(parse(vec![pool(json!({"limits": {"cpu": "0"}}))]).len(), 1);
    assert!(parse_list(b"[]").is_err());
    assert_eq!(parse_list(br#"{"items":null}"#).unwrap(), []);
}

#[test]
fn taints_must_be_tolerated_by_the_pod_or_the_architecture_tolerations() {
    let pools = parse(vec![pool(json!({"template": {"spec": {
        "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
        "taints": [{"key": "arch", "value": "arm64", "effect": "NoSchedule"},
                   {"key": "soft", "effect": "PreferNoSchedule"}],
        "startupTaints": [{"key": "init", "effect": "NoSchedule"}]}}}))]);
    let settings = Settings::default();
    assert_eq!(architectures(&pools, "linux", &[], &settings), set(&[]));
    let pod =
        json!({"spec": {"tolerations": [{"key": "arch", "operator": "Equal", "value": "arm64"}]}});
    assert_eq!(
        architectures(
            &pools,
            "linux",
            &crate::read::pod::Pod::read(&pod, &settings).tolerations,
            &settings
        ),
        set(&["arm64"])
    );
    let wrong = json!({"spec": {"tolerations": [{"key": "arch", "value": "amd64"},
        {"key": "arch", "operator": "Exists", "effect": "NoExecute"}]}});
    assert_eq!(
        architectures(
            &pools,
            "linux",
            &crate::read::pod::Pod::read(&wrong, &settings).tolerations,
            &settings
        ),
        set(&[])
    );
    let settings: Settings = serde_json::from_value(json!({"readNodes": true,
        "architectureTolerations": {"arm64": [{"key": "arch", "operator": "Exists"}]}}))
    .unwrap();
    assert_eq!(
        architectures(&pools, "linux", &[], &settings),
        set(&["arm64"])
    );
}

#[test]
fn a_missing_crd_or_grant_is_no_node_pool() {
    for error in [
        "Host error: error finding resource karpenter.sh/v1 / NodePool: ApiError: \"404 page not found\\n\": \
         Failed to parse error data (ErrorResponse { status: \"404 Not Found\", message: \"\\\"404 page not \
         found\\\\n\\\"\", reason: \"Failed to parse error data\", code: 404 })",
        "Cannot find resource karpenter.sh/v1/NodePool",
        "Host error: ApiError: the server could not find the requested resource: NotFound (ErrorResponse { \
         status: \"Failure\", message: \"the server could not find the requested resource\", reason: \
         \"NotFound\", code: 404 })",
        "Policy has not been granted access to Kubernetes karpenter.sh/v1/NodePool resources. \
         The violation has been reported.",
    ] {
        assert!(none_to_read(error), "{error}");
    }
    assert!(!none_to_read("connection refused"));
    // Numbers and words of other failures are no 404.
    assert!(!none_to_read(
        "not looked up: the lookup time budget (lookupBudgetMilliseconds: 2000) was spent after 2404 ms"
    ));
    assert!(!none_to_read(
        "Host error: error finding resource karpenter.sh/v1 / NodePool: error trying to connect: tcp \
         connect error: Connection refused (os error 111)"
    ));
    assert!(!none_to_read(
        "Host error: Cannot find resource not found/v1"
    ));
    assert!(!none_to_read(
        "nodepools.karpenter.sh is forbidden: User \"system:serviceaccount:kubewarden:policy-server\" \
         cannot list resource \"nodepools\" in API group \"karpenter.sh\" at the cluster scope"
    ));
}
