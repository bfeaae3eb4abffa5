//! The e2e fixture images: built here, deterministically (same bytes, same digests on every run),
//! with real gzip'd tar layers, real image configs and sha256 digests; pushed by `seed-registry`.

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use crate::sha256_digest;

pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub const OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
pub const DOCKER_LAYER_GZIP: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";
pub const IN_TOTO: &str = "application/vnd.in-toto+json";
/// A Spin application's config (`spin registry push`) and its WebAssembly layers.
pub const SPIN_CONFIG: &str = "application/vnd.fermyon.spin.application.v1+config";
pub const WASM_LAYER: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// A Helm chart pushed to an OCI registry (`helm push`).
pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
pub const HELM_CHART: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

/// A CNCF ModelPack model (`application/vnd.cncf.model.*`).
pub const MODEL_MANIFEST: &str = "application/vnd.cncf.model.manifest.v1+json";
pub const MODEL_CONFIG: &str = "application/vnd.cncf.model.config.v1+json";
pub const MODEL_WEIGHT: &str = "application/vnd.cncf.model.weight.v1.raw";
/// An OCI 1.1 artifact's empty config (`{}`), an artifact type of our own, an uncompressed layer.
pub const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
pub const DATASET: &str = "application/vnd.example.dataset.v1";
pub const OCI_LAYER_TAR: &str = "application/vnd.oci.image.layer.v1.tar";

/// A blob (config or layer) with its digest.
#[derive(Debug, Clone)]
pub struct Blob {
    pub media_type: String,
    pub data: Vec<u8>,
    pub digest: String,
}

impl Blob {
    fn new(media_type: &str, data: Vec<u8>) -> Blob {
        let digest = sha256_digest(&data);
        Blob {
            media_type: media_type.to_string(),
            data,
            digest,
        }
    }

    fn descriptor(&self) -> Value {
        json!({"mediaType": self.media_type, "digest": self.digest, "size": self.data.len()})
    }
}

/// A manifest (image manifest, index or list) as pushed: exact bytes, media type, digest.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Name used for the shell variable (`<FIXTURE>_<name>_DIGEST`); empty for the tagged one.
    pub name: String,
    pub media_type: String,
    pub data: Vec<u8>,
    pub digest: String,
    /// Blobs this manifest references (image manifests only).
    pub blobs: Vec<Blob>,
    /// The image config, for image manifests.
    pub config: Option<Value>,
}

impl Manifest {
    fn new(name: &str, media_type: &str, value: &Value, blobs: Vec<Blob>) -> Manifest {
        let data = canonical_json(value).into_bytes();
        let digest = sha256_digest(&data);
        let config = blobs
            .first()
            .filter(|b| b.media_type == OCI_CONFIG || b.media_type == DOCKER_CONFIG)
            .and_then(|b| serde_json::from_slice(&b.data).ok());
        Manifest {
            name: name.to_string(),
            media_type: media_type.to_string(),
            data,
            digest,
            blobs,
            config,
        }
    }

    /// The manifest as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.data).expect("fixture manifests are JSON")
    }

    fn descriptor(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("mediaType".into(), json!(self.media_type));
        m.insert("digest".into(), json!(self.digest));
        m.insert("size".into(), json!(self.data.len()));
        m
    }
}

/// One tagged fixture: its tagged manifest plus the manifests an index refers to.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub repository: String,
    pub tag: String,
    /// Shell variable stem: `MULTI_OCI_INDEX` for `multi/oci-index:1.0`.
    pub var: String,
    /// What the tag points at.
    pub top: Manifest,
    /// Manifests referenced by `top` (pushed by digest before it).
    pub children: Vec<Manifest>,
    /// One line on what the fixture is for.
    pub description: String,
}

impl Fixture {
    /// `repository:tag`.
    pub fn name(&self) -> String {
        format!("{}:{}", self.repository, self.tag)
    }

    /// `registry/repository:tag`.
    pub fn reference(&self, registry: &str) -> String {
        format!("{registry}/{}:{}", self.repository, self.tag)
    }

    /// The child manifest called `name` (e.g. `LINUX_AMD64`).
    pub fn child(&self, name: &str) -> Option<&Manifest> {
        self.children.iter().find(|m| m.name == name)
    }

    /// `(VARIABLE, digest)` lines for the digests file.
    pub fn digest_vars(&self) -> Vec<(String, String)> {
        let mut out = vec![(format!("{}_DIGEST", self.var), self.top.digest.clone())];
        for child in &self.children {
            out.push((
                format!("{}_{}_DIGEST", self.var, child.name),
                child.digest.clone(),
            ));
        }
        out
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Oci,
    Docker,
}

struct Platform<'a> {
    os: Option<&'a str>,
    arch: &'a str,
    variant: Option<&'a str>,
    os_version: Option<&'a str>,
}

const fn linux<'a>(arch: &'a str, variant: Option<&'a str>) -> Platform<'a> {
    Platform {
        os: Some("linux"),
        arch,
        variant,
        os_version: None,
    }
}

const WINDOWS_VERSION: &str = "10.0.20348.2227";

