//! The Hugging Face Hub's environment, read as `huggingface_hub` reads it: `HF_ENDPOINT`,
//! `HF_TOKEN` (else the file at `HF_TOKEN_PATH`, else `$HF_HOME/token`), `HF_HUB_CACHE`
//! (else `HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub`; `HF_HOME` defaults to
//! `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`), `HF_HUB_OFFLINE` (or
//! `TRANSFORMERS_OFFLINE`) as 1, ON, YES or TRUE; and Lilypad's own `LILYPAD_DEFAULT_REPO`
//! (FrogNano's repository, for `doctor`'s advice). Owns only this reading.

use crate::hub::HubSettings;
use std::path::PathBuf;

/// Expand a leading `~/` as Python's `os.path.expanduser` does.
fn expand(path: &str, home: Option<&PathBuf>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ if path == "~" => home.cloned().unwrap_or_else(|| PathBuf::from(path)),
        _ => PathBuf::from(path),
    }
}

/// The Hub's settings from the variables `get` reads, `home` being the user's directory.
pub(super) fn from_env(
    get: &impl Fn(&str) -> Option<String>,
    home: Option<PathBuf>,
) -> HubSettings {
    let set = |k: &str| get(k).filter(|v| !v.is_empty());
    let hf_home = set("HF_HOME")
        .map(|v| expand(&v, home.as_ref()))
        .or_else(|| set("XDG_CACHE_HOME").map(|x| expand(&x, home.as_ref()).join("huggingface")))
        .or_else(|| home.as_ref().map(|h| h.join(".cache").join("huggingface")));
    let cache_dir = set("HF_HUB_CACHE")
        .or_else(|| set("HUGGINGFACE_HUB_CACHE"))
        .map(|v| expand(&v, home.as_ref()))
        .or_else(|| hf_home.as_ref().map(|h| h.join("hub")));
    let token_path = set("HF_TOKEN_PATH")
        .map(|v| expand(&v, home.as_ref()))
        .or_else(|| hf_home.as_ref().map(|h| h.join("token")));
    let truthy = |k: &str| {
        set(k)
            .is_some_and(|v| matches!(v.to_ascii_uppercase().as_str(), "1" | "ON" | "YES" | "TRUE"))
    };
    HubSettings {
        endpoint: set("HF_ENDPOINT").map(|e| e.trim_end_matches('/').to_string()),
        token: set("HF_TOKEN"),
        token_path,
        cache_dir,
        offline: truthy("HF_HUB_OFFLINE") || truthy("TRANSFORMERS_OFFLINE"),
        converted_dir: None,
        default_repo: set("LILYPAD_DEFAULT_REPO").map(|r| r.trim().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> HubSettings {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        from_env(&|k| map.get(k).cloned(), Some(PathBuf::from("/home/u")))
    }

    #[test]
    fn defaults_and_overrides_as_huggingface_hub() {
        let d = read(&[]);
        assert_eq!(
            d.cache_dir,
            Some(PathBuf::from("/home/u/.cache/huggingface/hub"))
        );
        assert_eq!(
            d.token_path,
            Some(PathBuf::from("/home/u/.cache/huggingface/token"))
        );
        assert!(!d.offline);
        assert_eq!(d.endpoint(), "https://huggingface.co");
        let x = read(&[("XDG_CACHE_HOME", "/x")]);
        assert_eq!(x.cache_dir, Some(PathBuf::from("/x/huggingface/hub")));
        let h = read(&[("HF_HOME", "~/hf"), ("HF_HUB_OFFLINE", "yes")]);
        assert_eq!(h.cache_dir, Some(PathBuf::from("/home/u/hf/hub")));
        assert!(h.offline);
        let c = read(&[
            ("HF_HOME", "/h"),
            ("HF_HUB_CACHE", "/c"),
            ("HF_ENDPOINT", "http://mirror/"),
        ]);
        assert_eq!(c.cache_dir, Some(PathBuf::from("/c")));
        assert_eq!(c.token_path, Some(PathBuf::from("/h/token")));
        assert_eq!(c.endpoint(), "http://mirror");
    }
}
