//! The Hub's settings: endpoint, token, cache directory, offline. `crate::config` fills them
//! from the environment as `huggingface_hub` reads it; this file reads nothing itself except
//! the token file, when a request needs the token.

use std::path::PathBuf;

/// The public Hub, when `HF_ENDPOINT` is not set.
const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// FrogNano's checkpoint repository, which `lilypad doctor` tells a person without a model to
/// pull. The one place the name is written: it could not be checked from where Lilypad is
/// built, so `LILYPAD_DEFAULT_REPO` replaces it (`HubSettings::default_repo`).
pub const FROGNANO_REPO: &str = "microsoft/FrogNano-4B-2609";

/// Where and how to reach the Hub and its cache.
#[derive(Clone, Default, PartialEq)]
pub struct HubSettings {
    /// `HF_ENDPOINT` (a mirror), without a trailing `/`; `None` is the public Hub.
    pub endpoint: Option<String>,
    /// `HF_TOKEN`.
    pub token: Option<String>,
    /// `HF_TOKEN_PATH`, else `$HF_HOME/token`: read when `token` is not set.
    pub token_path: Option<PathBuf>,
    /// `HF_HUB_CACHE`, else `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else
    /// `~/.cache/huggingface/hub`.
    pub cache_dir: Option<PathBuf>,
    /// `HF_HUB_OFFLINE` (or `TRANSFORMERS_OFFLINE`) is one of 1, ON, YES, TRUE.
    pub offline: bool,
    /// Lilypad's store of GGUF files converted from pulled checkpoints (in its data
    /// directory); `None` where the platform has none.
    pub converted_dir: Option<PathBuf>,
    /// `LILYPAD_DEFAULT_REPO`: FrogNano's repository, when not [`FROGNANO_REPO`].
    pub default_repo: Option<String>,
}

impl std::fmt::Debug for HubSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubSettings")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("token_path", &self.token_path)
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.offline)
            .field("converted_dir", &self.converted_dir)
            .field("default_repo", &self.default_repo)
            .finish()
    }
}

impl HubSettings {
    /// The endpoint requests go to.
    pub fn endpoint(&self) -> &str {
        self.endpoint
            .as_deref()
            .map_or(DEFAULT_ENDPOINT, |e| e.trim_end_matches('/'))
    }

    /// FrogNano's repository: `LILYPAD_DEFAULT_REPO`, else [`FROGNANO_REPO`].
    pub fn default_repo(&self) -> &str {
        self.default_repo.as_deref().unwrap_or(FROGNANO_REPO)
    }

    /// The token: `HF_TOKEN`, else the token file's first line (absent file: no token).
    pub fn token(&self) -> Option<String> {
        if let Some(t) = self
            .token
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            return Some(t.to_string());
        }
        let text = std::fs::read_to_string(self.token_path.as_ref()?).ok()?;
        let t = text.trim();
        (!t.is_empty()).then(|| t.to_string())
    }
}