impl Platform<'_> {
    fn index_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("architecture".into(), json!(self.arch));
        if let Some(os) = self.os {
            m.insert("os".into(), json!(os));
        }
        if let Some(v) = self.os_version {
            m.insert("os.version".into(), json!(v));
        }
        if let Some(v) = self.variant {
            m.insert("variant".into(), json!(v));
        }
        Value::Object(m)
    }

    fn slug(&self) -> String {
        let os = match self.os {
            None => "NOOS",
            Some("") => "EMPTYOS",
            Some(os) => os,
        };
        let mut s = format!("{os}_{}", self.arch);
        if let Some(v) = self.variant {
            s.push('_');
            s.push_str(v);
        }
        // A shell variable name, whatever the platform says (the odd-values fixtures).
        s.chars()
            .take(40)
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect()
    }
}

/// A single-platform image: config + one layer, manifest of `kind`.
fn image(kind: Kind, name: &str, label: &str, p: &Platform) -> Manifest {
    image_labelled(kind, name, label, p, &[])
}

/// `image` with these labels besides the fixture's own in its config.
fn image_labelled(
    kind: Kind,
    name: &str,
    label: &str,
    p: &Platform,
    labels: &[(&str, &str)],
) -> Manifest {
    let file = format!("fixture {label} for {}/{}\n", p.os.unwrap_or("-"), p.arch);
    let tar = tar_one_file("fixture.txt", file.as_bytes());
    let diff_id = sha256_digest(&tar);
    let (config_mt, layer_mt, manifest_mt) = match kind {
        Kind::Oci => (OCI_CONFIG, OCI_LAYER_GZIP, OCI_MANIFEST),
        Kind::Docker => (DOCKER_CONFIG, DOCKER_LAYER_GZIP, DOCKER_MANIFEST),
    };
    let layer = Blob::new(layer_mt, gzip_stored(&tar));
    let mut config = serde_json::Map::new();
    config.insert("architecture".into(), json!(p.arch));
    config.insert("os".into(), json!(p.os.unwrap_or("linux")));
    if let Some(v) = p.variant {
        config.insert("variant".into(), json!(v));
    }
    if let Some(v) = p.os_version {
        config.insert("os.version".into(), json!(v));
    }
    config.insert("created".into(), json!("2024-01-01T00:00:00Z"));
    let mut all_labels = json!({"io.kubewarden.test-fixture": label});
    for (key, value) in labels {
        all_labels[*key] = json!(value);
    }
    config.insert(
        "config".into(),
        json!({"Cmd": ["/fixture"], "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], "Labels": all_labels}),
    );
    config.insert(
        "rootfs".into(),
        json!({"type": "layers", "diff_ids": [diff_id]}),
    );
    config.insert(
        "history".into(),
        // "test-host": the crate's former name, kept so the fixture digests stay the same.
        json!([{"created": "2024-01-01T00:00:00Z", "created_by": format!("test-host fixture {label}")}]),
    );
    let config = Blob::new(
        config_mt,
        canonical_json(&Value::Object(config)).into_bytes(),
    );
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": manifest_mt,
        "config": config.descriptor(),
        "layers": [layer.descriptor()],
    });
    Manifest::new(name, manifest_mt, &manifest, vec![config, layer])
}

/// A BuildKit-style attestation manifest for `subject` (what `docker buildx` pushes next to
/// each platform image: in-toto layers, config platform unknown/unknown).
fn attestation(name: &str, label: &str, subject: &Manifest) -> Manifest {
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v0.1",
        "predicateType": "https://slsa.dev/provenance/v0.2",
        "subject": [{"name": label, "digest": {"sha256": subject.digest.trim_start_matches("sha256:")}}],
        "predicate": {"builder": {"id": "test-host seed-registry"}},
    });
    let layer = Blob::new(IN_TOTO, canonical_json(&statement).into_bytes());
    let config = Blob::new(
        OCI_CONFIG,
        canonical_json(&json!({
            "architecture": "unknown",
            "os": "unknown",
            "config": {},
            "rootfs": {"type": "layers", "diff_ids": [layer.digest]},
        }))
        .into_bytes(),
    );
    let mut layer_desc = layer.descriptor();
    layer_desc["annotations"] =
        json!({"in-toto.io/predicate-type": "https://slsa.dev/provenance/v0.2"});
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": config.descriptor(),
        "layers": [layer_desc],
    });
    Manifest::new(name, OCI_MANIFEST, &manifest, vec![config, layer])
}

enum Entry<'a> {
    Image(Manifest, Platform<'a>),
    Attestation(Manifest, String),
    /// An index listed by an index (no platform), as OCI allows.
    Index(Manifest),
}

