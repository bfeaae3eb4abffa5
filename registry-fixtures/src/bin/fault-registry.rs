//! `fault-registry`: the fault-injecting registry of `registry_fixtures::faults` as a process, for bats.
//!
//! ```sh
//! fault-registry --upstream 127.0.0.1:5000 --addr-file /tmp/faults.addr --log /tmp/faults.jsonl &
//! # image references: $(cat /tmp/faults.addr)/faults/status-500/app:1.0, .../multi/oci-index:1.0, ...
//! ```
//!
//! Prints `listening on 127.0.0.1:PORT` on stdout once it accepts connections; runs until killed.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use registry_fixtures::FaultRegistry;

#[derive(Parser)]
#[command(
    name = "fault-registry",
    version,
    about = "Fault-injecting OCI registry (plain HTTP, 127.0.0.1) for the policy's tests"
)]
struct Cli {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// Registry (`host:port`, plain HTTP) that answers every repository not under `faults/`.
    #[arg(long)]
    upstream: Option<String>,
    /// Write the address (`127.0.0.1:PORT`) to this file once listening.
    #[arg(long = "addr-file")]
    addr_file: Option<PathBuf>,
    /// Append every request to this file, one JSON object per line
    /// (`{"method","path","status","micros"}`; status 0: dropped).
    #[arg(long)]
    log: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !cli.listen.starts_with("127.0.0.1:") {
        eprintln!("fault-registry: --listen must be a 127.0.0.1 address");
        return ExitCode::from(2);
    }
    let registry = match FaultRegistry::bind(&cli.listen, cli.upstream.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fault-registry: cannot listen on {}: {e}", cli.listen);
            return ExitCode::from(1);
        }
    };
    if let Some(path) = &cli.log {
        if let Err(e) = registry.log_to(path) {
            eprintln!("fault-registry: cannot open {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    if let Some(path) = &cli.addr_file {
        // Write then rename, so a reader never sees a partial address.
        let tmp = path.with_extension("tmp");
        if let Err(e) =
            std::fs::write(&tmp, registry.addr()).and_then(|_| std::fs::rename(&tmp, path))
        {
            eprintln!("fault-registry: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    println!("listening on {}", registry.addr());
    loop {
        std::thread::park();
    }
}
