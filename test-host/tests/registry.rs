//! Against a real registry: starts Debian's `docker-registry` on a free 127.0.0.1 port (storage in
//! a temp dir), seeds the fixtures, and checks the host's answers to the `kubewarden/oci/*` host
//! calls through the waPC callback itself (no wasm needed). One #[test] owns the registry so it
//! is always stopped (Drop runs on panic too).
//!
//! Needs `docker-registry` (apt-get install docker-registry); set DOCKER_REGISTRY_BIN to use
//! another binary.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use test_host::fixtures::{self, DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST};
use test_host::host::make_callback;
use test_host::local_registry::LocalRegistry;
use test_host::{HostCalls, ManifestSource, Operation, RegistrySource, Sources};

/// Raw GET with an Accept header: (status, content-type, body).
fn http_get(addr: &str, path: &str, accept: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: {accept}\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&buf[..split]).to_string();
    let body = buf[split + 4..].to_vec();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let ctype = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    (status, ctype, body)
}

type Callback = Box<
    dyn Fn(
        u64,
        &str,
        &str,
        &str,
        &[u8],
    ) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>>,
>;

fn callback(source: Arc<dyn ManifestSource>) -> (Callback, Arc<Mutex<HostCalls>>) {
    let record = Arc::new(Mutex::new(HostCalls::default()));
    (
        Box::new(make_callback(source, None, record.clone(), false)),
        record,
    )
}

fn call(cb: &Callback, op: &str, image: &str) -> Result<Value, String> {
    cb(
        0,
        "kubewarden",
        "oci",
        op,
        &serde_json::to_vec(image).unwrap(),
    )
    .map(|bytes| serde_json::from_slice(&bytes).expect("JSON answer"))
    .map_err(|e| e.to_string())
}