fn index(kind: Kind, entries: &[Entry]) -> Manifest {
    let list: Vec<Value> = entries
        .iter()
        .map(|e| match e {
            Entry::Image(m, p) => {
                let mut d = m.descriptor();
                d.insert("platform".into(), p.index_json());
                Value::Object(d)
            }
            Entry::Attestation(m, subject) => {
                let mut d = m.descriptor();
                d.insert(
                    "annotations".into(),
                    json!({
                        "vnd.docker.reference.digest": subject,
                        "vnd.docker.reference.type": "attestation-manifest",
                    }),
                );
                d.insert(
                    "platform".into(),
                    json!({"architecture": "unknown", "os": "unknown"}),
                );
                Value::Object(d)
            }
            Entry::Index(m) => Value::Object(m.descriptor()),
        })
        .collect();
    let media_type = match kind {
        Kind::Oci => OCI_INDEX,
        Kind::Docker => DOCKER_LIST,
    };
    let value = json!({"schemaVersion": 2, "mediaType": media_type, "manifests": list});
    Manifest::new("", media_type, &value, Vec::new())
}

/// A single-manifest artifact of `config_type` with `config` and one layer per `layers` entry
/// (media type, bytes): what `spin registry push` or `helm push` writes.
fn artifact(config_type: &str, config: &Value, layers: &[(&str, &[u8])]) -> Manifest {
    typed_artifact(None, config_type, config, layers)
}

/// An artifact as above, with an `artifactType` when given (OCI 1.1: `oras push
/// --artifact-type`, CNCF ModelPack).
fn typed_artifact(
    artifact_type: Option<&str>,
    config_type: &str,
    config: &Value,
    layers: &[(&str, &[u8])],
) -> Manifest {
    let config = Blob::new(config_type, canonical_json(config).into_bytes());
    let layers: Vec<Blob> = layers
        .iter()
        .map(|(media_type, data)| Blob::new(media_type, data.to_vec()))
        .collect();
    let mut manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": config.descriptor(),
        "layers": layers.iter().map(Blob::descriptor).collect::<Vec<_>>(),
    });
    if let Some(artifact_type) = artifact_type {
        manifest["artifactType"] = json!(artifact_type);
    }
    let mut blobs = vec![config];
    blobs.extend(layers);
    Manifest::new("", OCI_MANIFEST, &manifest, blobs)
}

/// An OCI index of `entries` named `name` (a child of another fixture).
fn named_index(name: &str, entries: &[Entry]) -> Manifest {
    let Manifest {
        media_type, data, ..
    } = index(Kind::Oci, entries);
    Manifest::new(
        name,
        &media_type,
        &serde_json::from_slice(&data).expect("an index is JSON"),
        Vec::new(),
    )
}

fn wasm(os: &str) -> Platform<'_> {
    Platform {
        os: Some(os),
        arch: "wasm",
        variant: None,
        os_version: None,
    }
}

/// The WebAssembly and artifact fixtures, and the nested indexes.
fn not_native() -> Vec<Fixture> {
    let mut out = Vec::new();
    {
        let repo = "wasm/single";
        let m = image(Kind::Oci, "", repo, &wasm("wasi"));
        out.push(fixture(
            repo,
            "single OCI image manifest, config wasi/wasm (docker buildx --platform wasi/wasm)",
            m,
            vec![],
        ));
    }
    out.push(multi(
        "wasm/index",
        "OCI index: wasi/wasm and wasip1/wasm only",
        Kind::Oci,
        &[wasm("wasi"), wasm("wasip1")],
    ));
    out.push(multi(
        "wasm/native-wasm",
        "OCI index: linux/amd64, linux/arm64/v8 and wasi/wasm",
        Kind::Oci,
        &[
            linux("amd64", None),
            linux("arm64", Some("v8")),
            wasm("wasi"),
        ],
    ));
    out.push(fixture(
        "wasm/spin",
        "Spin application artifact: config application/vnd.fermyon.spin.application.v1+config, a WebAssembly layer, no platform",
        artifact(
            SPIN_CONFIG,
            &json!({"spin_lock_version": 1, "metadata": {"name": "hello", "version": "1.0.0"},
                "triggers": [{"id": "trigger--hello", "trigger_type": "http", "trigger_config": {"component": "hello", "route": "/..."}}],
                "components": [{"id": "hello", "source": {"content": {"digest": "see layer 0"}}}]}),
            &[(WASM_LAYER, b"\0asm\x01\0\0\0")],
        ),
        vec![],
    ));
    out.push(fixture(
        "artifacts/helm-chart",
        "Helm chart artifact: config application/vnd.cncf.helm.config.v1+json, one chart layer",
        artifact(
            HELM_CONFIG,
            &json!({"apiVersion": "v2", "name": "chart", "version": "1.0.0"}),
            &[(
                HELM_CHART,
                &gzip_stored(&tar_one_file(
                    "chart/Chart.yaml",
                    b"apiVersion: v2\nname: chart\nversion: 1.0.0\n",
                )),
            )],
        ),
        vec![],
    ));
    // Image volumes: artifacts with no platform, which an image volume mounts on any node.
    out.push(fixture(
        "artifacts/model",
        "CNCF ModelPack model artifact: artifactType application/vnd.cncf.model.manifest.v1+json, config application/vnd.cncf.model.config.v1+json, one weight layer, no platform",
        typed_artifact(
            Some(MODEL_MANIFEST),
            MODEL_CONFIG,
            &json!({"descriptor": {"name": "tiny", "version": "1.0"},
                "config": {"format": "raw"}, "modelfs": {"type": "layers", "diffIds": []}}),
            &[(MODEL_WEIGHT, b"not really weights\n")],
        ),
        vec![],
    ));
    out.push(fixture(
        "artifacts/dataset",
        "data artifact as oras push --artifact-type writes it: artifactType application/vnd.example.dataset.v1, the empty config {}, one tar layer, no platform",
        typed_artifact(
            Some(DATASET),
            EMPTY_CONFIG,
            &json!({}),
            &[(
                OCI_LAYER_TAR,
                &tar_one_file("data/rows.csv", b"a,b\n1,2\n"),
            )],
        ),
        vec![],
    ));
    {
        let repo = "nested/index";
        let s390x = image(Kind::Oci, "LINUX_S390X", repo, &linux("s390x", None));
        let arm64 = image(
            Kind::Oci,
            "LINUX_ARM64_V8",
            repo,
            &linux("arm64", Some("v8")),
        );
        let wasip1 = image(Kind::Oci, "WASIP1_WASM", repo, &wasm("wasip1"));
        let inner = named_index(
            "INNER",
            &[
                Entry::Image(arm64.clone(), linux("arm64", Some("v8"))),
                Entry::Image(wasip1.clone(), wasm("wasip1")),
            ],
        );
        let top = index(
            Kind::Oci,
            &[
                Entry::Image(s390x.clone(), linux("s390x", None)),
                Entry::Index(inner.clone()),
            ],
        );
        out.push(fixture(
            repo,
            "OCI index: linux/s390x, and an index (linux/arm64/v8, wasip1/wasm) as its second entry",
            top,
            vec![s390x, arm64, wasip1, inner],
        ));
    }
    {
        // Four indexes deep: the policy follows three.
        let repo = "nested/too-deep";
        let amd64 = image(Kind::Oci, "LINUX_AMD64", repo, &linux("amd64", None));
        let level4 = named_index(
            "LEVEL4",
            &[Entry::Image(amd64.clone(), linux("amd64", None))],
        );
        let level3 = named_index("LEVEL3", &[Entry::Index(level4.clone())]);
        let level2 = named_index("LEVEL2", &[Entry::Index(level3.clone())]);
        let top = index(Kind::Oci, &[Entry::Index(level2.clone())]);
        out.push(fixture(
            repo,
            "OCI index nesting indexes four deep (index, LEVEL2, LEVEL3, LEVEL4 with linux/amd64)",
            top,
            vec![amd64, level4, level3, level2],
        ));
    }
    out
}

