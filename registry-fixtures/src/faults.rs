//! A fault-injecting OCI registry for tests: a minimal HTTP/1.1 server on 127.0.0.1 that
//! answers the registry API (`/v2/...`, GET and HEAD) and injects faults chosen by repository
//! name, proxying every other repository to a real registry (`upstream`, plain HTTP).
//!
//! | repository | every manifest / blob / tag request under it |
//! |---|---|
//! | `faults/status-<code>[/...]` | `<code>`, with the body (and for 401 the `WWW-Authenticate` challenge) a distribution registry sends |
//! | `faults/not-json[/...]` | 200, an HTML page labelled as an OCI index |
//! | `faults/not-an-image[/...]` | 200, `{"hello":"world"}` |
//! | `faults/oci-artifact[/...]` | 200, an OCI 1.1 artifact manifest (empty config `{}`, one SBOM layer); its blobs are served |
//! | `faults/huge-index[-<n>][/...]` | 200, a generated OCI index of `n` entries (default 10,000), see [`huge_index`] |
//! | `faults/index-cycle[/...]` | 200, an OCI index whose only entry is an index, served by digest as an index that lists the first one back (a nesting cycle, see [`index_cycle`]) |
//! | `faults/drop[/...]` | the connection is closed without an answer |
//! | `faults/slow-<ms>/<rest>` | sleeps `<ms>` ms, then answers as for the repository `<rest>` (a fixture upstream, or another fault) |
//! | anything else | proxied to `upstream` (404 `NAME_UNKNOWN` without one) |
//!
//! Whatever follows the fault in the name is free (`faults/status-500/app-1`, `.../app-2`: two
//! distinct images with the same fault). `/v2/` answers 200 without a challenge (like the local
//! `docker-registry`), so clients go straight to the manifest; `/token` hands out an anonymous
//! token to any client that follows the 401 challenge. Writes are refused (405). Every request
//! is logged ([`FaultRegistry::requests`], and as JSON lines with [`FaultRegistry::log_to`]).
//!
//! One request per connection (`Connection: close`), one thread per connection, std only.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::sha256_digest;

/// Number of entries of `faults/huge-index` when the name gives none.
pub const HUGE_INDEX_DEFAULT_ENTRIES: usize = 10_000;

/// One request the fault registry answered (or dropped).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FaultRequest {
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// The request target, as sent.
    pub path: String,
    /// The status answered; 0 when the connection was dropped without an answer.
    pub status: u16,
    /// Time from the end of the request head to the answer being ready (injected delays
    /// included), in microseconds.
    pub micros: u64,
}

impl FaultRequest {
    /// A `GET` of a manifest (`/v2/<name>/manifests/<reference>`) whose name starts with `name`.
    pub fn is_manifest_get(&self, name: &str) -> bool {
        self.method == "GET"
            && self.path.starts_with(&format!("/v2/{name}"))
            && self.path.contains("/manifests/")
    }
}

struct Shared {
    addr: SocketAddr,
    upstream: Option<String>,
    log: Mutex<Vec<FaultRequest>>,
    log_file: Mutex<Option<std::fs::File>>,
    huge: Mutex<HashMap<usize, Arc<Vec<u8>>>>,
}

/// A running fault registry. Stops (and frees its port) when dropped.
pub struct FaultRegistry {
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FaultRegistry {
    /// Listen on a free 127.0.0.1 port, proxying non-fault repositories to `upstream`
    /// (`host:port`, plain HTTP) when given.
    pub fn start(upstream: Option<&str>) -> io::Result<FaultRegistry> {
        Self::bind("127.0.0.1:0", upstream)
    }

    /// Listen on `listen` (`127.0.0.1:PORT`; port 0 picks a free one).
    pub fn bind(listen: &str, upstream: Option<&str>) -> io::Result<FaultRegistry> {
        let listener = TcpListener::bind(listen)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            addr,
            upstream: upstream.map(str::to_string),
            log: Mutex::new(Vec::new()),
            log_file: Mutex::new(None),
            huge: Mutex::new(HashMap::new()),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let shared = shared.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("fault-registry".into())
                .spawn(move || accept_loop(listener, shared, stop))?
        };
        Ok(FaultRegistry {
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// `127.0.0.1:PORT`, the registry part of image references (`{addr}/faults/not-json:1.0`).
    pub fn addr(&self) -> String {
        self.shared.addr.to_string()
    }

    /// The upstream registry, if any.
    pub fn upstream(&self) -> Option<&str> {
        self.shared.upstream.as_deref()
    }

    /// Also append every request, as one JSON line, to `path`.
    pub fn log_to(&self, path: &Path) -> io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        *self.shared.log_file.lock().unwrap() = Some(file);
        Ok(())
    }

    /// Every request so far, in the order they were answered.
    pub fn requests(&self) -> Vec<FaultRequest> {
        self.shared.log.lock().unwrap().clone()
    }

    /// Forget the requests logged so far.
    pub fn clear_requests(&self) {
        self.shared.log.lock().unwrap().clear();
    }

    /// Number of manifest GETs for repositories whose name starts with `name`.
    pub fn manifest_gets(&self, name: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.is_manifest_get(name))
            .count()
    }

    /// Stop listening (also done on drop). Requests in flight finish on their own threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.stop.store(true, Ordering::SeqCst);
            // Wake the blocking accept().
            let _ = TcpStream::connect_timeout(&self.shared.addr, Duration::from_secs(1));
            let _ = thread.join();
        }
    }
}