#[test]
fn registry_host_capabilities() {
    let registry = LocalRegistry::start().expect("docker-registry starts");
    let reg = registry.addr.clone();

    // Seed.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pushed = rt.block_on(fixtures::push_all(&reg)).expect("seed");
    drop(rt);
    assert_eq!(pushed.len(), fixtures::all().len());

    // The registry serves each fixture with its media type and digest.
    let accept = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json";
    for f in &pushed {
        let (status, ctype, body) = http_get(
            &reg,
            &format!("/v2/{}/manifests/{}", f.repository, f.tag),
            accept,
        );
        assert_eq!(status, 200, "{}", f.name());
        assert_eq!(ctype, f.top.media_type, "{}", f.name());
        assert_eq!(body, f.top.data, "{}", f.name());
    }

    let source: Arc<dyn ManifestSource> =
        Arc::new(RegistrySource::new(&Sources::insecure([reg.clone()])).unwrap());
    fixtures::verify(source.as_ref(), &reg).unwrap();
    let (cb, record) = callback(source.clone());

    // v1/oci_manifest: OCI index, 4 entries incl. 2 attestations, bytes passed through.
    let oci = fixtures::by_repository("multi/oci-index").unwrap();
    let idx = call(
        &cb,
        "v1/oci_manifest",
        &format!("{reg}/multi/oci-index:1.0"),
    )
    .unwrap();
    assert_eq!(idx["mediaType"], OCI_INDEX);
    let entries = idx["manifests"].as_array().unwrap();
    assert_eq!(entries.len(), 4);
    let attestations: Vec<&Value> = entries
        .iter()
        .filter(|e| e["annotations"]["vnd.docker.reference.type"] == "attestation-manifest")
        .collect();
    assert_eq!(attestations.len(), 2);
    assert!(attestations
        .iter()
        .all(|e| e["platform"] == json!({"architecture": "unknown", "os": "unknown"})));
    assert_eq!(idx, oci.top.json());

    // Docker manifest list: 5 entries, Docker media types.
    let list = call(
        &cb,
        "v1/oci_manifest",
        &format!("{reg}/multi/docker-list:1.0"),
    )
    .unwrap();
    assert_eq!(list["mediaType"], DOCKER_LIST);
    let entries = list["manifests"].as_array().unwrap();
    assert_eq!(entries.len(), 5);
    assert!(entries.iter().all(|e| e["mediaType"] == DOCKER_MANIFEST));

    // Entries with no os survive the raw pass-through.
    let no_os = call(&cb, "v1/oci_manifest", &format!("{reg}/multi/no-os:1.0")).unwrap();
    assert!(no_os["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["platform"].get("os").is_none() && e["platform"]["architecture"].is_string()));

    // Windows os.version survives too.
    let win = call(
        &cb,
        "v1/oci_manifest",
        &format!("{reg}/multi/windows-linux:1.0"),
    )
    .unwrap();
    assert_eq!(
        win["manifests"][0]["platform"]["os.version"],
        "10.0.20348.2227"
    );

    // By digest and by tag@digest.
    let by_digest = call(
        &cb,
        "v1/oci_manifest",
        &format!("{reg}/multi/oci-index@{}", oci.top.digest),
    )
    .unwrap();
    assert_eq!(by_digest, idx);
    let by_both = call(
        &cb,
        "v1/oci_manifest",
        &format!("{reg}/multi/oci-index:1.0@{}", oci.top.digest),
    )
    .unwrap();
    assert_eq!(by_both, idx);
    let arm64 = oci.child("LINUX_ARM64_V8").unwrap();
    let entry = call(
        &cb,
        "v1/oci_manifest",
        &format!("{reg}/multi/oci-index@{}", arm64.digest),
    )
    .unwrap();
    assert_eq!(entry["mediaType"], OCI_MANIFEST);

    // v1/oci_manifest_config on a Docker schema 2 single manifest: the config's platform.
    let amd = call(
        &cb,
        "v1/oci_manifest_config",
        &format!("{reg}/single/amd64-docker:1.0"),
    )
    .unwrap();
    assert_eq!(amd["config"]["architecture"], "amd64");
    assert_eq!(amd["config"]["os"], "linux");
    assert_eq!(
        amd["digest"],
        json!(
            fixtures::by_repository("single/amd64-docker")
                .unwrap()
                .top
                .digest
        )
    );
    assert_eq!(amd["manifest"]["mediaType"], DOCKER_MANIFEST);

    // ... on the arm64 OCI single manifest: variant v8.
    let arm = call(
        &cb,
        "v1/oci_manifest_config",
        &format!("{reg}/single/arm64-oci:1.0"),
    )
    .unwrap();
    assert_eq!(arm["config"]["architecture"], "arm64");
    assert_eq!(arm["config"]["variant"], "v8");

    // ... on the Docker list: resolved to the host's platform, linux/amd64.
    let list_fixture = fixtures::by_repository("multi/docker-list").unwrap();
    let resolved = call(
        &cb,
        "v1/oci_manifest_config",
        &format!("{reg}/multi/docker-list:1.0"),
    )
    .unwrap();
    assert_eq!(resolved["config"]["architecture"], "amd64");
    assert_eq!(resolved["config"]["os"], "linux");
    assert_eq!(
        resolved["digest"],
        json!(list_fixture.child("LINUX_AMD64").unwrap().digest)
    );

    // ... on an index without linux/amd64: the host fails, as the real one does.
    let err = call(
        &cb,
        "v1/oci_manifest_config",
        &format!("{reg}/multi/s390x-only:1.0"),
    )
    .unwrap_err();
    assert!(
        err.contains("no entry found in image index manifest matching client's default platform"),
        "{err}"
    );
    let err = call(
        &cb,
        "v1/oci_manifest_config",
        &format!("{reg}/multi/windows-only:1.0"),
    )
    .unwrap_err();
    assert!(err.contains("no entry found"), "{err}");

    // v1/manifest_digest.
    let d = call(
        &cb,
        "v1/manifest_digest",
        &format!("{reg}/multi/oci-index:1.0"),
    )
    .unwrap();
    assert_eq!(d, json!({"digest": oci.top.digest}));

    // Missing repository and missing tag: errors from the registry, worded like the real host.
    for missing in [
        format!("{reg}/nope/missing:1.0"),
        format!("{reg}/multi/oci-index:nope"),
    ] {
        // (distribution answers 404 MANIFEST_UNKNOWN; oci-client words it "manifest unknown")
        for op in [
            "v1/oci_manifest",
            "v1/oci_manifest_config",
            "v1/manifest_digest",
        ] {
            let err = call(&cb, op, &missing).unwrap_err();
            assert!(err.starts_with("Callback evaluation failure: "), "{err}");
            assert!(err.contains("manifest unknown"), "{op} {missing}: {err}");
            assert!(
                err.contains(
                    &missing
                        .replace(&format!("{reg}/"), "")
                        .replace(':', "/manifests/")
                ),
                "{err}"
            );
        }
    }

    // Connection refused names the cause.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dead: Arc<dyn ManifestSource> =
        Arc::new(RegistrySource::new(&Sources::insecure([closed.to_string()])).unwrap());
    let (dead_cb, _) = callback(dead);
    let err = call(&dead_cb, "v1/oci_manifest", &format!("{closed}/a/b:1")).unwrap_err();
    assert!(err.to_lowercase().contains("connect"), "{err}");

    // Unknown operation / namespace / binding.
    let err = call(&cb, "v1/nope", &format!("{reg}/multi/oci-index:1.0")).unwrap_err();
    assert_eq!(err, "unknown operation: v1/nope");
    let err = cb(0, "kubewarden", "nope", "v1/oci_manifest", b"\"x\"").unwrap_err();
    assert_eq!(err.to_string(), "unknown namespace: nope");
    let err = cb(0, "other", "oci", "v1/oci_manifest", b"\"x\"").unwrap_err();
    assert_eq!(err.to_string(), "unknown binding: other");

    // Calls were counted.
    let calls = record.lock().unwrap().clone();
    assert_eq!(calls.count(Operation::OciManifest), 9);
    assert_eq!(calls.count(Operation::OciManifestConfig), 7);
    assert_eq!(calls.count(Operation::ManifestDigest), 3);
    assert_eq!(calls.counts()["kubewarden/nope/v1/oci_manifest"], 1);
    assert!(calls
        .images()
        .contains(&format!("{reg}/multi/docker-list:1.0")));
    assert_eq!(calls.calls.iter().filter(|c| !c.ok).count(), 11);

    // The re-serializing mode (what policy-evaluator really does) fails on entries without os.
    let strict = RegistrySource::with_fidelity(
        &Sources::insecure([reg.clone()]),
        test_host::ManifestFidelity::Reserialized,
    )
    .unwrap();
    let err = strict
        .fetch(Operation::OciManifest, &format!("{reg}/multi/no-os:1.0"))
        .unwrap_err();
    assert!(
        err.contains("did not match any variant of untagged enum OciManifest"),
        "{err}"
    );
    let ok: Value = serde_json::from_slice(
        &strict
            .fetch(
                Operation::OciManifest,
                &format!("{reg}/multi/oci-index:1.0"),
            )
            .unwrap(),
    )
    .unwrap();
    assert_eq!(ok["manifests"].as_array().unwrap().len(), 4);

    // The in-memory source built from the fixtures agrees with the registry.
    let mem = fixtures::in_memory_source(&reg);
    for f in &pushed {
        let r = f.reference(&reg);
        for op in Operation::ALL {
            let real = source
                .fetch(op, &r)
                .map(|b| serde_json::from_slice::<Value>(&b).unwrap());
            let fake = mem
                .fetch(op, &r)
                .map(|b| serde_json::from_slice::<Value>(&b).unwrap());
            match (real, fake) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{op} {r}"),
                (Err(_), Err(_)) => {}
                (a, b) => panic!("{op} {r}: registry {a:?} vs in-memory {b:?}"),
            }
        }
    }
}
