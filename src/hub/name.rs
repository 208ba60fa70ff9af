//! Model names: `ORG/NAME[:TAG]`, a Hub repository and the tag that picks its file.

use super::HubError;

/// A repository on the Hub and, optionally, the tag that picks its GGUF file (`Q4_K_M`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelName {
    /// `ORG/NAME`.
    pub repo: String,
    /// The tag after `:`, as given.
    pub tag: Option<String>,
}

impl ModelName {
    /// Parse `ORG/NAME[:TAG]`.
    pub fn parse(given: &str) -> Result<Self, HubError> {
        let bad = || HubError::BadName {
            given: given.to_string(),
        };
        let (repo, tag) = match given.split_once(':') {
            Some((r, t)) => (r, Some(t)),
            None => (given, None),
        };
        let (org, name) = repo.split_once('/').ok_or_else(bad)?;
        let part = |s: &str| {
            !s.is_empty()
                && !s.starts_with(['.', '-'])
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        if !part(org) || !part(name) || name.contains("..") {
            return Err(bad());
        }
        let tag = match tag {
            Some(t) if t.is_empty() || !part(t) => return Err(bad()),
            t => t.map(str::to_string),
        };
        Ok(Self {
            repo: repo.to_string(),
            tag,
        })
    }

    /// Whether `given` reads as a model name rather than a file path: it parses and does not
    /// end in `.gguf` (callers check first that no such file exists).
    pub fn looks_like(given: &str) -> bool {
        !given.to_ascii_lowercase().ends_with(".gguf") && Self::parse(given).is_ok()
    }
}

impl std::fmt::Display for ModelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.tag {
            Some(t) => write!(f, "{}:{t}", self.repo),
            None => f.write_str(&self.repo),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        let n = ModelName::parse("unsloth/FrogNano-4B-GGUF:q4_k_m").unwrap();
        assert_eq!(n.repo, "unsloth/FrogNano-4B-GGUF");
        assert_eq!(n.tag.as_deref(), Some("q4_k_m"));
        assert_eq!(n.to_string(), "unsloth/FrogNano-4B-GGUF:q4_k_m");
        assert!(ModelName::parse("org/name").unwrap().tag.is_none());
        for bad in ["name", "/x", "a/b/c", "a/", "a/b:", "../x", "a/b c", "./m"] {
            assert!(ModelName::parse(bad).is_err(), "{bad}");
        }
        assert!(!ModelName::looks_like("models/f.gguf"));
        assert!(ModelName::looks_like("org/name:Q8_0"));
    }
}
