//! `seed-registry`: push the e2e fixture images to a plain-HTTP registry and write their digests
//! as `NAME_DIGEST=sha256:...` lines for bats to `source`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use registry_fixtures::fixtures;

#[derive(Parser)]
#[command(
    name = "seed-registry",
    about = "Push the e2e fixture images to a registry"
)]
struct Cli {
    /// host:port of the registry (reached over plain HTTP).
    #[arg(long)]
    registry: Option<String>,
    /// Write `NAME_DIGEST=sha256:...` lines here.
    #[arg(long = "digests-out")]
    digests_out: Option<PathBuf>,
    /// Only print the fixtures and their digests (no registry needed).
    #[arg(long)]
    list: bool,
    /// Which fixtures: `e2e` (the e2e suites'), `property` (k8s-judge's generated images) or
    /// `all`.
    #[arg(long, default_value = "e2e")]
    set: String,
    /// Write what each pushed fixture runs on here (JSON: `fixtures::catalog`).
    #[arg(long)]
    catalog: Option<PathBuf>,
}

fn fixtures_of(set: &str) -> Result<Vec<fixtures::Fixture>> {
    Ok(match set {
        "e2e" => fixtures::all(),
        "property" => fixtures::property(),
        "all" => fixtures::all()
            .into_iter()
            .chain(fixtures::property())
            .collect(),
        other => anyhow::bail!("--set is e2e, property or all, not {other}"),
    })
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let set = fixtures_of(&cli.set)?;
    if cli.list {
        for f in &set {
            println!("{:<28} {}  {}", f.name(), f.top.digest, f.description);
            for c in &f.children {
                println!("{:<28}   {} {}", "", c.digest, c.name);
            }
        }
        if let Some(path) = &cli.digests_out {
            std::fs::write(path, fixtures::digests_env(&set))?;
        }
        return Ok(());
    }
    let registry = cli
        .registry
        .context("--registry HOST:PORT is required (or --list)")?;
    // oci-client's HTTP client needs a rustls crypto provider (see Cargo.toml); the result is
    // an error only when one is already installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pushed = runtime.block_on(fixtures::push(&registry, set))?;
    // Read every tag back the way the host will.
    runtime.block_on(fixtures::verify_these(&registry, &pushed))?;
    if let Some(path) = &cli.digests_out {
        std::fs::write(path, fixtures::digests_env(&pushed))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &cli.catalog {
        let catalog = serde_json::to_string_pretty(&fixtures::catalog(&pushed))?;
        std::fs::write(path, catalog)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprintln!(
        "seed-registry: pushed {} fixtures to {registry}",
        pushed.len()
    );
    Ok(())
}
