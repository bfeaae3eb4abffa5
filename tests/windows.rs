//! Windows OS builds (setting `pinWindowsBuild`): pinned from the images' `os.version`, and
//! checked against a bound Pod's Windows node.

mod common;
use common::*;
use serde_json::{json, Value};

fn windows_index(builds: &[(&str, &str)]) -> String {
    let entries: Vec<Value> = builds
        .iter()
        .map(|(arch, version)| {
            let mut platform = json!({"architecture": arch, "os": "windows"});
            if !version.is_empty() {
                platform["os.version"] = json!(version);
            }
            json!({"mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "digest": DIGEST, "size": 1000, "platform": platform})
        })
        .collect();
    json!({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
        "manifests": entries})
    .to_string()
}

fn registry() -> FixtureRegistry {
    let mut registry = FixtureRegistry::new();
    registry.index(
        "ghcr.io/org/win-both:1",
        &windows_index(&[("amd64", "10.0.17763.6054"), ("amd64", "10.0.20348.2582")]),
    );
    registry.index(
        "ghcr.io/org/win-2022:1",
        &windows_index(&[("amd64", "10.0.20348.2527")]),
    );
    registry.index(
        "ghcr.io/org/win-2019:1",
        &windows_index(&[("amd64", "10.0.17763.6054")]),
    );
    registry.index("ghcr.io/org/win-any:1", &windows_index(&[("amd64", "")]));
    registry
}

fn windows_pod(images: &[&str], extra: Value) -> Value {
    let mut spec = json!({"os": {"name": "windows"}});
    for (key, value) in extra.as_object().unwrap() {
        spec[key] = value.clone();
    }
    pod(images, spec)
}

fn evaluate(object: &Value, settings_json: Value) -> Run {
    run_with(&mut registry(), object, &settings(settings_json))
}

fn pinned(arch: &[&str], builds: &[&str]) -> Value {
    json!({"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": arch},
            {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": builds}]}]}}}})
}

#[test]
fn the_builds_every_image_has_are_pinned_beside_the_architecture() {
    let r = evaluate(
        &windows_pod(
            &["ghcr.io/org/win-both:1", "ghcr.io/org/win-2022:1"],
            json!({}),
        ),
        json!({"pinWindowsBuild": true}),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        pinned(&["amd64"], &["10.0.20348"])
    ]));
    let r = evaluate(
        &windows_pod(&["ghcr.io/org/win-both:1"], json!({})),
        json!({"pinWindowsBuild": true}),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        pinned(&["amd64"], &["10.0.17763", "10.0.20348"])
    ]));
}

#[test]
fn images_without_os_version_run_on_any_build() {
    let r = evaluate(
        &windows_pod(
            &["ghcr.io/org/win-any:1", "ghcr.io/org/win-2019:1"],
            json!({}),
        ),
        json!({"pinWindowsBuild": true}),
    );
    r.assert_patch(json!([
        add_annotation("amd64"),
        pinned(&["amd64"], &["10.0.17763"])
    ]));
    // No image says: only the architecture.
    let r = evaluate(
        &windows_pod(&["ghcr.io/org/win-any:1"], json!({})),
        json!({"pinWindowsBuild": true}),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
}

#[test]
fn images_that_share_no_build_are_rejected_naming_each() {
    let r = evaluate(
        &windows_pod(
            &["ghcr.io/org/win-2019:1", "ghcr.io/org/win-2022:1"],
            json!({}),
        ),
        json!({"pinWindowsBuild": true}),
    );
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: no Windows OS build runs every image of this Pod: \"ghcr.io/org/win-2019:1\" is \
         built for 10.0.17763; \"ghcr.io/org/win-2022:1\" is built for 10.0.20348. A Windows node runs a \
         process-isolated container only on the OS build it was built for (node.kubernetes.io/windows-build; \
         setting pinWindowsBuild)"
    );
}

#[test]
fn without_the_setting_or_on_linux_no_build_is_pinned() {
    let r = evaluate(
        &windows_pod(
            &["ghcr.io/org/win-2019:1", "ghcr.io/org/win-2022:1"],
            json!({}),
        ),
        json!({}),
    );
    r.assert_patch(json!([add_annotation("amd64"), add_required(&["amd64"])]));
    let r = evaluate(
        &pod(&["multi:1"], json!({})),
        json!({"pinWindowsBuild": true}),
    );
    r.assert_patch(json!([
        add_annotation("amd64,arm64"),
        add_required(&["amd64", "arm64"])
    ]));
}

#[test]
fn the_pin_is_idempotent_and_a_term_on_the_build_is_kept() {
    let pod = windows_pod(&["ghcr.io/org/win-2022:1"], json!({}));
    let settings_json = json!({"pinWindowsBuild": true});
    let r = evaluate(&pod, settings_json.clone());
    let once = apply(&pod, r.patch.as_ref().unwrap());
    evaluate(&once, settings_json.clone()).assert_accepted_unchanged();
    let own = windows_pod(
        &["ghcr.io/org/win-2022:1"],
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}]}]}}}}),
    );
    let r = evaluate(&own, settings_json);
    r.assert_patch(json!([
        add_annotation("amd64"),
        {"op": "add", "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1",
         "value": {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}}
    ]));
}

#[test]
fn a_pod_bound_to_a_windows_node_of_another_build_is_rejected() {
    let mut cluster = FixtureCluster::of(vec![node("win-1", "windows", "amd64")]);
    let run = |cluster: &mut FixtureCluster, image: &str, settings_json: Value| {
        run_in_cluster(
            &mut registry(),
            cluster,
            "Pod",
            "CREATE",
            &windows_pod(&[image], json!({"nodeName": "win-1"})),
            &Value::Null,
            &settings(settings_json),
        )
    };
    let both = json!({"readNodes": true, "pinWindowsBuild": true});
    let r = run(&mut cluster, "ghcr.io/org/win-2019:1", both.clone());
    assert_eq!(
        r.rejection(),
        "image-arch-affinity: the Pod is bound to node \"win-1\" (windows/amd64, OS build 10.0.20348), which its \
         images have no build for: \"ghcr.io/org/win-2019:1\" runs only on windows/amd64 10.0.17763. Its \
         containers cannot start there (a process-isolated Windows container needs the node's architecture and \
         OS build)"
    );
    run(&mut cluster, "ghcr.io/org/win-2022:1", both.clone()).assert_accepted_unchanged();
    run(&mut cluster, "ghcr.io/org/win-any:1", both).assert_accepted_unchanged();
    // Without pinWindowsBuild only the architecture counts.
    run(
        &mut cluster,
        "ghcr.io/org/win-2019:1",
        json!({"readNodes": true}),
    )
    .assert_accepted_unchanged();
}
