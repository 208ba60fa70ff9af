//! Image references as Docker writes them, `[registry/]path[:tag][@sha256:digest]`: pure
//! functions on the text, no engine and no network.
//!
//! Owns: whether a reference names its registry ([`is_qualified`], Docker's rule: the first
//! path component holds a `.` or a `:`, or is `localhost`), putting a registry prefix in front
//! of one that does not ([`with_registry`]), checking a prefix ([`registry_prefix`]), and
//! finding the `sha256:` digest a reference is pinned to or that an image id names
//! ([`pinned_digest`], [`find_digest`]), and splitting a reference into the name and the tag or
//! digest the engine's pull asks for ([`name_and_tag`]).
//!
//! Does not own: which image a sandbox uses (`crate::sandbox::settings`), digest locks
//! (`super::lock`), or asking an engine or a cluster for a digest (the runtimes).

use thiserror::Error;

/// A registry prefix that cannot stand in front of an image's name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{prefix:?} is not a registry prefix ({why}); write one as `registry.example.com` or `registry.example.com:5000/mirror`")]
pub struct PrefixError {
    pub prefix: String,
    pub why: &'static str,
}

/// Whether `image` names its registry: its first path component (before the first `/`)
/// holds a `.` or a `:`, or is `localhost`. `ubuntu:22.04` and `swebench/x:latest` do not
/// (they are Docker Hub's); `ghcr.io/o/x` and `localhost:5000/x` do.
pub fn is_qualified(image: &str) -> bool {
    match image.split_once('/') {
        Some((first, _)) => first.contains('.') || first.contains(':') || first == "localhost",
        None => false,
    }
}

/// `prefix` checked and without trailing slashes: not empty, no spaces, no `@`, and no empty
/// path component.
pub fn registry_prefix(prefix: &str) -> Result<String, PrefixError> {
    let p = prefix.trim().trim_end_matches('/');
    let bad = |why| {
        Err(PrefixError {
            prefix: prefix.to_string(),
            why,
        })
    };
    if p.is_empty() {
        return bad("it is empty");
    }
    if p.chars().any(|c| c.is_whitespace() || c == '@') {
        return bad("it holds a space or an `@`");
    }
    if p.split('/').any(str::is_empty) {
        return bad("it has an empty path component");
    }
    Ok(p.to_string())
}

/// A checked registry prefix ([`registry_prefix`]): what `--image-registry` and `[sandbox]
/// image_registry` hold, refused when they are read if it cannot be one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RegistryPrefix(String);

