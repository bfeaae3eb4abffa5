use super::*;

fn platforms(raw: &str) -> Vec<String> {
    match parse_manifest(raw.as_bytes()).unwrap() {
        Manifest::Index(listed) => listed
            .builds
            .platforms
            .iter()
            .map(ToString::to_string)
            .collect(),
        Manifest::Single { .. } => vec!["single".into()],
        Manifest::WebAssembly => vec!["webassembly".into()],
    }
}

/// `index` of one image, read like a lookup reads it.
fn finished(raw: &str) -> Found {
    match parse_manifest(raw.as_bytes())? {
        Manifest::Index(listed) => finish_index(listed.builds, listed.entries),
        other => panic!("not an index: {other:?}"),
    }
}

#[test]
fn index_entries_without_attestations() {
    let raw = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
      {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:a","size":1,"platform":{"architecture":"amd64","os":"linux"}},
      {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:b","size":1,"platform":{"architecture":"arm64","os":"linux","variant":"v8"}},
      {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:c","size":1,"platform":{"architecture":"unknown","os":"unknown"},
       "annotations":{"vnd.docker.reference.digest":"sha256:a","vnd.docker.reference.type":"attestation-manifest"}},
      {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:d","size":1,"platform":{"architecture":"amd64","os":"linux"},
       "annotations":{"vnd.docker.reference.type":"attestation-manifest"}}]}"#;
    assert_eq!(platforms(raw), ["linux/amd64", "linux/arm64"]);
}

#[test]
fn docker_list_with_variants() {
    let raw = r#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json","manifests":[
      {"platform":{"architecture":"arm","os":"linux","variant":"v7"}},
      {"platform":{"architecture":"arm","os":"linux","variant":"v6"}},
      {"platform":{"architecture":"s390x","os":"linux"}},
      {"platform":{"architecture":"amd64","os":"windows","os.version":"10.0.17763.1"}}]}"#;
    let list = finished(raw).unwrap().platforms;
    let names: Vec<String> = list.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["linux/arm", "linux/s390x", "windows/amd64"]);
    assert_eq!(list[2].os_build.as_deref(), Some("10.0.17763"));
}

#[test]
fn entries_without_os_count_for_every_os() {
    let raw = r#"{"manifests":[{"platform":{"architecture":"amd64"}},{"platform":{"architecture":"arm64"}},{"digest":"sha256:x"}]}"#;
    assert_eq!(platforms(raw), ["amd64", "arm64"]);
}

#[test]
fn single_manifests_need_their_config() {
    let oci = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:a","size":2},"layers":[]}"#;
    assert_eq!(platforms(oci), ["single"]);
    let schema1 =
        r#"{"schemaVersion":1,"name":"a","tag":"1","architecture":"amd64","fsLayers":[]}"#;
    assert_eq!(platforms(schema1), ["amd64"]);
}

fn manifest_with(config_type: &str, artifact_type: Option<&str>) -> Manifest {
    let mut manifest = serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": config_type, "digest": "sha256:a", "size": 2}, "layers": []});
    if let Some(artifact_type) = artifact_type {
        manifest["artifactType"] = artifact_type.into();
    }
    parse_manifest(manifest.to_string().as_bytes()).unwrap()
}

#[test]
fn webassembly_artifacts_are_known_from_their_manifest() {
    for config_type in [
        "application/vnd.fermyon.spin.application.v1+config",
        "application/vnd.wasm.config.v0+json",
        "application/vnd.wasm.config.v1+json",
    ] {
        assert_eq!(
            manifest_with(config_type, None),
            Manifest::WebAssembly,
            "{config_type}"
        );
    }
    assert_eq!(
        manifest_with(
            "application/vnd.oci.empty.v1+json",
            Some("application/vnd.wasm.config.v0+json")
        ),
        Manifest::WebAssembly
    );
    // Container images are read from their config; other artifacts too, named if that
    // names no platform.
    assert_eq!(
        manifest_with("application/vnd.docker.container.image.v1+json", None),
        Manifest::Single { artifact: None }
    );
    assert_eq!(
        manifest_with("application/vnd.cncf.helm.config.v1+json", None),
        Manifest::Single {
            artifact: Some("application/vnd.cncf.helm.config.v1+json".into())
        }
    );
    assert_eq!(
        manifest_with(
            "application/vnd.oci.empty.v1+json",
            Some("application/spdx+json")
        ),
        Manifest::Single {
            artifact: Some("application/spdx+json".into())
        }
    );
}