impl Drop for FaultRegistry {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: Arc<AtomicBool>) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = conn else { continue };
        let shared = shared.clone();
        let _ = std::thread::Builder::new()
            .name("fault-registry-conn".into())
            .spawn(move || {
                let _ = serve_connection(stream, &shared);
            });
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An answer: status, headers (Content-Length and Connection are added when written), body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![
                ("Content-Type".into(), content_type.into()),
                (
                    "Docker-Distribution-API-Version".into(),
                    "registry/2.0".into(),
                ),
            ],
            body: body.into(),
        }
    }

    fn json(status: u16, body: &serde_json::Value) -> Response {
        Response::new(status, "application/json; charset=utf-8", body.to_string())
    }

    /// A manifest or blob, with the digest header a registry sends.
    fn content(media_type: &str, body: Vec<u8>) -> Response {
        let digest = sha256_digest(&body);
        let mut r = Response::new(200, media_type, body);
        r.headers.push(("Docker-Content-Digest".into(), digest));
        r
    }

    fn header(mut self, name: &str, value: impl Into<String>) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// What to do with a request.
enum Answer {
    Respond(Response),
    /// Close the connection without answering.
    Drop,
}

fn serve_connection(mut stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let request = match read_request(&mut stream)? {
        Some(r) => r,
        None => {
            // Not HTTP (a TLS ClientHello from a client trying HTTPS first, or garbage): answer
            // like Go's net/http does, so the client falls back quickly.
            let _ = stream.write_all(b"HTTP/1.0 400 Bad Request\r\nConnection: close\r\n\r\n");
            return Ok(());
        }
    };
    let started = Instant::now();
    let answer = route(&request, shared);
    // Logged before the client can see the answer, so a caller that got its answer finds it
    // in the log.
    let entry = FaultRequest {
        method: request.method.clone(),
        path: request.target.clone(),
        status: match &answer {
            Answer::Respond(r) => r.status,
            Answer::Drop => 0,
        },
        micros: started.elapsed().as_micros() as u64,
    };
    if let Some(file) = shared.log_file.lock().unwrap().as_mut() {
        if let Ok(line) = serde_json::to_string(&entry) {
            let _ = writeln!(file, "{line}");
        }
    }
    shared.log.lock().unwrap().push(entry);
    match answer {
        Answer::Respond(response) => write_response(&mut stream, &request, response),
        Answer::Drop => stream.shutdown(Shutdown::Both),
    }
}

/// Reads one request head (the body of GET/HEAD is empty). `None` when it is not HTTP.
fn read_request(stream: &mut TcpStream) -> io::Result<Option<Request>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.truncate(end);
            break;
        }
        if buf.first() == Some(&0x16) || buf.len() > 64 * 1024 {
            return Ok(None);
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let Ok(head) = String::from_utf8(buf) else {
        return Ok(None);
    };
    let mut lines = head.split("\r\n");
    let mut parts = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Ok(None);
    };
    if !version.starts_with("HTTP/1.") {
        return Ok(None);
    }
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Ok(Some(Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
    }))
}