fn var_of(repository: &str, tag: &str) -> String {
    let _ = tag;
    repository
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn fixture(repository: &str, description: &str, top: Manifest, children: Vec<Manifest>) -> Fixture {
    Fixture {
        repository: repository.to_string(),
        tag: "1.0".to_string(),
        var: var_of(repository, "1.0"),
        top,
        children,
        description: description.to_string(),
    }
}

/// A multi-platform fixture: one image per platform, in an index or list of `kind`.
fn multi(repository: &str, description: &str, kind: Kind, platforms: &[Platform]) -> Fixture {
    let mut entries = Vec::new();
    let mut children = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for p in platforms {
        let mut name = p.slug();
        if names.contains(&name) {
            name = format!("{name}_{}", names.len() + 1);
        }
        names.push(name.clone());
        let m = image(kind, &name, repository, p);
        children.push(m.clone());
        entries.push(Entry::Image(
            m,
            Platform {
                os: p.os,
                arch: p.arch,
                variant: p.variant,
                os_version: p.os_version,
            },
        ));
    }
    fixture(repository, description, index(kind, &entries), children)
}

/// Every fixture, in push order.
pub fn all() -> Vec<Fixture> {
    let mut out = Vec::new();

    // multi/oci-index: amd64 + arm64/v8 + one attestation per platform.
    {
        let repo = "multi/oci-index";
        let amd64 = image(Kind::Oci, "LINUX_AMD64", repo, &linux("amd64", None));
        let arm64 = image(
            Kind::Oci,
            "LINUX_ARM64_V8",
            repo,
            &linux("arm64", Some("v8")),
        );
        let att_amd64 = attestation("ATTESTATION_AMD64", repo, &amd64);
        let att_arm64 = attestation("ATTESTATION_ARM64", repo, &arm64);
        let top = index(
            Kind::Oci,
            &[
                Entry::Image(amd64.clone(), linux("amd64", None)),
                Entry::Image(arm64.clone(), linux("arm64", Some("v8"))),
                Entry::Attestation(att_amd64.clone(), amd64.digest.clone()),
                Entry::Attestation(att_arm64.clone(), arm64.digest.clone()),
            ],
        );
        out.push(fixture(
            repo,
            "OCI index: linux/amd64, linux/arm64/v8 and two BuildKit attestation entries",
            top,
            vec![amd64, arm64, att_amd64, att_arm64],
        ));
    }

    out.push(multi(
        "multi/docker-list",
        "Docker manifest list v2: linux amd64, arm64/v8, arm/v7, ppc64le, s390x",
        Kind::Docker,
        &[
            linux("amd64", None),
            linux("arm64", Some("v8")),
            linux("arm", Some("v7")),
            linux("ppc64le", None),
            linux("s390x", None),
        ],
    ));

    {
        let repo = "single/arm64-oci";
        let m = image(Kind::Oci, "", repo, &linux("arm64", Some("v8")));
        out.push(fixture(
            repo,
            "single OCI image manifest, config linux/arm64/v8",
            m,
            vec![],
        ));
    }
    {
        let repo = "single/amd64-docker";
        let m = image(Kind::Docker, "", repo, &linux("amd64", None));
        out.push(fixture(
            repo,
            "single Docker schema 2 manifest, config linux/amd64",
            m,
            vec![],
        ));
    }

    let windows = Platform {
        os: Some("windows"),
        arch: "amd64",
        variant: None,
        os_version: Some(WINDOWS_VERSION),
    };
    out.push(multi(
        "multi/windows-linux",
        "OCI index: windows/amd64 (with os.version) + linux/amd64",
        Kind::Oci,
        &[
            Platform {
                os_version: Some(WINDOWS_VERSION),
                ..windows
            },
            linux("amd64", None),
        ],
    ));
    out.push(multi(
        "multi/windows-only",
        "OCI index: windows/amd64 only",
        Kind::Oci,
        &[Platform {
            os_version: Some(WINDOWS_VERSION),
            ..windows
        }],
    ));

    {
        // An Operator Lifecycle Manager bundle as `operator-sdk bundle` builds one: manifests,
        // no binaries; the platform in its config is the build machine's.
        let repo = "single/olm-bundle";
        let m = image_labelled(
            Kind::Oci,
            "",
            repo,
            &linux("amd64", None),
            &[
                (
                    "operators.operatorframework.io.bundle.mediatype.v1",
                    "registry+v1",
                ),
                (
                    "operators.operatorframework.io.bundle.manifests.v1",
                    "manifests/",
                ),
                (
                    "operators.operatorframework.io.bundle.package.v1",
                    "fixture-operator",
                ),
            ],
        );
        out.push(fixture(
            repo,
            "single OCI image manifest of an OLM bundle (config label operators.operatorframework.io.bundle.mediatype.v1), config linux/amd64",
            m,
            vec![],
        ));
    }
    {
        let repo = "single/armv7";
        let m = image(Kind::Oci, "", repo, &linux("arm", Some("v7")));
        out.push(fixture(
            repo,
            "single OCI image manifest, config linux/arm/v7",
            m,
            vec![],
        ));
    }

    out.push(multi(
        "multi/no-os",
        "OCI index whose platforms carry architecture (amd64, arm64) but no os",
        Kind::Oci,
        &[
            Platform {
                os: None,
                arch: "amd64",
                variant: None,
                os_version: None,
            },
            Platform {
                os: None,
                arch: "arm64",
                variant: None,
                os_version: None,
            },
        ],
    ));

    out.push(multi(
        "multi/empty-os",
        "OCI index whose platforms carry architecture (amd64, arm64) and an empty os string",
        Kind::Oci,
        &[
            Platform {
                os: Some(""),
                arch: "amd64",
                variant: None,
                os_version: None,
            },
            Platform {
                os: Some(""),
                arch: "arm64",
                variant: None,
                os_version: None,
            },
        ],
    ));

    {
        let repo = "multi/attestations-only";
        let amd64 = image(Kind::Oci, "SUBJECT_AMD64", repo, &linux("amd64", None));
        let arm64 = image(
            Kind::Oci,
            "SUBJECT_ARM64",
            repo,
            &linux("arm64", Some("v8")),
        );
        let att_amd64 = attestation("ATTESTATION_AMD64", repo, &amd64);
        let att_arm64 = attestation("ATTESTATION_ARM64", repo, &arm64);
        let top = index(
            Kind::Oci,
            &[
                Entry::Attestation(att_amd64.clone(), amd64.digest.clone()),
                Entry::Attestation(att_arm64.clone(), arm64.digest.clone()),
            ],
        );
        // The subjects are pushed (so the digests in the annotations resolve) but not listed.
        out.push(fixture(
            repo,
            "OCI index with only two attestation entries (their subjects are not listed)",
            top,
            vec![amd64, arm64, att_amd64, att_arm64],
        ));
    }

    out.push(fixture(
        "multi/empty-index",
        "OCI index with zero entries",
        index(Kind::Oci, &[]),
        vec![],
    ));

    out.push(multi(
        "multi/s390x-only",
        "OCI index: linux/s390x only",
        Kind::Oci,
        &[linux("s390x", None)],
    ));
    // Values no node reports, as a careless or hostile image index carries them.
    let long_arch = "a".repeat(64);
    out.push(multi(
        "multi/odd-values",
        "OCI index: linux/amd64, and linux entries whose architecture no node reports (a space, \
         selector syntax, 64 characters, an unknown name)",
        Kind::Oci,
        &[
            linux("amd64", None),
            linux("arm 64", None),
            linux("s390x),pool in (zz", None),
            linux(&long_arch, None),
            linux("sparc64", None),
        ],
    ));
    out.push(multi(
        "multi/windows-odd-build",
        "OCI index: windows/amd64 of build 10.0.20348, and one whose os.version carries selector syntax",
        Kind::Oci,
        &[
            Platform {
                os_version: Some(WINDOWS_VERSION),
                ..windows
            },
            Platform {
                os_version: Some("10.0.17763),node.kubernetes.io/windows-build in (1"),
                ..windows
            },
        ],
    ));
    out.extend(not_native());
    out
}

/// The images of the Kubernetes-judged property (`k8s-judge/`), beside `all()`: OCI indexes of
/// every non-empty subset of five Linux platforms (`gen/linux-<arches>`), Windows images of three
/// OS builds alone and with Linux entries (`gen/windows-<builds>[-linux-<arches>]`), and
/// single-platform images (`gen/single-<os>-<arch>`, linux/arm64 and linux/s390x Docker schema 2
/// images); the Linux and single-platform ones again as
/// `library/<name>`. Tagged `1.0`.
pub fn property() -> Vec<Fixture> {
    const LINUX: [(&str, Option<&str>); 5] = [
        ("amd64", None),
        ("arm64", Some("v8")),
        ("arm", Some("v7")),
        ("ppc64le", None),
        ("s390x", None),
    ];
    const BUILDS: [&str; 3] = ["10.0.17763.5458", "10.0.20348.2227", "10.0.26100.1742"];
    let slug = |arches: &[&str]| arches.join("-");
    let mut out = Vec::new();
    let subsets = |count: usize| {
        (1..1u32 << count).map(move |bits| (0..count).filter(move |i| bits & (1 << i) != 0))
    };
    for subset in subsets(LINUX.len()) {
        let platforms: Vec<Platform> = subset.map(|i| linux(LINUX[i].0, LINUX[i].1)).collect();
        let arches: Vec<&str> = platforms.iter().map(|p| p.arch).collect();
        out.push(multi(
            &format!("gen/linux-{}", slug(&arches)),
            "generated: Linux platforms",
            Kind::Oci,
            &platforms,
        ));
    }
    let windows = |build| Platform {
        os: Some("windows"),
        arch: "amd64",
        variant: None,
        os_version: Some(build),
    };
    for subset in subsets(BUILDS.len()) {
        let builds: Vec<&str> = subset.map(|i| BUILDS[i]).collect();
        let names: Vec<&str> = builds
            .iter()
            .map(|b| b.split('.').nth(2).unwrap_or(b))
            .collect();
        let platforms: Vec<Platform> = builds.iter().map(|b| windows(b)).collect();
        let repository = format!("gen/windows-{}", slug(&names));
        out.push(multi(
            &repository,
            "generated: Windows builds",
            Kind::Oci,
            &platforms,
        ));
        let mixed: Vec<Platform> = platforms
            .into_iter()
            .chain([linux("amd64", None), linux("arm64", Some("v8"))])
            .collect();
        out.push(multi(
            &format!("{repository}-linux-amd64-arm64"),
            "generated: Windows builds and Linux",
            Kind::Oci,
            &mixed,
        ));
    }
    // Two of them Docker schema 2 images (a Docker image config), as `docker build` without
    // BuildKit pushes them.
    for (os, arch, variant, os_version, kind) in [
        ("linux", "amd64", None, None, Kind::Oci),
        ("linux", "arm64", Some("v8"), None, Kind::Docker),
        ("linux", "s390x", None, None, Kind::Docker),
        ("windows", "amd64", None, Some(BUILDS[1]), Kind::Oci),
    ] {
        let platform = Platform {
            os: Some(os),
            arch,
            variant,
            os_version,
        };
        let repository = format!("gen/single-{os}-{arch}");
        let m = image(kind, "", &repository, &platform);
        out.push(fixture(&repository, "generated: one platform", m, vec![]));
    }
    // The Linux and single-platform images again where Docker Hub keeps its official images: a
    // single-name reference (`linux-amd64:1.0`, docker.io/library/linux-amd64:1.0) reaches them
    // through registryMirrors.
    let official: Vec<Fixture> = out
        .iter()
        .filter(|f| {
            f.repository.starts_with("gen/linux-") || f.repository.starts_with("gen/single-")
        })
        .map(|f| {
            let repository = f.repository.replacen("gen/", "library/", 1);
            Fixture {
                var: var_of(&repository, &f.tag),
                repository,
                description: format!("{}, at a Docker Hub official image's path", f.description),
                ..f.clone()
            }
        })
        .collect();
    out.extend(official);
    out
}

/// What each fixture runs on, as JSON for other harnesses (`seed-registry --catalog`):
/// `[{"image": "repo:tag", "digest": ..., "mediaType": ..., "platforms": [...]}]`, a platform
/// being an index entry's `platform` object (with `"attestation": true` for an entry annotated
/// `vnd.docker.reference.type`) or, for an image manifest, its config's `os`, `architecture`,
/// `variant` and `os.version`; `digest` is the tagged manifest's. An index that lists indexes
/// also has `"flattened"`: the entries of every index it nests, followed by digest through the
/// fixture's children, each with its `"depth"` (the tagged index's entries are at depth 1).
pub fn catalog(fixtures: &[Fixture]) -> Value {
    // An index entry's platform, as the catalog writes it.
    let entry_platform = |entry: &Value| -> Value {
        let mut platform = entry["platform"].clone();
        if entry["annotations"]["vnd.docker.reference.type"].is_string() {
            platform["attestation"] = json!(true);
        }
        platform
    };
    // The entries of `index` at `depth` and of the indexes it lists, among `f`'s children.
    fn flatten(
        f: &Fixture,
        index: &Value,
        depth: u64,
        platform: &dyn Fn(&Value) -> Value,
        out: &mut Vec<Value>,
    ) {
        for entry in index["manifests"].as_array().into_iter().flatten() {
            let nested = f.children.iter().find(|child| {
                Some(child.digest.as_str()) == entry["digest"].as_str() && is_index(child)
            });
            match nested {
                Some(child) => flatten(f, &child.json(), depth + 1, platform, out),
                None => {
                    let mut p = platform(entry);
                    p["depth"] = json!(depth);
                    out.push(p);
                }
            }
        }
    }
    let platforms = |f: &Fixture| -> Vec<Value> {
        if let Some(config) = &f.top.config {
            let mut platform = serde_json::Map::new();
            for key in ["os", "architecture", "variant", "os.version"] {
                if let Some(value) = config.get(key) {
                    platform.insert(key.into(), value.clone());
                }
            }
            return vec![Value::Object(platform)];
        }
        let top = f.top.json();
        let entries = top["manifests"].as_array().cloned().unwrap_or_default();
        entries.iter().map(entry_platform).collect()
    };
    Value::Array(
        fixtures
            .iter()
            .map(|f| {
                let mut entry = json!({"image": f.name(), "digest": f.top.digest, "mediaType": f.top.media_type, "platforms": platforms(f)});
                if is_index(&f.top) && f.children.iter().any(is_index) {
                    let mut flattened = Vec::new();
                    flatten(f, &f.top.json(), 1, &entry_platform, &mut flattened);
                    entry["flattened"] = Value::Array(flattened);
                }
                // A single image's config labels besides the fixture's own (an OLM bundle's).
                let labels = f.top.config.as_ref().and_then(|config| config["config"]["Labels"].as_object());
                let own: serde_json::Map<String, Value> = labels
                    .into_iter()
                    .flatten()
                    .filter(|(key, _)| key.as_str() != "io.kubewarden.test-fixture")
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect();
                if !own.is_empty() {
                    entry["labels"] = Value::Object(own);
                }
                entry
            })
            .collect(),
    )
}

fn is_index(m: &Manifest) -> bool {
    m.media_type == OCI_INDEX || m.media_type == DOCKER_LIST
}

/// The fixture called `repository` (e.g. `multi/oci-index`).
pub fn by_repository(repository: &str) -> Option<Fixture> {
    all().into_iter().find(|f| f.repository == repository)
}

/// The digests file `seed-registry --digests-out` writes: `NAME_DIGEST=sha256:...` lines.
pub fn digests_env(fixtures: &[Fixture]) -> String {
    let mut out = String::from("# written by seed-registry: fixture manifest digests\n");
    for f in fixtures {
        for (k, v) in f.digest_vars() {
            out.push_str(&format!("{k}={v}\n"));
        }
    }
    out
}

/// Push every fixture to `registry` (`host:port`, plain HTTP). Returns the fixtures, after
/// checking that the registry computed the same manifest digests.
pub async fn push_all(registry: &str) -> Result<Vec<Fixture>> {
    push(registry, all()).await
}

/// Push `fixtures` to `registry` (`host:port`, plain HTTP), as `push_all` does.
pub async fn push(registry: &str, fixtures: Vec<Fixture>) -> Result<Vec<Fixture>> {
    use oci_client::client::{ClientConfig, ClientProtocol};
    use oci_client::{Client, Reference};

    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![registry.to_string()]),
        ..Default::default()
    });
    for f in &fixtures {
        let push_manifest = |m: &Manifest, reference: Reference| {
            let client = client.clone();
            let m = m.clone();
            async move {
                for blob in &m.blobs {
                    if !client.blob_exists(&reference, &blob.digest).await? {
                        client
                            .push_blob(&reference, blob.data.clone(), &blob.digest)
                            .await
                            .with_context(|| format!("push blob {}", blob.digest))?;
                    }
                }
                let url = client
                    .push_manifest_raw(&reference, m.data.clone(), m.media_type.parse()?)
                    .await
                    .with_context(|| format!("push manifest {reference}"))?;
                if !url.ends_with(&m.digest) {
                    bail!(
                        "registry stored {reference} at {url}, expected digest {}",
                        m.digest
                    );
                }
                Ok::<_, anyhow::Error>(())
            }
        };
        for child in &f.children {
            let r: Reference = format!("{registry}/{}@{}", f.repository, child.digest)
                .parse()
                .map_err(|e| anyhow!("{e}"))?;
            push_manifest(child, r).await?;
        }
        let r: Reference = f.reference(registry).parse().map_err(|e| anyhow!("{e}"))?;
        push_manifest(&f.top, r).await?;
    }
    Ok(fixtures)
}

