//! The OCI lookups (`oci/v1/oci_manifest`, `oci/v1/oci_manifest_config`) against real registries
//! with oci-client, answered as Kubewarden's host answers them: the manifest re-serialized from
//! oci-client's types (not the registry's bytes), short names normalized (`busybox` is
//! `docker.io/library/busybox:latest`), errors worded as policy-fetcher words them. Anonymous pulls; a source listed under `insecure_sources` in
//! `--sources-path` is spoken to over plain HTTP (kwctl first tries HTTPS, then HTTPS without
//! verification, then HTTP: the answer and the last error are the same). A successful lookup is
//! kept 60 s, keyed by the operation and the exact string the policy sent (policy-evaluator's
//! cache); a failure is not kept.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::{Deserialize, Serialize};

/// kwctl's `sources.yml`, as far as this host reads it.
#[derive(Deserialize, Default)]
struct Sources {
    #[serde(default)]
    insecure_sources: HashSet<String>,
}

/// The registries of `insecure_sources` in kwctl's sources.yml at `sources` (none without one).
fn insecure_sources(sources: Option<&Path>) -> Result<HashSet<String>> {
    let sources: Sources = match sources {
        Some(path) => serde_yaml::from_str(&std::fs::read_to_string(path)?)
            .map_err(|e| anyhow!("Cannot parse sources file {path:?}: {e}"))?,
        None => Sources::default(),
    };
    Ok(sources.insecure_sources)
}

pub struct Registry {
    insecure: HashSet<String>,
    runtime: tokio::runtime::Runtime,
    cache: RefCell<Cache>,
}

/// Successful answers by (operation, image), with when they were fetched.
type Cache = HashMap<(&'static str, String), (Instant, Vec<u8>)>;

/// How long the host keeps a successful lookup.
const CACHE_FOR: Duration = Duration::from_secs(60);

/// policy-fetcher's `RegistryError::OCIRegistryError`: its text, and the client's error as its
/// source (the host's error chain).
#[derive(Debug)]
struct RegistryError(oci_client::errors::OciDistributionError);

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fail to interact with OCI registry: {}", self.0)
    }
}

impl std::error::Error for RegistryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

fn registry_error(error: oci_client::errors::OciDistributionError) -> anyhow::Error {
    anyhow::Error::new(RegistryError(error))
}

/// policy-evaluator's `ManifestAndConfigResponse`.
#[derive(Serialize)]
struct ManifestAndConfig {
    manifest: oci_client::manifest::OciImageManifest,
    digest: String,
    config: serde_json::Value,
}

impl Registry {
    pub fn new(sources: Option<&Path>) -> Result<Registry> {
        let insecure = insecure_sources(sources)?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        Ok(Registry {
            insecure,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            cache: RefCell::default(),
        })
    }

    /// `lookup(image)`, or its answer of the last 60 s.
    fn cached(
        &self,
        operation: &'static str,
        image: &str,
        lookup: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let key = (operation, image.to_string());
        if let Some((at, answer)) = self.cache.borrow().get(&key) {
            if at.elapsed() < CACHE_FOR {
                return Ok(answer.clone());
            }
        }
        let answer = lookup()?;
        self.cache
            .borrow_mut()
            .insert(key, (Instant::now(), answer.clone()));
        Ok(answer)
    }

    /// The fully resolved reference of `image` and a client for its registry.
    fn client(&self, image: &str) -> Result<(Reference, Client)> {
        let reference: Reference = image.parse()?;
        let reference = Reference::try_from(reference.whole())
            .map_err(|e| anyhow!("Invalid OCI image reference: {e}"))?;
        let protocol = if self.insecure.contains(reference.registry()) {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        };
        let config = ClientConfig {
            protocol,
            ..Default::default()
        };
        Ok((reference, Client::new(config)))
    }

    pub fn manifest(&self, image: &str) -> Result<Vec<u8>> {
        self.cached("manifest", image, || self.pull_manifest(image))
    }

    fn pull_manifest(&self, image: &str) -> Result<Vec<u8>> {
        let (reference, client) = self.client(image)?;
        let pull = client.pull_manifest(&reference, &RegistryAuth::Anonymous);
        let (manifest, _digest) = self.runtime.block_on(pull).map_err(registry_error)?;
        Ok(serde_json::to_vec(&manifest)?)
    }

    /// Pushes `layers`, `config` and `manifest` to `destination` anonymously (`push`: kwctl
    /// push's manifest); the resolved reference and the manifest's URL the registry answered.
    pub fn push(
        &self,
        destination: &str,
        layers: &[ImageLayer],
        config: Config,
        manifest: OciImageManifest,
    ) -> Result<(Reference, String)> {
        let (reference, client) = self.client(destination)?;
        let push = client.push(
            &reference,
            layers,
            config,
            &RegistryAuth::Anonymous,
            Some(manifest),
        );
        let pushed = self.runtime.block_on(push).map_err(registry_error)?;
        Ok((reference, pushed.manifest_url))
    }

    /// `{"manifest":..,"digest":..,"config":..}` (policy-evaluator's `ManifestAndConfigResponse`).
    pub fn manifest_and_config(&self, image: &str) -> Result<Vec<u8>> {
        self.cached("manifest_and_config", image, || {
            self.pull_manifest_and_config(image)
        })
    }

    fn pull_manifest_and_config(&self, image: &str) -> Result<Vec<u8>> {
        let (reference, client) = self.client(image)?;
        let pull = client.pull_manifest_and_config(&reference, &RegistryAuth::Anonymous);
        let (manifest, digest, config) = self.runtime.block_on(pull).map_err(registry_error)?;
        let config = serde_json::from_str(&config)?;
        let answer = ManifestAndConfig {
            manifest,
            digest,
            config,
        };
        Ok(serde_json::to_vec(&answer)?)
    }
}