fn write_response(stream: &mut TcpStream, request: &Request, response: Response) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    let mut has_length = false;
    for (k, v) in &response.headers {
        has_length |= k.eq_ignore_ascii_case("content-length");
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !has_length {
        head.push_str(&format!("Content-Length: {}\r\n", response.body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes())?;
    if request.method != "HEAD" {
        stream.write_all(&response.body)?;
    }
    stream.flush()?;
    let _ = stream.shutdown(Shutdown::Write);
    // Let the client read everything before the socket goes away.
    let mut sink = [0u8; 512];
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Fault",
    }
}

// ---------------------------------------------------------------------------------------------
// Routing
// ---------------------------------------------------------------------------------------------

/// `/v2/<name>/<kind>/<reference>` split into its parts (kind: manifests, blobs, tags, referrers).
fn split_api_path(path: &str) -> Option<(String, String, String)> {
    let rest = path.strip_prefix("/v2/")?;
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.len() < 3 {
        return None;
    }
    let kind = segments[segments.len() - 2];
    if !["manifests", "blobs", "tags", "referrers"].contains(&kind) {
        return None;
    }
    Some((
        segments[..segments.len() - 2].join("/"),
        kind.to_string(),
        segments[segments.len() - 1].to_string(),
    ))
}

fn route(request: &Request, shared: &Shared) -> Answer {
    let (path, query) = match request.target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (request.target.as_str(), None),
    };
    if request.method != "GET" && request.method != "HEAD" {
        return Answer::Respond(error(
            405,
            "UNSUPPORTED",
            "The operation is unsupported.",
            json!("fault-registry is read-only"),
        ));
    }
    if path == "/v2/" || path == "/v2" {
        return Answer::Respond(Response::json(200, &json!({})));
    }
    if path == "/token" {
        return Answer::Respond(Response::json(
            200,
            &json!({"token": "fault-registry-anonymous", "access_token": "fault-registry-anonymous", "expires_in": 300}),
        ));
    }
    let Some((name, kind, reference)) = split_api_path(path) else {
        return Answer::Respond(Response::new(
            404,
            "text/plain; charset=utf-8",
            "404 page not found\n",
        ));
    };
    route_name(request, shared, &name, &kind, &reference, query)
}

