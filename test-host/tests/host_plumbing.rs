//! Host plumbing without a registry or a wasm module: the waPC callback over an in-memory
//! source, kwctl-shaped responses and JSON patches, kwctl replay files.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use test_host::host::{build_response, make_callback, PolicyValidationResponse};
use test_host::{fixtures, HostCalls, InMemorySource, ManifestSource, Operation};

type Callback = Box<
    dyn Fn(
        u64,
        &str,
        &str,
        &str,
        &[u8],
    ) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>>,
>;

fn cb_over(source: Arc<dyn ManifestSource>, cache: bool) -> (Callback, Arc<Mutex<HostCalls>>) {
    let record = Arc::new(Mutex::new(HostCalls::default()));
    let cache = cache.then(|| Arc::new(Mutex::new(Default::default())));
    (
        Box::new(make_callback(source, cache, record.clone(), false)),
        record,
    )
}

#[test]
fn in_memory_answers_errors_and_counts() {
    let src = InMemorySource::new()
        .with_manifest(
            "ghcr.io/a/b:1",
            br#"{"schemaVersion":2,"manifests":[]}"#.to_vec(),
        )
        .with_error(
            Operation::OciManifest,
            "ghcr.io/a/down:1",
            "Callback evaluation failure: boom 503",
        );
    let src = Arc::new(src);
    let (cb, record) = cb_over(src.clone(), true);
    let p = |s: &str| serde_json::to_vec(s).unwrap();

    let a = cb(
        0,
        "kubewarden",
        "oci",
        "v1/oci_manifest",
        &p("ghcr.io/a/b:1"),
    )
    .unwrap();
    assert_eq!(a, br#"{"schemaVersion":2,"manifests":[]}"#);
    // Second call: same answer, from the host cache.
    cb(
        0,
        "kubewarden",
        "oci",
        "v1/oci_manifest",
        &p("ghcr.io/a/b:1"),
    )
    .unwrap();
    let d: Value = serde_json::from_slice(
        &cb(
            0,
            "kubewarden",
            "oci",
            "v1/manifest_digest",
            &p("ghcr.io/a/b:1"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(d["digest"].as_str().unwrap().starts_with("sha256:"));
    let e = cb(
        0,
        "kubewarden",
        "oci",
        "v1/oci_manifest",
        &p("ghcr.io/a/down:1"),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "Callback evaluation failure: boom 503");
    let e = cb(
        0,
        "kubewarden",
        "oci",
        "v1/oci_manifest_config",
        &p("ghcr.io/x/y:1"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("no answer"), "{e}");
    assert_eq!(
        src.misses(),
        vec![(Operation::OciManifestConfig, "ghcr.io/x/y:1".to_string())]
    );
    // Payload that is not a JSON string.
    assert!(cb(0, "kubewarden", "oci", "v1/oci_manifest", b"{}").is_err());
    // Guest logs are recorded, not counted.
    cb(
        0,
        "kubewarden",
        "tracing",
        "log",
        br#"{"level":"info","message":"hi"}"#,
    )
    .unwrap();

    let calls = record.lock().unwrap().clone();
    assert_eq!(calls.count(Operation::OciManifest), 4);
    assert_eq!(calls.count(Operation::OciManifestConfig), 1);
    assert_eq!(calls.count(Operation::ManifestDigest), 1);
    assert_eq!(calls.total(), 6);
    assert_eq!(calls.calls.iter().filter(|c| c.cached).count(), 1);
    assert_eq!(calls.logs.len(), 1);
    assert_eq!(
        calls.images(),
        vec!["ghcr.io/a/b:1", "ghcr.io/a/down:1", "ghcr.io/x/y:1"]
    );
    let report = calls.report();
    assert_eq!(report["v1/oci_manifest"], 4);
    assert_eq!(report["v1/oci_manifest_config"], 1);
    assert_eq!(report["images"].as_array().unwrap().len(), 3);
}

#[test]
fn cache_off_reaches_the_source_every_time() {
    let src = Arc::new(
        InMemorySource::new()
            .with_manifest("r/a:1", b"{}".to_vec())
            .with_latency(Duration::from_millis(5)),
    );
    let (cb, record) = cb_over(src, false);
    for _ in 0..3 {
        cb(0, "kubewarden", "oci", "v1/oci_manifest", b"\"r/a:1\"").unwrap();
    }
    let calls = record.lock().unwrap().clone();
    assert!(calls.calls.iter().all(|c| !c.cached && c.micros >= 5000));
}

#[test]
fn fixture_source_resolves_indexes_like_the_host() {
    let src = fixtures::in_memory_source("127.0.0.1:5000");
    let r = |s: &str| format!("127.0.0.1:5000/{s}");
    let cfg: Value = serde_json::from_slice(
        &src.fetch(Operation::OciManifestConfig, &r("multi/docker-list:1.0"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(cfg["config"]["architecture"], "amd64");
    assert!(src
        .fetch(Operation::OciManifestConfig, &r("multi/s390x-only:1.0"))
        .is_err());
    let idx: Value = serde_json::from_slice(
        &src.fetch(Operation::OciManifest, &r("multi/oci-index:1.0"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(idx["manifests"].as_array().unwrap().len(), 4);
    let f = fixtures::by_repository("single/arm64-oci").unwrap();
    assert!(src
        .fetch(
            Operation::OciManifest,
            &r(&format!("single/arm64-oci@{}", f.top.digest))
        )
        .is_ok());
    assert!(src
        .fetch(
            Operation::OciManifest,
            &r(&format!("single/arm64-oci:1.0@{}", f.top.digest))
        )
        .is_ok());
}

fn decode_patch(p: &str) -> Value {
    serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(p).unwrap()).unwrap()
}

#[test]
fn response_shapes_match_kwctl() {
    let original = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"image": "x"}]}});

    // Accept without mutation: no patch keys, no status, nulls kept.
    let r = build_response(
        "u",
        Some(&original),
        &PolicyValidationResponse {
            accepted: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        r#"{"uid":"u","allowed":true,"auditAnnotations":null,"warnings":null}"#
    );

    // Reject with message, code and warnings.
    let r = build_response(
        "u",
        Some(&original),
        &PolicyValidationResponse {
            accepted: false,
            message: Some("no".into()),
            code: Some(400),
            warnings: Some(vec!["w".into()]),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        r#"{"uid":"u","allowed":false,"status":{"message":"no","code":400},"auditAnnotations":null,"warnings":["w"]}"#
    );

    // Mutation: JSON patch computed by the host; a dropped field becomes a remove.
    let mut mutated = original.clone();
    mutated["spec"]["affinity"] = json!({"nodeAffinity": {}});
    mutated["metadata"].as_object_mut().unwrap().remove("name");
    let r = build_response(
        "u",
        Some(&original),
        &PolicyValidationResponse {
            accepted: true,
            mutated_object: Some(mutated),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.patch_type.as_deref(), Some("JSONPatch"));
    let line = serde_json::to_string(&r).unwrap();
    assert!(
        line.starts_with(r#"{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":""#),
        "{line}"
    );
    let patch = decode_patch(r.patch.as_ref().unwrap());
    assert!(patch
        .as_array()
        .unwrap()
        .contains(&json!({"op": "remove", "path": "/metadata/name"})));
    assert!(patch
        .as_array()
        .unwrap()
        .contains(&json!({"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {}}})));

    // Mutated object identical to the original: no patch.
    let r = build_response(
        "u",
        Some(&original),
        &PolicyValidationResponse {
            accepted: true,
            mutated_object: Some(original.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(r.patch.is_none() && r.patch_type.is_none());

    // DELETE (no object) with a mutation: rejected like policy-evaluator does.
    let r = build_response(
        "u",
        None,
        &PolicyValidationResponse {
            accepted: true,
            mutated_object: Some(json!({})),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!r.allowed);
    assert!(r
        .status
        .unwrap()
        .message
        .unwrap()
        .starts_with("Incoming object is null"));
}

#[test]
fn kwctl_replay_file() {
    let yaml = r#"
- type: Exchange
  request: |
    !OciManifest
    image: ghcr.io/org/app:1.0
  response:
    type: Success
    payload: '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}'
- type: Exchange
  request: |
    !OciManifestAndConfig
    image: ghcr.io/org/gone:1.0
  response:
    type: Error
    message: "not found"
"#;
    let src = InMemorySource::from_kwctl_replay_str(yaml).unwrap();
    let m: Value = serde_json::from_slice(
        &src.fetch(Operation::OciManifest, "ghcr.io/org/app:1.0")
            .unwrap(),
    )
    .unwrap();
    assert_eq!(m["manifests"], json!([]));
    assert_eq!(
        src.fetch(Operation::OciManifestConfig, "ghcr.io/org/gone:1.0")
            .unwrap_err(),
        "not found"
    );
}
