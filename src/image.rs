//! Container image references: parsing, the canonical form sent to the host, registry mirrors
//! and the patterns of the `imagePlatforms` setting.
//!
//! The grammar follows the one the container runtimes use (distribution/reference): an optional
//! registry host (it has a `.` or a `:`, or is `localhost`), a repository path, an optional tag and
//! an optional digest. Short names live on Docker Hub: `busybox` is
//! `docker.io/library/busybox:latest`, and so are `index.docker.io/busybox` and
//! `registry-1.docker.io/library/busybox`.

use std::fmt;

const DOCKER_HUB: &str = "docker.io";
/// Other names of Docker Hub's registry: references through them are `docker.io` references.
pub const DOCKER_HUB_ALIASES: [&str; 2] = ["index.docker.io", "registry-1.docker.io"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// Registry host, with its port if any: `docker.io`, `127.0.0.1:5000`.
    pub registry: String,
    /// Repository path inside the registry: `library/busybox`.
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl ImageRef {
    /// Parses a reference as written in a Pod. The error says what is wrong with it.
    pub fn parse(reference: &str) -> Result<ImageRef, String> {
        if reference.is_empty() {
            return Err("the image reference is empty".into());
        }
        if reference.len() > 4096 {
            return Err("the image reference is longer than 4096 characters".into());
        }
        let (name, digest) = match reference.split_once('@') {
            Some((name, digest)) => {
                check_digest(digest)?;
                (name, Some(digest.to_string()))
            }
            None => (reference, None),
        };
        let (registry, rest) = match name.split_once('/') {
            Some((first, rest)) if is_registry_host(first) => (first.to_string(), rest),
            _ => (DOCKER_HUB.to_string(), name),
        };
        let registry = if DOCKER_HUB_ALIASES.contains(&registry.as_str()) {
            DOCKER_HUB.to_string()
        } else {
            registry
        };
        check_host(&registry)?;
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => {
                let (path, tag) = rest.split_at(last_slash + i);
                (path, Some(tag[1..].to_string()))
            }
            None => (rest, None),
        };
        check_repository(repository)?;
        if let Some(tag) = &tag {
            check_tag(tag)?;
        }
        let repository = if registry == DOCKER_HUB && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository.to_string()
        };
        Ok(ImageRef {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// The same image served by another registry host (and optional path prefix).
    pub fn mirrored(&self, mirror: &str) -> ImageRef {
        let (registry, prefix) = match mirror.split_once('/') {
            Some((host, prefix)) => (host, Some(prefix.trim_end_matches('/'))),
            None => (mirror, None),
        };
        ImageRef {
            registry: registry.to_string(),
            repository: match prefix {
                Some(prefix) => format!("{prefix}/{}", self.repository),
                None => self.repository.clone(),
            },
            tag: self.tag.clone(),
            digest: self.digest.clone(),
        }
    }
}

/// The canonical form: `registry/repository[:tag][@digest]`, with `:latest` when there is
/// neither tag nor digest. It is what the policy sends to the host, so that every spelling of one
/// image shares the host's cache entry.
impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        match (&self.tag, &self.digest) {
            (Some(tag), _) => write!(f, ":{tag}")?,
            (None, None) => f.write_str(":latest")?,
            (None, Some(_)) => {}
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

fn is_registry_host(component: &str) -> bool {
    component.contains('.') || component.contains(':') || component == "localhost"
}

/// A registry host: DNS name or IPv4 address, optional `:port`.
pub fn check_host(host: &str) -> Result<(), String> {
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    let name_ok = !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.parse::<u16>().is_ok());
    if name_ok && port_ok {
        Ok(())
    } else {
        Err(format!(
            "{host:?} is not a registry host (expected a DNS name or IP address with an optional :port)"
        ))
    }
}

fn check_repository(path: &str) -> Result<(), String> {
    let ok = !path.is_empty()
        && path.split('/').all(|component| {
            !component.is_empty()
                && component
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
                && component.starts_with(|c: char| c.is_ascii_alphanumeric())
                && component.ends_with(|c: char| c.is_ascii_alphanumeric())
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{path:?} is not a repository name (lowercase letters, digits and separators . _ - /)"
        ))
    }
}

fn check_tag(tag: &str) -> Result<(), String> {
    let ok = !tag.is_empty()
        && tag.len() <= 128
        && tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!("{tag:?} is not a valid tag"))
    }
}

pub(crate) fn check_digest(digest: &str) -> Result<(), String> {
    let ok = match digest.split_once(':') {
        Some(("sha256", hex)) => hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()),
        Some(("sha512", hex)) => hex.len() == 128 && hex.chars().all(|c| c.is_ascii_hexdigit()),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{digest:?} is not a valid digest (expected sha256:<64 hex digits>)"
        ))
    }
}

