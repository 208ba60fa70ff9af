//! `[wandb]`: logging a batch to Weights & Biases through the official client, as Leaf logs
//! its runs (`lilypad run --wandb ENTITY/PROJECT` sets the project; the rest is here).
//!
//! Owns: the section's fields and the `ENTITY/PROJECT` form. Does not own: the logging
//! (`crate::headless::wandb`).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use thiserror::Error;

/// `--wandb` was not `ENTITY/PROJECT` (or `PROJECT`).
#[derive(Debug, Error)]
#[error("--wandb takes ENTITY/PROJECT (or PROJECT), not {0:?}")]
pub struct BadTarget(pub String);

/// `[wandb]` (every field optional; nothing is logged without a project).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WandbSettings {
    /// The team or user the run belongs to (the client's default entity when unset).
    pub entity: Option<String>,
    /// The project: setting it turns logging on.
    pub project: Option<String>,
    /// The run's display name, group and tags.
    pub name: Option<String>,
    pub group: Option<String>,
    pub tags: Vec<String>,
    /// A W&B server other than the public one.
    pub base_url: Option<String>,
    /// The Python that has the `wandb` package (default `python3`).
    pub python: Option<PathBuf>,
}

impl WandbSettings {
    /// Set entity and project from `ENTITY/PROJECT` (or a bare `PROJECT`).
    pub fn set_target(&mut self, target: &str) -> Result<(), BadTarget> {
        let (entity, project) = match target.split_once('/') {
            Some((e, p)) => (Some(e), p),
            None => (None, target),
        };
        let bad = |s: &str| s.is_empty() || s.contains('/') || s.chars().any(char::is_whitespace);
        if bad(project) || entity.is_some_and(bad) {
            return Err(BadTarget(target.to_string()));
        }
        self.entity = entity.map(str::to_string);
        self.project = Some(project.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_name_an_entity_and_a_project() {
        let mut w = WandbSettings::default();
        w.set_target("acme/evals").unwrap();
        assert_eq!(
            (w.entity.as_deref(), w.project.as_deref()),
            (Some("acme"), Some("evals"))
        );
        w.set_target("solo").unwrap();
        assert_eq!(
            (w.entity.as_deref(), w.project.as_deref()),
            (None, Some("solo"))
        );
        for bad in ["", "a/", "/b", "a/b/c", "a b/c"] {
            assert!(w.set_target(bad).is_err(), "{bad:?}");
        }
    }
}
