//! Where the answers to the `kubewarden/oci/*` host calls come from.
//!
//! [`ManifestSource`] is the seam between the waPC host and a registry: the host hands it the
//! operation and the image reference the guest sent, and it returns the exact payload the guest
//! will receive (or an error text). Two implementations:
//! - [`RegistrySource`]: a real OCI registry through `oci-client`, the way policy-evaluator does it;
//! - [`InMemorySource`]: canned answers keyed by `(operation, image)`, for tests and benchmarks
//!   that measure the policy without a network.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use oci_client::client::{linux_amd64_resolver, ClientConfig, ClientProtocol};
use oci_client::manifest::{OciImageManifest, OciManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The three registry host capabilities (binding `kubewarden`, namespace `oci`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Operation {
    /// `v1/oci_manifest`: the manifest (image, index or Docker list) as the registry serves it.
    #[serde(rename = "v1/oci_manifest")]
    OciManifest,
    /// `v1/oci_manifest_config`: `{manifest, digest, config}`; an index is resolved to linux/amd64.
    #[serde(rename = "v1/oci_manifest_config")]
    OciManifestConfig,
    /// `v1/manifest_digest`: `{"digest": "sha256:..."}`.
    #[serde(rename = "v1/manifest_digest")]
    ManifestDigest,
}

impl Operation {
    /// All operations, in a stable order.
    pub const ALL: [Operation; 3] = [
        Operation::OciManifest,
        Operation::OciManifestConfig,
        Operation::ManifestDigest,
    ];

    /// The waPC operation name (`v1/oci_manifest`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            Operation::OciManifest => "v1/oci_manifest",
            Operation::OciManifestConfig => "v1/oci_manifest_config",
            Operation::ManifestDigest => "v1/manifest_digest",
        }
    }

    /// The operation for a waPC operation name, if it is one of the three.
    pub fn from_wapc(operation: &str) -> Option<Operation> {
        Operation::ALL
            .into_iter()
            .find(|op| op.as_str() == operation)
    }

    /// The tag kwctl's record/replay files use for this request type.
    pub fn replay_tag(&self) -> &'static str {
        match self {
            Operation::OciManifest => "OciManifest",
            Operation::OciManifestConfig => "OciManifestAndConfig",
            Operation::ManifestDigest => "OciManifestDigest",
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Answers registry host calls. `Err` carries the text the guest receives as the host error.
pub trait ManifestSource: Send + Sync {
    /// Answer `operation` for `image` (the string the guest sent, already JSON-decoded).
    fn fetch(&self, operation: Operation, image: &str) -> Result<Vec<u8>, String>;
}

impl<T: ManifestSource + ?Sized> ManifestSource for std::sync::Arc<T> {
    fn fetch(&self, operation: Operation, image: &str) -> Result<Vec<u8>, String> {
        (**self).fetch(operation, image)
    }
}

// ---------------------------------------------------------------------------------------------
// sources.yml
// ---------------------------------------------------------------------------------------------

/// The subset of kwctl / policy-server `sources.yml` this host understands.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Sources {
    /// Registries (`host[:port]`) reached over plain HTTP.
    #[serde(default)]
    pub insecure_sources: Vec<String>,
    /// Custom CA chains per registry. Read so a real sources.yml parses; not used (warned about).
    #[serde(default)]
    pub source_authorities: HashMap<String, Value>,
}

impl Sources {
    /// Parse a sources.yml (YAML or JSON) file.
    pub fn from_file(path: &Path) -> Result<Sources> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read sources file {}", path.display()))?;
        let sources: Sources = serde_yaml::from_str(&text)
            .with_context(|| format!("cannot parse sources file {}", path.display()))?;
        Ok(sources)
    }

    /// Only plain-HTTP registries.
    pub fn insecure<I: IntoIterator<Item = S>, S: Into<String>>(registries: I) -> Sources {
        Sources {
            insecure_sources: registries.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Real registry
// ---------------------------------------------------------------------------------------------

/// How the `v1/oci_manifest` answer is produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ManifestFidelity {
    /// The registry's bytes, untouched (entries with missing or extra fields survive).
    #[default]
    Raw,
    /// What policy-evaluator really does: parse into oci-client's `OciManifest` and serialize it
    /// back. Unknown fields are dropped; an index entry whose platform lacks `os` or
    /// `architecture` makes the whole lookup fail.
    Reserialized,
}

/// A real registry, reached with oci-client: anonymous auth, HTTPS except for the registries in
/// `sources.insecure_sources`, index resolution to linux/amd64 for `v1/oci_manifest_config`.
pub struct RegistrySource {
    client: Client,
    runtime: tokio::runtime::Runtime,
    fidelity: ManifestFidelity,
}

impl RegistrySource {
    /// A source over the registries described by `sources`.
    pub fn new(sources: &Sources) -> Result<RegistrySource> {
        Self::with_fidelity(sources, ManifestFidelity::Raw)
    }

    /// Like [`RegistrySource::new`], choosing how `v1/oci_manifest` answers are produced.
    pub fn with_fidelity(sources: &Sources, fidelity: ManifestFidelity) -> Result<RegistrySource> {
        if !sources.source_authorities.is_empty() {
            eprintln!("test-host: warning: source_authorities in sources.yml are ignored");
        }
        let client = Client::new(registry_client_config(sources));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("test-host-registry")
            .enable_all()
            .build()
            .context("cannot start the tokio runtime for registry access")?;
        Ok(RegistrySource {
            client,
            runtime,
            fidelity,
        })
    }

    /// Run `fut` on this source's runtime and wait for it from the calling (synchronous) thread.
    /// Works whether or not the caller is itself inside a tokio runtime.
    fn block_on<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = T> + Send + 'static,
    ) -> T {
        let (tx, rx) = mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().expect("registry task vanished")
    }

    /// Fetch and answer one host call; the error is an anyhow chain (formatted by the caller).
    pub fn fetch_anyhow(&self, operation: Operation, image: &str) -> Result<Vec<u8>> {
        let reference = parse_reference(image)?;
        let client = self.client.clone();
        let fidelity = self.fidelity;
        self.block_on(async move {
            let auth = RegistryAuth::Anonymous;
            match operation {
                Operation::OciManifest => {
                    let (body, _digest) = client
                        .pull_manifest_raw(&reference, &auth, MANIFEST_MEDIA_TYPES)
                        .await?;
                    match fidelity {
                        ManifestFidelity::Raw => Ok(body.to_vec()),
                        ManifestFidelity::Reserialized => Ok(serde_json::to_vec(
                            &parse_manifest_like_pull_manifest(&body)?,
                        )?),
                    }
                }
                Operation::OciManifestConfig => {
                    let (manifest, digest, config) =
                        client.pull_manifest_and_config(&reference, &auth).await?;
                    let config: Value = serde_json::from_str(&config)
                        .context("cannot parse the image configuration as JSON")?;
                    Ok(serde_json::to_vec(&ManifestAndConfig {
                        manifest,
                        digest,
                        config,
                    })?)
                }
                Operation::ManifestDigest => {
                    let digest = client.fetch_manifest_digest(&reference, &auth).await?;
                    Ok(serde_json::to_vec(
                        &serde_json::json!({ "digest": digest }),
                    )?)
                }
            }
        })
    }
}

impl ManifestSource for RegistrySource {
    fn fetch(&self, operation: Operation, image: &str) -> Result<Vec<u8>, String> {
        self.fetch_anyhow(operation, image)
            .map_err(|e| format!("Callback evaluation failure: {}", anyhow_debug(&e)))
    }
}

/// anyhow's `{:?}` rendering (message, then `Caused by:` chain), without the backtrace that
/// `{:?}` appends when RUST_BACKTRACE / RUST_LIB_BACKTRACE is set.
pub fn anyhow_debug(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    let causes: Vec<String> = e.chain().skip(1).map(|c| c.to_string()).collect();
    match causes.len() {
        0 => {}
        1 => out.push_str(&format!("\n\nCaused by:\n    {}", causes[0])),
        _ => {
            out.push_str("\n\nCaused by:");
            for (i, c) in causes.iter().enumerate() {
                out.push_str(&format!("\n    {i}: {c}"));
            }
        }
    }
    out
}

/// What oci-client's `pull_manifest` (policy-fetcher's `Registry::manifest`, behind the real
/// `v1/oci_manifest`) does with the bytes: check `schemaVersion` 2 and a manifest/index media
/// type, then parse into `OciManifest`, with oci-client's error texts (its two parse errors
/// carry each other's wording: a body that is not JSON gives `Failed to parse manifest: ...`).
pub fn parse_manifest_like_pull_manifest(
    body: &[u8],
) -> std::result::Result<OciManifest, oci_client::errors::OciDistributionError> {
    use oci_client::errors::OciDistributionError as E;
    let versioned: oci_client::manifest::Versioned =
        serde_json::from_slice(body).map_err(|e| E::VersionedParsingError(e.to_string()))?;
    if versioned.schema_version != 2 {
        return Err(E::UnsupportedSchemaVersionError(versioned.schema_version));
    }
    if let Some(media_type) = versioned.media_type {
        if !MANIFEST_MEDIA_TYPES.contains(&media_type.as_str()) {
            return Err(E::UnsupportedMediaTypeError(media_type));
        }
    }
    serde_json::from_slice(body).map_err(|e| E::ManifestParsingError(e.to_string()))
}

/// The Accept list oci-client sends for manifests (its own constant is private).
pub const MANIFEST_MEDIA_TYPES: &[&str] = &[
    oci_client::manifest::IMAGE_MANIFEST_MEDIA_TYPE,
    oci_client::manifest::IMAGE_MANIFEST_LIST_MEDIA_TYPE,
    oci_client::manifest::OCI_IMAGE_MEDIA_TYPE,
    oci_client::manifest::OCI_IMAGE_INDEX_MEDIA_TYPE,
];

/// The `v1/oci_manifest_config` answer, shaped like policy-evaluator's `ManifestAndConfigResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ManifestAndConfig {
    /// The (platform) image manifest.
    pub manifest: OciImageManifest,
    /// Digest of that image manifest (of the platform entry when the reference was an index).
    pub digest: String,
    /// The image configuration blob, as JSON.
    pub config: Value,
}