impl RegistryPrefix {
    /// `image` under this prefix when it does not name its registry ([`with_registry`]).
    pub fn apply(&self, image: &str) -> String {
        with_registry(&self.0, image)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for RegistryPrefix {
    type Error = PrefixError;
    fn try_from(s: String) -> Result<Self, PrefixError> {
        registry_prefix(&s).map(Self)
    }
}

impl From<RegistryPrefix> for String {
    fn from(p: RegistryPrefix) -> String {
        p.0
    }
}

impl std::str::FromStr for RegistryPrefix {
    type Err = PrefixError;
    fn from_str(s: &str) -> Result<Self, PrefixError> {
        registry_prefix(s).map(Self)
    }
}

/// `image` under `prefix` (a checked [`registry_prefix`]) when it does not name its registry;
/// as it is when it does.
pub fn with_registry(prefix: &str, image: &str) -> String {
    if is_qualified(image) {
        image.to_string()
    } else {
        format!("{prefix}/{image}")
    }
}

/// The `sha256:<64 hex>` digest `image` is pinned to (`name@sha256:...`), if it is.
pub fn pinned_digest(image: &str) -> Option<&str> {
    let (name, digest) = image.rsplit_once('@')?;
    (!name.is_empty() && is_sha256(digest)).then_some(digest)
}

/// The repository and the tag (or digest) a pull of `image` asks the engine for, as Docker's own
/// client splits them: a digest wins over a tag, and a reference with neither means `latest`.
pub fn name_and_tag(image: &str) -> (&str, &str) {
    let (named, digest) = match image.rsplit_once('@') {
        Some((n, d)) if !n.is_empty() && !d.is_empty() => (n, Some(d)),
        _ => (image, None),
    };
    // A tag is a `:` after the last `/` (an earlier one separates a registry's port).
    let (name, tag) = match named.rfind(':') {
        Some(c) if c > named.rfind('/').unwrap_or(0) => (&named[..c], Some(&named[c + 1..])),
        _ => (named, None),
    };
    (name, digest.or(tag).unwrap_or("latest"))
}

/// The `sha256:<64 hex>` digest at the end of an image id as engines and clusters write it:
/// `sha256:...`, `docker-pullable://name@sha256:...`, `docker://sha256:...`.
pub fn find_digest(id: &str) -> Option<&str> {
    let at = id.rfind("sha256:")?;
    let digest = &id[at..];
    is_sha256(digest).then_some(digest)
}

fn is_sha256(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_pull_asks_for_the_digest_else_the_tag_else_latest() {
        assert_eq!(name_and_tag("debian"), ("debian", "latest"));
        assert_eq!(name_and_tag("debian:bookworm"), ("debian", "bookworm"));
        assert_eq!(
            name_and_tag("127.0.0.1:5000/x/y"),
            ("127.0.0.1:5000/x/y", "latest")
        );
        assert_eq!(
            name_and_tag("127.0.0.1:5000/x/y:2"),
            ("127.0.0.1:5000/x/y", "2")
        );
        let pinned = format!("reg.example.com:443/x:1@sha256:{HEX}");
        let digest = format!("sha256:{HEX}");
        assert_eq!(
            name_and_tag(&pinned),
            ("reg.example.com:443/x", digest.as_str())
        );
    }

    #[test]
    fn docker_decides_qualified_by_the_first_component() {
        for unqualified in [
            "ubuntu",
            "ubuntu:22.04",
            "swebench/sweb.eval.x86_64.django_1776_django-11099:latest",
            "library/busybox@sha256:abc",
            "my-org/team/image",
        ] {
            assert!(!is_qualified(unqualified), "{unqualified}");
        }
        for qualified in [
            "ghcr.io/o/x",
            "localhost/x",
            "localhost:5000/x:1",
            "registry:5000/x",
            "docker.io/library/ubuntu",
        ] {
            assert!(is_qualified(qualified), "{qualified}");
        }
    }

    #[test]
    fn only_unqualified_images_get_the_prefix() {
        let p = registry_prefix("mirror.example.com:5000/hub/").unwrap();
        assert_eq!(p, "mirror.example.com:5000/hub");
        assert_eq!(
            with_registry(&p, "swebench/x:latest"),
            "mirror.example.com:5000/hub/swebench/x:latest"
        );
        assert_eq!(
            with_registry(&p, "busybox"),
            "mirror.example.com:5000/hub/busybox"
        );
        let pinned = format!("swebench/x@sha256:{HEX}");
        assert_eq!(
            with_registry(&p, &pinned),
            format!("mirror.example.com:5000/hub/{pinned}")
        );
        assert_eq!(with_registry(&p, "ghcr.io/o/x:1"), "ghcr.io/o/x:1");
        assert_eq!(with_registry(&p, "localhost/x"), "localhost/x");
    }

    #[test]
    fn bad_prefixes_are_refused() {
        for bad in ["", "  ", "/", "a b", "reg@x", "reg//x"] {
            assert!(registry_prefix(bad).is_err(), "{bad:?}");
            assert!(bad.parse::<RegistryPrefix>().is_err(), "{bad:?}");
        }
        let p: RegistryPrefix = serde_json::from_str(r#""reg.example.com/""#).unwrap();
        assert_eq!(p.apply("x"), "reg.example.com/x");
        assert!(serde_json::from_str::<RegistryPrefix>(r#""a b""#).is_err());
    }

    #[test]
    fn digests_are_found_only_when_whole() {
        let d = format!("sha256:{HEX}");
        assert_eq!(pinned_digest(&format!("swebench/x@{d}")), Some(d.as_str()));
        assert_eq!(pinned_digest("swebench/x:latest"), None);
        assert_eq!(pinned_digest(&format!("@{d}")), None);
        assert_eq!(pinned_digest("x@sha256:abc"), None, "too short");
        let upper = format!("x@sha256:{}", HEX.to_uppercase());
        assert_eq!(
            pinned_digest(&upper),
            None,
            "Docker writes digests in lower case"
        );
        assert_eq!(
            find_digest(&format!("docker-pullable://busybox@{d}")),
            Some(d.as_str())
        );
        assert_eq!(find_digest(&format!("docker://{d}")), Some(d.as_str()));
        assert_eq!(find_digest(&d), Some(d.as_str()));
        assert_eq!(find_digest("docker://busybox:latest"), None);
    }
}
