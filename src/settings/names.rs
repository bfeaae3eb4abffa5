//! Kubernetes' name rules, as the API server checks them: label keys and values, DNS
//! subdomains (object names such as a RuntimeClass's). The settings are validated with them, and
//! every value from outside (a registry, a Node, a NodePool, a Pod's labels) is checked with them
//! before it shapes a patch or a label selector.

use crate::platform;

/// A Kubernetes label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// characters.
pub fn check_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    });
    if prefix_ok && !name.is_empty() && check_label_value(name).is_ok() {
        Ok(())
    } else {
        Err(format!("{key:?} is not a label key"))
    }
}

/// A DNS subdomain (RFC 1123) as Kubernetes checks object names such as a RuntimeClass's: at
/// most 253 characters, dot-separated labels of lowercase alphanumerics and `-`, each starting
/// and ending with an alphanumeric.
pub fn check_dns_subdomain(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            label.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && label.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{} is not a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253 characters)",
            platform::quoted(name)
        ))
    }
}

/// A Kubernetes label value: at most 63 characters, alphanumerics with `-`, `_` and `.` inside.
pub fn check_label_value(value: &str) -> Result<(), String> {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric())
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)));
    if ok {
        Ok(())
    } else {
        Err(format!("{value:?} is not a label value"))
    }
}