#[test]
fn webassembly_entries_are_apart_from_the_native_ones() {
    let mixed = r#"{"manifests":[{"platform":{"architecture":"amd64","os":"linux"}},{"platform":{"architecture":"wasm","os":"wasip1"}}]}"#;
    let builds = finished(mixed).unwrap();
    assert!(builds.webassembly);
    assert_eq!(builds.platforms.len(), 1);
    assert_eq!(builds.left_out, Vec::<String>::new());
    let only = r#"{"manifests":[{"platform":{"architecture":"wasm","os":"wasi"}}]}"#;
    assert_eq!(
        finished(only),
        Ok(Builds {
            webassembly: true,
            ..Builds::default()
        })
    );
}

#[test]
fn unusable_answers_say_why() {
    assert_eq!(
        finished(r#"{"schemaVersion":2,"manifests":[]}"#).unwrap_err(),
        "the image index has no entries"
    );
    assert_eq!(
        finished(r#"{"manifests":[{"platform":{"architecture":"unknown","os":"unknown"}},{"platform":{"architecture":"unknown","os":"unknown"}}]}"#).unwrap_err(),
        "the image index has no runnable entry (its 2 entries are attestations or of unknown platform)"
    );
    assert_eq!(
        parse_manifest(br#"{"errors":[]}"#).unwrap_err(),
        "the registry's answer is neither an image manifest nor an image index"
    );
    assert!(parse_manifest(b"<html>")
        .unwrap_err()
        .starts_with("the registry's answer is not a manifest: "));
}

#[test]
fn config_platform() {
    let platform = |raw: &[u8]| builds_from_config(raw, None).map(|b| b.platforms);
    let raw = br#"{"manifest":{},"digest":"sha256:a","config":{"architecture":"arm","os":"linux","variant":"v7","rootfs":{}}}"#;
    assert_eq!(platform(raw).unwrap()[0].to_string(), "linux/arm");
    let windows =
        br#"{"config":{"architecture":"amd64","os":"windows","os.version":"10.0.20348.2527"}}"#;
    assert_eq!(
        platform(windows).unwrap()[0].os_build.as_deref(),
        Some("10.0.20348")
    );
    assert_eq!(
        platform(br#"{"config":{"os":"linux"}}"#).unwrap_err(),
        "the image config names no runnable architecture"
    );
    assert_eq!(
        builds_from_config(br#"{"config":{"architecture":"wasm","os":"wasip1"}}"#, None),
        Ok(Builds {
            webassembly: true,
            ..Builds::default()
        })
    );
    assert!(is_operator_bundle(
        br#"{"config":{"architecture":"amd64","os":"linux","config":{"Labels":{
            "operators.operatorframework.io.bundle.mediatype.v1":"registry+v1"}}}}"#
    ));
    for other in [
        &br#"{"config":{"architecture":"amd64","os":"linux","config":{"Labels":{"a":"b"}}}}"#[..],
        br#"{"config":{"architecture":"amd64","os":"linux","config":{"Labels":null}}}"#,
        br#"{"config":{"architecture":"amd64","os":"linux"}}"#,
        br#"{"config":"operators.operatorframework.io.bundle.mediatype.v1"}"#,
    ] {
        assert!(!is_operator_bundle(other));
    }
    assert_eq!(
        builds_from_config(
            br#"{"config":{"name":"chart","version":"1.0.0"}}"#,
            Some("application/vnd.cncf.helm.config.v1+json")
        )
        .unwrap_err(),
        r#"the manifest is an artifact of type "application/vnd.cncf.helm.config.v1+json", not a container image"#
    );
}