/// A pattern of the `imagePlatforms` setting: an image reference in which `*` stands for any
/// run of characters, e.g. `registry.example.com/legacy/*` or `docker.io/library/busybox:*`.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    let ok = !pattern.is_empty()
        && pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/:@*".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{pattern:?} is not an image pattern (an image reference where * matches any characters)"
        ))
    }
}

/// Whether `text` matches a glob `pattern` in which `*` matches any run of characters.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            backtrack = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((star, matched)) = backtrack {
            pi = star + 1;
            ti = matched + 1;
            backtrack = Some((star, matched + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(reference: &str) -> String {
        ImageRef::parse(reference).unwrap().to_string()
    }

    #[test]
    fn short_names_live_on_docker_hub() {
        assert_eq!(canonical("busybox"), "docker.io/library/busybox:latest");
        assert_eq!(canonical("nginx:1.27"), "docker.io/library/nginx:1.27");
        assert_eq!(canonical("bitnami/redis"), "docker.io/bitnami/redis:latest");
        assert_eq!(
            canonical("index.docker.io/library/busybox:1"),
            "docker.io/library/busybox:1"
        );
    }

    #[test]
    fn docker_hub_hosts_are_docker_io() {
        // Both hosts serve Docker Hub: one canonical name, one lookup, one `registryMirrors` key.
        for host in ["index.docker.io", "registry-1.docker.io"] {
            let image = ImageRef::parse(&format!("{host}/library/busybox:1")).unwrap();
            assert_eq!(image.registry, "docker.io", "{host}");
            assert_eq!(image.to_string(), "docker.io/library/busybox:1", "{host}");
            assert_eq!(
                canonical(&format!("{host}/busybox")),
                "docker.io/library/busybox:latest",
                "{host}"
            );
        }
    }

    #[test]
    fn registry_with_port_and_localhost() {
        let image = ImageRef::parse("127.0.0.1:5000/team/app:1.0").unwrap();
        assert_eq!(image.registry, "127.0.0.1:5000");
        assert_eq!(image.repository, "team/app");
        assert_eq!(image.tag.as_deref(), Some("1.0"));
        assert_eq!(canonical("localhost/app"), "localhost/app:latest");
        assert_eq!(canonical("localhost:5000/app"), "localhost:5000/app:latest");
    }

    #[test]
    fn tag_and_digest() {
        let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert_eq!(
            canonical(&format!("ghcr.io/org/app:1.0@{digest}")),
            format!("ghcr.io/org/app:1.0@{digest}")
        );
        assert_eq!(
            canonical(&format!("ghcr.io/org/app@{digest}")),
            format!("ghcr.io/org/app@{digest}")
        );
        assert_eq!(
            canonical(&format!("alpine@{digest}")),
            format!("docker.io/library/alpine@{digest}")
        );
    }

    #[test]
    fn malformed_references_say_why() {
        assert_eq!(
            ImageRef::parse("ghcr.io/Org/app").unwrap_err(),
            "\"Org/app\" is not a repository name (lowercase letters, digits and separators . _ - /)"
        );
        assert_eq!(
            ImageRef::parse("app@sha256:abc").unwrap_err(),
            "\"sha256:abc\" is not a valid digest (expected sha256:<64 hex digits>)"
        );
        assert_eq!(
            ImageRef::parse("app:").unwrap_err(),
            "\"\" is not a valid tag"
        );
        assert_eq!(
            ImageRef::parse("").unwrap_err(),
            "the image reference is empty"
        );
    }

    #[test]
    fn mirrors_replace_the_registry_host() {
        let image = ImageRef::parse("busybox:1.36").unwrap();
        assert_eq!(
            image.mirrored("mirror.example.com:5000").to_string(),
            "mirror.example.com:5000/library/busybox:1.36"
        );
        assert_eq!(
            image.mirrored("harbor.example.com/dockerhub").to_string(),
            "harbor.example.com/dockerhub/library/busybox:1.36"
        );
    }

    #[test]
    fn hosts() {
        assert!(check_host("registry.example.com").is_ok());
        assert!(check_host("127.0.0.1:5000").is_ok());
        assert!(check_host("bad host").is_err());
        assert!(check_host("host:99999").is_err());
        assert!(check_host("host:").is_err());
    }

    #[test]
    fn globs() {
        assert!(glob_match(
            "docker.io/library/busybox:*",
            "docker.io/library/busybox:1.36"
        ));
        assert!(glob_match("*", "anything"));
        assert!(glob_match(
            "registry.example.com/*/app:*",
            "registry.example.com/a/b/app:1"
        ));
        assert!(!glob_match(
            "registry.example.com/*",
            "ghcr.io/registry.example.com"
        ));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(glob_match("exact:1", "exact:1"));
        assert!(!glob_match("exact:1", "exact:10"));
        assert!(check_pattern("ghcr.io/org/*").is_ok());
        assert!(check_pattern("ghcr.io/org/ *").is_err());
        assert!(check_pattern("").is_err());
    }
}