/// Read every fixture back from `registry` the way the Kubewarden host asks for it (tag, all
/// manifest media types accepted) and check the registry serves the pushed bytes.
pub async fn verify(registry: &str) -> Result<()> {
    verify_these(registry, &all()).await
}

/// Read `fixtures` back from `registry`, as `verify` does.
pub async fn verify_these(registry: &str, fixtures: &[Fixture]) -> Result<()> {
    use oci_client::client::{ClientConfig, ClientProtocol};
    use oci_client::secrets::RegistryAuth;
    use oci_client::{Client, Reference};

    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![registry.to_string()]),
        ..Default::default()
    });
    let accepted = [OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST];
    for f in fixtures {
        let r: Reference = f.reference(registry).parse().map_err(|e| anyhow!("{e}"))?;
        let (got, _digest) = client
            .pull_manifest_raw(&r, &RegistryAuth::Anonymous, &accepted)
            .await
            .with_context(|| format!("read back {r}"))?;
        if got.as_ref() != f.top.data.as_slice() {
            bail!("{}: served manifest differs from the pushed one", f.name());
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Deterministic encodings
// ---------------------------------------------------------------------------------------------

/// Compact JSON with object keys sorted (independent of serde_json's `preserve_order`).
pub fn canonical_json(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push(':');
                    write(&m[k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&serde_json::to_string(other).unwrap()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

/// A ustar archive holding one regular file (mtime 0, root owned).
pub fn tar_one_file(name: &str, content: &[u8]) -> Vec<u8> {
    let mut h = [0u8; 512];
    fn put(h: &mut [u8], at: usize, s: &[u8]) {
        h[at..at + s.len()].copy_from_slice(s);
    }
    put(&mut h, 0, name.as_bytes());
    put(&mut h, 100, b"0000644\0");
    put(&mut h, 108, b"0000000\0");
    put(&mut h, 116, b"0000000\0");
    put(&mut h, 124, format!("{:011o}\0", content.len()).as_bytes());
    put(&mut h, 136, b"00000000000\0");
    put(&mut h, 148, b"        ");
    h[156] = b'0';
    put(&mut h, 257, b"ustar\0");
    put(&mut h, 263, b"00");
    put(&mut h, 265, b"root");
    put(&mut h, 297, b"root");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    put(&mut h, 148, format!("{sum:06o}\0 ").as_bytes());
    let mut out = h.to_vec();
    out.extend_from_slice(content);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// gzip of `data` with stored (uncompressed) deflate blocks: valid, deterministic, dependency-free.
pub fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let chunks: Vec<&[u8]> = if data.is_empty() {
        vec![&[]]
    } else {
        data.chunks(65535).collect()
    };
    let last = chunks.len() - 1;
    for (i, chunk) in chunks.into_iter().enumerate() {
        out.push(u8::from(i == last));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_stable_and_distinct() {
        let a = all();
        let b = all();
        let mut seen = std::collections::HashSet::new();
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.top.digest, y.top.digest);
            for (k, v) in x.digest_vars() {
                assert!(v.starts_with("sha256:") && v.len() == 71, "{k}={v}");
            }
            assert!(seen.insert(x.top.digest.clone()), "duplicate {}", x.name());
        }
        assert_eq!(a.len(), 24);
    }

    #[test]
    fn crc32_known_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn oci_index_shape() {
        let f = by_repository("multi/oci-index").unwrap();
        let j = f.top.json();
        assert_eq!(j["mediaType"], OCI_INDEX);
        let entries = j["manifests"].as_array().unwrap();
        assert_eq!(entries.len(), 4);
        assert_eq!(
            entries[2]["annotations"]["vnd.docker.reference.digest"],
            json!(f.child("LINUX_AMD64").unwrap().digest)
        );
    }

    #[test]
    fn the_catalog_flattens_nested_indexes_with_their_depth() {
        let catalog = catalog(&all());
        let entry = |name: &str| {
            catalog
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["image"] == name)
                .unwrap()
                .clone()
        };
        let nested = entry("nested/index:1.0");
        assert_eq!(
            nested["digest"],
            json!(by_repository("nested/index").unwrap().top.digest)
        );
        assert_eq!(
            nested["flattened"],
            json!([
                {"os": "linux", "architecture": "s390x", "depth": 1},
                {"os": "linux", "architecture": "arm64", "variant": "v8", "depth": 2},
                {"os": "wasip1", "architecture": "wasm", "depth": 2},
            ])
        );
        assert_eq!(
            entry("nested/too-deep:1.0")["flattened"],
            json!([{"os": "linux", "architecture": "amd64", "depth": 4}])
        );
        // An index that nests none is not flattened.
        assert_eq!(entry("multi/oci-index:1.0")["flattened"], Value::Null);
    }
}