fn route_name(
    request: &Request,
    shared: &Shared,
    name: &str,
    kind: &str,
    reference: &str,
    query: Option<&str>,
) -> Answer {
    let Some(fault_path) = name.strip_prefix("faults/") else {
        return Answer::Respond(proxy(request, shared, name, kind, reference, query));
    };
    let (fault, rest) = fault_path.split_once('/').unwrap_or((fault_path, ""));

    if let Some(ms) = fault.strip_prefix("slow-") {
        let Ok(ms) = ms.parse::<u64>() else {
            return Answer::Respond(unknown_fault(name));
        };
        std::thread::sleep(Duration::from_millis(ms));
        if rest.is_empty() {
            return Answer::Respond(name_unknown(name));
        }
        return route_name(request, shared, rest, kind, reference, query);
    }
    if let Some(code) = fault.strip_prefix("status-") {
        return match code.parse::<u16>() {
            Ok(code) if (100..=599).contains(&code) => {
                Answer::Respond(status_fault(shared, name, code))
            }
            _ => Answer::Respond(unknown_fault(name)),
        };
    }
    if fault == "drop" {
        return Answer::Drop;
    }
    let is_manifest = kind == "manifests";
    Answer::Respond(match fault {
        "not-json" if is_manifest => Response::content(
            crate::fixtures::OCI_INDEX,
            b"<html><head><title>Registry</title></head><body><h1>Welcome to nginx!</h1></body></html>\n".to_vec(),
        ),
        "not-an-image" if is_manifest => {
            Response::content("application/json", br#"{"hello":"world"}"#.to_vec())
        }
        "oci-artifact" => {
            let (manifest, blobs) = oci_artifact();
            if is_manifest {
                Response::content(crate::fixtures::OCI_MANIFEST, manifest)
            } else if kind == "blobs" {
                match blobs.into_iter().find(|(digest, _, _)| digest == reference) {
                    Some((_, media_type, data)) => Response::content(&media_type, data),
                    None => blob_unknown(reference),
                }
            } else {
                name_unknown(name)
            }
        }
        "index-cycle" if is_manifest => {
            let cycle = index_cycle();
            let body = if reference == cycle.nested_digest {
                cycle.nested
            } else {
                cycle.tagged
            };
            Response::content(crate::fixtures::OCI_INDEX, body)
        }
        "index-cycle" => blob_unknown(reference),
        huge if huge == "huge-index" || huge.starts_with("huge-index-") => {
            let entries = match huge.strip_prefix("huge-index-") {
                None => HUGE_INDEX_DEFAULT_ENTRIES,
                Some(n) => match n.parse::<usize>() {
                    Ok(n) if n > 0 => n,
                    _ => return Answer::Respond(unknown_fault(name)),
                },
            };
            if is_manifest {
                let body = shared
                    .huge
                    .lock()
                    .unwrap()
                    .entry(entries)
                    .or_insert_with(|| Arc::new(huge_index(entries)))
                    .clone();
                Response::content(crate::fixtures::OCI_INDEX, body.to_vec())
            } else {
                blob_unknown(reference)
            }
        }
        "not-json" | "not-an-image" => blob_unknown(reference),
        _ => unknown_fault(name),
    })
}

/// A distribution-style error answer.
fn error(status: u16, code: &str, message: &str, detail: serde_json::Value) -> Response {
    Response::json(
        status,
        &json!({"errors": [{"code": code, "message": message, "detail": detail}]}),
    )
}

fn name_unknown(name: &str) -> Response {
    error(
        404,
        "NAME_UNKNOWN",
        "repository name not known to registry",
        json!({"name": name}),
    )
}

fn blob_unknown(digest: &str) -> Response {
    error(
        404,
        "BLOB_UNKNOWN",
        "blob unknown to registry",
        json!(digest),
    )
}

fn unknown_fault(name: &str) -> Response {
    error(
        404,
        "NAME_UNKNOWN",
        "repository name not known to registry",
        json!(format!("fault-registry: no such fault in {name}")),
    )
}

/// What registries answer with `code`: distribution's bodies for 401/403/404/429/500, the
/// `WWW-Authenticate` challenge with 401, a proxy's HTML page for the other 5xx.
fn status_fault(shared: &Shared, name: &str, code: u16) -> Response {
    match code {
        401 => error(
            401,
            "UNAUTHORIZED",
            "authentication required",
            json!([{"Type": "repository", "Class": "", "Name": name, "Action": "pull"}]),
        )
        .header(
            "WWW-Authenticate",
            format!(
                "Bearer realm=\"http://{}/token\",service=\"fault-registry\",scope=\"repository:{name}:pull\"",
                shared.addr
            ),
        ),
        403 => error(
            403,
            "DENIED",
            "requested access to the resource is denied",
            json!(null),
        ),
        404 => name_unknown(name),
        429 => error(
            429,
            "TOOMANYREQUESTS",
            "You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit",
            json!(null),
        )
        .header("Retry-After", "60"),
        500 => error(500, "UNKNOWN", "unknown error", json!("fault-registry: injected 500")),
        c if c >= 500 => {
            let title = format!("{c} {}", reason(c));
            Response::new(
                c,
                "text/html",
                format!("<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"),
            )
        }
        c => error(c, "UNKNOWN", "unknown error", json!(format!("fault-registry: injected {c}"))),
    }
}

// ---------------------------------------------------------------------------------------------
// Generated content
// ---------------------------------------------------------------------------------------------

/// A nesting cycle of image indexes, as a registry that does not check digests could serve it:
/// the tagged index lists one entry, an index of digest `nested_digest`; asked for that digest,
/// the registry serves `nested`, an index whose only entry is the tagged index (by its digest).
/// Content addressing makes a true cycle impossible (each digest would have to hash the other),
/// so `nested` is not what `nested_digest` names: a host that checks a digest reference's
/// content refuses it; one that does not walks in a circle.
pub struct IndexCycle {
    pub tagged: Vec<u8>,
    pub nested_digest: String,
    pub nested: Vec<u8>,
}

pub fn index_cycle() -> IndexCycle {
    let index_of = |digest: &str| {
        crate::fixtures::canonical_json(&json!({"schemaVersion": 2, "mediaType": crate::fixtures::OCI_INDEX,
            "manifests": [{"mediaType": crate::fixtures::OCI_INDEX, "digest": digest, "size": 200}]}))
        .into_bytes()
    };
    let nested_digest = sha256_digest(b"fault-registry: the index that lists the tagged one back");
    let tagged = index_of(&nested_digest);
    let nested = index_of(&sha256_digest(&tagged));
    IndexCycle {
        tagged,
        nested_digest,
        nested,
    }
}

/// A blob served by the fault registry: (digest, media type, bytes).
pub type ServedBlob = (String, String, Vec<u8>);

/// An OCI 1.1 artifact (an SBOM): image manifest media type, `artifactType`, the empty config
/// `{}`, one layer. Valid JSON, a valid manifest, not an image: no platform anywhere.
/// Returns the manifest bytes and its blobs.
pub fn oci_artifact() -> (Vec<u8>, Vec<ServedBlob>) {
    static ARTIFACT: OnceLock<(Vec<u8>, Vec<ServedBlob>)> = OnceLock::new();
    ARTIFACT
        .get_or_init(|| {
            let config = b"{}".to_vec();
            let layer =
                br#"{"spdxVersion":"SPDX-2.3","name":"fault-registry","packages":[]}"#.to_vec();
            let config_digest = sha256_digest(&config);
            let layer_digest = sha256_digest(&layer);
            let manifest = json!({
                "schemaVersion": 2,
                "mediaType": crate::fixtures::OCI_MANIFEST,
                "artifactType": "application/spdx+json",
                "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": config_digest, "size": config.len(), "data": "e30="},
                "layers": [{"mediaType": "application/spdx+json", "digest": layer_digest, "size": layer.len()}],
                "annotations": {"org.opencontainers.image.created": "2024-01-01T00:00:00Z"}
            });
            (
                crate::fixtures::canonical_json(&manifest).into_bytes(),
                vec![
                    (config_digest, "application/vnd.oci.empty.v1+json".to_string(), config),
                    (layer_digest, "application/spdx+json".to_string(), layer),
                ],
            )
        })
        .clone()
}

