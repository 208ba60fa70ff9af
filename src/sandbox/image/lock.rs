//! Image digest locks in Leaf's format (`image_locks/sweb-v-20260904.json` for SWE-bench
//! Verified): a JSON object from each image reference as a task names it
//! (`swebench/sweb.eval.x86_64.django_1776_django-11099:latest`) to the reference it is pinned
//! to (`swebench/sweb.eval.x86_64.django_1776_django-11099@sha256:<64 hex>`). The same object
//! under an `images` key is read too.
//!
//! Owns: reading and checking a lock ([`ImageLock::read`]: every pin is `name@sha256:<64
//! hex>`), and pinning a run's images all at once ([`ImageLock::pin_all`]): either every one
//! is in the lock, or the error names every task that is not.
//!
//! Does not own: which image each task names, or when the pinning happens (the batch does it
//! before any sandbox starts: `crate::headless::batch`); reference syntax (`super::reference`).

use super::reference::pinned_digest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a lock could not be read, or did not pin a run's images.
#[derive(Debug, Error)]
pub enum LockError {
    #[error("cannot read the image lock {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the image lock {} is not a JSON object from image references to pinned references (`name@sha256:<digest>`): {source}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the image lock {} pins {image} to {pinned:?}, which is not `name@sha256:<64 hex digits>`", path.display())]
    NotPinned {
        path: PathBuf,
        image: String,
        pinned: String,
    },
    #[error("the image lock {} has no image for {} task(s), so nothing was started: {}\n  hint: add their images to the lock, or leave these tasks out of the run", path.display(), missing.len(), list(missing))]
    Missing {
        path: PathBuf,
        /// Each task the lock does not cover: its id and the image it names (`None`: it names
        /// none, e.g. a Harbor task, whose image is built from its own Dockerfile).
        missing: Vec<(String, Option<String>)>,
    },
}

fn list(missing: &[(String, Option<String>)]) -> String {
    missing
        .iter()
        .map(|(id, image)| match image {
            Some(i) => format!("{id} ({i})"),
            None => format!("{id} (no image named: a lock pins named images only)"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A digest lock, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageLock {
    path: PathBuf,
    pins: BTreeMap<String, String>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Format {
    Flat(BTreeMap<String, String>),
    Wrapped { images: BTreeMap<String, String> },
}

impl ImageLock {
    /// Read the lock at `path`; every pin must be `name@sha256:<64 hex>`.
    pub fn read(path: &Path) -> Result<Self, LockError> {
        let text = std::fs::read_to_string(path).map_err(|source| LockError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    fn parse(path: &Path, text: &str) -> Result<Self, LockError> {
        let pins = match serde_json::from_str(text) {
            Ok(Format::Flat(p) | Format::Wrapped { images: p }) => p,
            Err(source) => {
                return Err(LockError::Parse {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        if let Some((image, pinned)) = pins.iter().find(|(_, p)| pinned_digest(p).is_none()) {
            return Err(LockError::NotPinned {
                path: path.to_path_buf(),
                image: image.clone(),
                pinned: pinned.clone(),
            });
        }
        Ok(Self {
            path: path.to_path_buf(),
            pins,
        })
    }

    /// Where the lock was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The reference `image` is pinned to.
    pub fn pin(&self, image: &str) -> Option<&str> {
        self.pins.get(image).map(String::as_str)
    }

    /// The pinned reference of each `(task id, image it names)`, in order; a task whose image
    /// is not in the lock (or that names none) makes the whole run an error that names them
    /// all.
    pub fn pin_all(&self, tasks: &[(String, Option<String>)]) -> Result<Vec<String>, LockError> {
        let mut pinned = Vec::with_capacity(tasks.len());
        let mut missing = Vec::new();
        for (id, image) in tasks {
            match image.as_deref().and_then(|i| self.pin(i)) {
                Some(p) => pinned.push(p.to_string()),
                None => missing.push((id.clone(), image.clone())),
            }
        }
        match missing.is_empty() {
            true => Ok(pinned),
            false => Err(LockError::Missing {
                path: self.path.clone(),
                missing,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn lock(text: &str) -> Result<ImageLock, LockError> {
        ImageLock::parse(Path::new("l.json"), text)
    }

    #[test]
    fn flat_and_wrapped_locks_read_the_same() {
        let pins = format!(r#"{{"swebench/a:latest": "swebench/a@sha256:{HEX}"}}"#);
        let flat = lock(&pins).unwrap();
        let wrapped = lock(&format!(r#"{{"images": {pins}}}"#)).unwrap();
        assert_eq!(flat, wrapped);
        assert_eq!(
            flat.pin("swebench/a:latest"),
            Some(format!("swebench/a@sha256:{HEX}").as_str())
        );
        assert_eq!(flat.pin("swebench/a"), None, "references match as written");
    }

    #[test]
    fn a_pin_without_a_digest_is_refused() {
        let e = lock(r#"{"a:latest": "a:v2"}"#).unwrap_err();
        assert!(
            matches!(&e, LockError::NotPinned { image, .. } if image == "a:latest"),
            "{e}"
        );
        assert!(matches!(lock("[1]"), Err(LockError::Parse { .. })));
        assert!(matches!(lock(r#"{"a": 1}"#), Err(LockError::Parse { .. })));
    }

    #[test]
    fn every_task_missing_is_named() {
        let l = lock(&format!(r#"{{"a:1": "a@sha256:{HEX}"}}"#)).unwrap();
        let t = |id: &str, image: Option<&str>| (id.to_string(), image.map(str::to_string));
        assert_eq!(
            l.pin_all(&[t("x", Some("a:1")), t("y", Some("a:1"))])
                .unwrap(),
            vec![format!("a@sha256:{HEX}"); 2]
        );
        let e = l
            .pin_all(&[t("x", Some("a:1")), t("y", Some("b:1")), t("z", None)])
            .unwrap_err();
        let LockError::Missing { missing, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(missing, &vec![t("y", Some("b:1")), t("z", None)]);
        let text = e.to_string();
        assert!(
            text.contains("y (b:1)") && text.contains("z (no image"),
            "{text}"
        );
    }
}
