//! Platforms (OS + CPU architecture) as images declare them, folded to the values that
//! Kubernetes nodes carry in their `kubernetes.io/os` and `kubernetes.io/arch` labels.

use std::collections::BTreeSet;
use std::fmt;

/// The node label keys that name a node's architecture. `beta.` is deprecated but still set.
pub const ARCH_LABEL: &str = "kubernetes.io/arch";
pub const BETA_ARCH_LABEL: &str = "beta.kubernetes.io/arch";
/// The node label keys that name a node's operating system.
pub const OS_LABEL: &str = "kubernetes.io/os";
pub const BETA_OS_LABEL: &str = "beta.kubernetes.io/os";

/// Architectures a Kubernetes node can report (Go's GOARCH values, which kubelet uses).
pub const KNOWN_ARCHITECTURES: &[&str] = &[
    "386", "amd64", "arm", "arm64", "loong64", "mips", "mips64", "mips64le", "mipsle", "ppc64",
    "ppc64le", "riscv64", "s390x", "wasm",
];

/// Operating systems images are built for (Go's GOOS values).
pub const KNOWN_OPERATING_SYSTEMS: &[&str] = &[
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "illumos",
    "ios",
    "js",
    "linux",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "wasip1",
    "windows",
    "zos",
];

/// A set of node architecture label values, always sorted.
pub type Architectures = BTreeSet<String>;

/// One runnable platform of an image: the architecture as a node label value and the OS, if the
/// image says (a platform without an OS counts for every OS).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Platform {
    pub os: Option<String>,
    pub architecture: String,
    /// A Windows image's OS build (`major.minor.build` of its `os.version`), when it says.
    pub os_build: Option<String>,
}

impl Platform {
    /// Builds a platform from the fields of an index entry or an image config. Returns `None`
    /// for platforms nothing can run: no architecture, or `unknown` OS or architecture
    /// (BuildKit attestations).
    pub fn runnable(os: Option<&str>, architecture: Option<&str>) -> Option<Platform> {
        let architecture = node_architecture(architecture?)?;
        let os = match os.map(str::trim) {
            None | Some("") => None,
            Some(os) if os.eq_ignore_ascii_case("unknown") => return None,
            Some(os) => Some(os.to_ascii_lowercase()),
        };
        Some(Platform {
            os,
            architecture,
            os_build: None,
        })
    }

    /// The same platform with the OS build of `os_version` (`10.0.20348.2527` -> `10.0.20348`),
    /// when it has one.
    pub fn with_os_version(mut self, os_version: Option<&str>) -> Platform {
        self.os_build = os_version.and_then(os_build);
        self
    }

    /// Whether a node running `os` can run this platform.
    pub fn runs_on(&self, os: &str) -> bool {
        self.os.as_deref().is_none_or(|own| own == os)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.os {
            Some(os) => write!(f, "{os}/{}", self.architecture),
            None => f.write_str(&self.architecture),
        }
    }
}

/// Folds an image architecture (with any variant already dropped) to the value of a node's
/// `kubernetes.io/arch` label: `aarch64` -> `arm64`, `x86_64` -> `amd64`, ... Variants do not
/// exist in node labels, so `arm/v7` and `arm64/v8` are `arm` and `arm64`.
pub fn node_architecture(architecture: &str) -> Option<String> {
    let lower = architecture.trim().to_ascii_lowercase();
    let folded = match lower.as_str() {
        "" | "unknown" => return None,
        "x86_64" | "x86-64" | "x64" => "amd64",
        "aarch64" | "arm64v8" => "arm64",
        "armhf" | "armel" | "armv7" | "armv7l" | "armv6" | "armv6l" | "arm32v7" | "arm32v6" => {
            "arm"
        }
        "i386" | "i486" | "i586" | "i686" | "x86" => "386",
        "ppc64el" => "ppc64le",
        other => other,
    };
    Some(folded.to_string())
}

/// The `major.minor.build` of a Windows `os.version` (what nodes carry in their
/// `node.kubernetes.io/windows-build` label), if it has that shape.
pub fn os_build(os_version: &str) -> Option<String> {
    let parts: Vec<&str> = os_version.trim().split('.').take(3).collect();
    let numeric = |part: &&str| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit());
    (parts.len() == 3 && parts.iter().all(numeric)).then(|| parts.join("."))
}

/// The label Windows nodes carry their OS build in.
pub const WINDOWS_BUILD_LABEL: &str = "node.kubernetes.io/windows-build";

/// Joins architectures for messages and annotations: `amd64,arm64`.
pub fn join(architectures: &Architectures, separator: &str) -> String {
    architectures
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(separator)
}

/// Checks that every name is an architecture a node can report; the error names the setting.
pub fn check_known_architecture(setting: &str, name: &str) -> Result<(), String> {
    if KNOWN_ARCHITECTURES.contains(&name) {
        Ok(())
    } else {
        Err(format!(
            "{setting}: unknown architecture {name:?}; use a node `kubernetes.io/arch` value: {}",
            KNOWN_ARCHITECTURES.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_and_aliases_fold_to_node_labels() {
        assert_eq!(node_architecture("arm64").as_deref(), Some("arm64"));
        assert_eq!(node_architecture("aarch64").as_deref(), Some("arm64"));
        assert_eq!(node_architecture("x86_64").as_deref(), Some("amd64"));
        assert_eq!(node_architecture("ARM").as_deref(), Some("arm"));
        assert_eq!(node_architecture("armhf").as_deref(), Some("arm"));
        assert_eq!(node_architecture("unknown"), None);
        assert_eq!(node_architecture(""), None);
    }

    #[test]
    fn unknown_platforms_are_not_runnable() {
        assert_eq!(Platform::runnable(Some("unknown"), Some("unknown")), None);
        assert_eq!(Platform::runnable(Some("unknown"), Some("amd64")), None);
        assert_eq!(Platform::runnable(Some("linux"), None), None);
        assert_eq!(
            Platform::runnable(None, Some("arm64")),
            Some(Platform {
                os: None,
                architecture: "arm64".into(),
                os_build: None
            })
        );
    }

    #[test]
    fn a_platform_without_os_runs_on_every_os() {
        let any = Platform::runnable(None, Some("amd64")).unwrap();
        assert!(any.runs_on("linux") && any.runs_on("windows"));
        let windows = Platform::runnable(Some("Windows"), Some("amd64")).unwrap();
        assert!(!windows.runs_on("linux") && windows.runs_on("windows"));
        assert_eq!(windows.to_string(), "windows/amd64");
        assert_eq!(any.to_string(), "amd64");
    }

    #[test]
    fn windows_builds_are_major_minor_build() {
        assert_eq!(os_build("10.0.20348.2527").as_deref(), Some("10.0.20348"));
        assert_eq!(os_build("10.0.17763").as_deref(), Some("10.0.17763"));
        assert_eq!(os_build("10.0"), None);
        assert_eq!(os_build("10.0.x.1"), None);
        assert_eq!(os_build(""), None);
    }

    #[test]
    fn unknown_architecture_names_the_setting_and_the_known_ones() {
        assert_eq!(check_known_architecture("s", "arm64"), Ok(()));
        let err = check_known_architecture("schedulableArchitectures", "aarch64").unwrap_err();
        assert!(err.starts_with(
            "schedulableArchitectures: unknown architecture \"aarch64\"; use a node `kubernetes.io/arch` value: 386, amd64, arm, arm64,"
        ), "{err}");
    }
}