/// oci-client configuration for `sources`: plain HTTP for the insecure registries, the host's
/// platform (linux/amd64) when an index has to be resolved.
pub fn registry_client_config(sources: &Sources) -> ClientConfig {
    ClientConfig {
        protocol: ClientProtocol::HttpsExcept(sources.insecure_sources.clone()),
        platform_resolver: Some(Box::new(linux_amd64_resolver)),
        connect_timeout: Some(Duration::from_secs(5)),
        read_timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    }
}

/// Normalize an image reference the way the host does (`busybox` ->
/// `docker.io/library/busybox:latest`), with policy-fetcher's error text.
pub fn parse_reference(image: &str) -> Result<Reference> {
    let image = image.strip_prefix("registry://").unwrap_or(image);
    Reference::try_from(image)
        .map_err(|e| anyhow!("Cannot parse {image} into an OCI Reference object: {e:?}"))
}

/// `sha256:<hex>` of `data`.
pub fn sha256_digest(data: &[u8]) -> String {
    let hash = Sha256::digest(data);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// In memory
// ---------------------------------------------------------------------------------------------

/// Canned answers keyed by `(operation, exact image string)`. A lookup nobody registered fails
/// like a registry 404 would (the text says so), so a benchmark notices a missing fixture.
#[derive(Default)]
pub struct InMemorySource {
    answers: HashMap<(Operation, String), Result<Vec<u8>, String>>,
    latency: Option<Duration>,
    misses: Mutex<Vec<(Operation, String)>>,
}

impl InMemorySource {
    /// An empty source.
    pub fn new() -> InMemorySource {
        InMemorySource::default()
    }

    /// Answer `operation` for `image` with `payload` (served verbatim to the guest).
    pub fn with_answer(
        mut self,
        operation: Operation,
        image: impl Into<String>,
        payload: impl Into<Vec<u8>>,
    ) -> Self {
        self.answers
            .insert((operation, image.into()), Ok(payload.into()));
        self
    }

    /// Fail `operation` for `image` with `message` (the guest sees it after `Host error: `).
    pub fn with_error(
        mut self,
        operation: Operation,
        image: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        self.answers
            .insert((operation, image.into()), Err(message.into()));
        self
    }

    /// `v1/oci_manifest` for `image` answers `manifest` (the raw bytes a registry would serve),
    /// and `v1/manifest_digest` answers the sha256 of those bytes.
    pub fn with_manifest(self, image: impl Into<String>, manifest: impl Into<Vec<u8>>) -> Self {
        let image = image.into();
        let manifest = manifest.into();
        let digest = serde_json::to_vec(&serde_json::json!({ "digest": sha256_digest(&manifest) }))
            .expect("serialize digest");
        self.with_answer(Operation::ManifestDigest, image.clone(), digest)
            .with_answer(Operation::OciManifest, image, manifest)
    }

    /// `v1/oci_manifest_config` for `image` answers `{manifest, digest, config}`.
    pub fn with_manifest_and_config(
        self,
        image: impl Into<String>,
        manifest: &Value,
        digest: &str,
        config: &Value,
    ) -> Self {
        let payload = serde_json::to_vec(&serde_json::json!({
            "manifest": manifest,
            "digest": digest,
            "config": config,
        }))
        .expect("serialize manifest and config");
        self.with_answer(Operation::OciManifestConfig, image, payload)
    }

    /// Sleep this long in every lookup (to imitate registry round trips in benchmarks).
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = Some(latency);
        self
    }

    /// Lookups that had no registered answer so far.
    pub fn misses(&self) -> Vec<(Operation, String)> {
        self.misses.lock().unwrap().clone()
    }

    /// Load a kwctl `--record-host-capabilities-interactions` / replay file (YAML list of
    /// `Exchange`s). Requests for the same image and operation keep the last answer (no FIFO).
    pub fn from_kwctl_replay_file(path: &Path) -> Result<InMemorySource> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Self::from_kwctl_replay_str(&text)
    }

    /// See [`InMemorySource::from_kwctl_replay_file`].
    pub fn from_kwctl_replay_str(text: &str) -> Result<InMemorySource> {
        #[derive(Deserialize)]
        struct Exchange {
            request: String,
            response: ReplayResponse,
        }
        #[derive(Deserialize)]
        #[serde(tag = "type")]
        enum ReplayResponse {
            Success { payload: String },
            Error { message: String },
        }
        #[derive(Deserialize)]
        struct Req {
            image: String,
        }
        let exchanges: Vec<Exchange> =
            serde_yaml::from_str(text).context("cannot parse the replay file")?;
        let mut source = InMemorySource::new();
        for ex in exchanges {
            let request = ex.request.trim_start();
            let (tag, rest) = request
                .strip_prefix('!')
                .and_then(|r| r.split_once(char::is_whitespace))
                .ok_or_else(|| anyhow!("unexpected replay request: {request}"))?;
            let operation = Operation::ALL
                .into_iter()
                .find(|op| op.replay_tag() == tag)
                .ok_or_else(|| anyhow!("unsupported replay request type: {tag}"))?;
            let req: Req = serde_yaml::from_str(rest)
                .with_context(|| format!("cannot parse replay request: {request}"))?;
            source = match ex.response {
                ReplayResponse::Success { payload } => {
                    source.with_answer(operation, req.image, payload.into_bytes())
                }
                ReplayResponse::Error { message } => {
                    source.with_error(operation, req.image, message)
                }
            };
        }
        Ok(source)
    }
}

impl ManifestSource for InMemorySource {
    fn fetch(&self, operation: Operation, image: &str) -> Result<Vec<u8>, String> {
        if let Some(latency) = self.latency {
            std::thread::sleep(latency);
        }
        match self.answers.get(&(operation, image.to_string())) {
            Some(answer) => answer.clone(),
            None => {
                self.misses
                    .lock()
                    .unwrap()
                    .push((operation, image.to_string()));
                Err(format!(
                    "Callback evaluation failure: in-memory source has no answer for {operation} {image} (404 not found)"
                ))
            }
        }
    }
}