/// A generated OCI index of `entries` entries (served by `faults/huge-index-<entries>`):
/// entry `i` is linux/arm64/v8 when `i % 10 == 0`, windows/amd64 when `i % 10 == 5`, a BuildKit
/// attestation (unknown/unknown, `vnd.docker.reference.type`) otherwise, and the last entry is
/// linux/riscv64. For a linux Pod its architectures are therefore `arm64` and `riscv64`
/// (`riscv64` alone with one entry): only an evaluation that reads every entry, skips the
/// attestations and the other OS, and folds the variant gets it right.
pub fn huge_index(entries: usize) -> Vec<u8> {
    const MANIFEST: &str = crate::fixtures::OCI_MANIFEST;
    let digest = |i: usize, what: &str| sha256_digest(format!("huge-index {what} {i}").as_bytes());
    let mut out = String::with_capacity(entries * 340 + 128);
    out.push_str(r#"{"schemaVersion":2,"mediaType":""#);
    out.push_str(crate::fixtures::OCI_INDEX);
    out.push_str(r#"","manifests":["#);
    for i in 0..entries {
        if i > 0 {
            out.push(',');
        }
        let entry = if i + 1 == entries {
            json!({"mediaType": MANIFEST, "digest": digest(i, "image"), "size": 1234,
                   "platform": {"architecture": "riscv64", "os": "linux"}})
        } else if i % 10 == 0 {
            json!({"mediaType": MANIFEST, "digest": digest(i, "image"), "size": 1234,
                   "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}})
        } else if i % 10 == 5 {
            json!({"mediaType": MANIFEST, "digest": digest(i, "image"), "size": 1234,
                   "platform": {"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.2227"}})
        } else {
            json!({"mediaType": MANIFEST, "digest": digest(i, "attestation"), "size": 839,
                   "annotations": {"vnd.docker.reference.digest": digest(i - i % 10, "image"),
                                   "vnd.docker.reference.type": "attestation-manifest"},
                   "platform": {"architecture": "unknown", "os": "unknown"}})
        };
        out.push_str(&entry.to_string());
    }
    out.push_str("]}");
    out.into_bytes()
}

// ---------------------------------------------------------------------------------------------
// Upstream
// ---------------------------------------------------------------------------------------------

/// Forwards the request for `name` to the upstream registry (HTTP/1.0, so the answer is never
/// chunked) and relays its answer.
fn proxy(
    request: &Request,
    shared: &Shared,
    name: &str,
    kind: &str,
    reference: &str,
    query: Option<&str>,
) -> Response {
    let Some(upstream) = shared.upstream.as_deref() else {
        return name_unknown(name);
    };
    let mut target = format!("/v2/{name}/{kind}/{reference}");
    if let Some(q) = query {
        target.push('?');
        target.push_str(q);
    }
    match forward(upstream, &request.method, &target, request.header("Accept")) {
        Ok(r) => r,
        Err(e) => error(
            502,
            "UNAVAILABLE",
            "fault-registry: upstream unreachable",
            json!(format!("{upstream}: {e}")),
        ),
    }
}

fn forward(
    upstream: &str,
    method: &str,
    target: &str,
    accept: Option<&str>,
) -> io::Result<Response> {
    let addr: SocketAddr = upstream
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{e}")))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut head = format!("{method} {target} HTTP/1.0\r\nHost: {upstream}\r\n");
    if let Some(accept) = accept {
        head.push_str(&format!("Accept: {accept}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no HTTP head from upstream"))?;
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let body = buf[end + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "bad status line from upstream")
        })?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            // HEAD keeps the upstream Content-Length (there is no body to count).
            !(k == "connection"
                || k == "keep-alive"
                || k == "transfer-encoding"
                || (k == "content-length" && method != "HEAD"))
        })
        .collect();
    Ok(Response {
        status,
        headers,
        body,
    })
}
