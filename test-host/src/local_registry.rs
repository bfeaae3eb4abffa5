//! Debian's `docker-registry` on a free 127.0.0.1 port, its storage in a temp dir, for the tests
//! against a real registry (`e2e/registry.bash` does the same for the bats tests). Needs
//! `apt-get install docker-registry`, or DOCKER_REGISTRY_BIN naming another binary.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};

/// A running registry; stopped, and its storage removed, when dropped (on panic too).
pub struct LocalRegistry {
    child: Child,
    dir: PathBuf,
    /// `127.0.0.1:<port>`.
    pub addr: String,
}

impl LocalRegistry {
    /// Starts an empty registry and waits until it answers `/v2/` (up to 10 s; 5 attempts, each
    /// on a new port in case another process took it).
    pub fn start() -> Result<LocalRegistry> {
        let bin = std::env::var("DOCKER_REGISTRY_BIN")
            .unwrap_or_else(|_| "/usr/bin/docker-registry".to_string());
        if !Path::new(&bin).exists() {
            bail!("{bin} not found: apt-get install docker-registry (or set DOCKER_REGISTRY_BIN)");
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("test-host-registry-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(dir.join("storage")).context("registry storage")?;
        let mut last_log = String::new();
        for _attempt in 0..5 {
            let addr = free_addr()?;
            let config = format!(
                "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n  secret: e2e-not-a-secret\n",
                dir.join("storage").display()
            );
            std::fs::write(dir.join("config.yml"), config).context("registry config")?;
            let log = std::fs::File::create(dir.join("registry.log")).context("registry log")?;
            let mut child = Command::new(&bin)
                .arg("serve")
                .arg(dir.join("config.yml"))
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
                .with_context(|| format!("spawn {bin}"))?;
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if answers_v2(&addr) {
                    return Ok(LocalRegistry { child, dir, addr });
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
            last_log = std::fs::read_to_string(dir.join("registry.log")).unwrap_or_default();
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(anyhow!("docker-registry did not start: {last_log}"))
    }
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A 127.0.0.1 address nothing listens on (bound, then released).
pub fn free_addr() -> Result<String> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    Ok(format!("127.0.0.1:{port}"))
}

/// Whether a plain HTTP GET of `/v2/` answers 200.
fn answers_v2(addr: &str) -> bool {
    let status = || -> Option<u16> {
        let mut s =
            TcpStream::connect_timeout(&addr.parse().ok()?, Duration::from_millis(200)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        write!(s, "GET /v2/ HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).ok()?;
        String::from_utf8_lossy(&buf)
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    status() == Some(200)
}
