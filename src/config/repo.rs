//! The repository's own layer of settings: `<repo>/.lilypad/config.toml`, read over the
//! person's config file and under the environment and the flags.
//!
//! Owns: finding the file (at the root of the repository the session works in), what it may
//! set (`[sandbox]`, `[prompt]` and `[[command_rules]]`), refusing what could loosen
//! containment when it comes from a cloned repository (the host sandbox, the container's
//! network, the Kubernetes runtime class, credentials (pull secrets too) and namespace, a rule
//! that approves every command, or a rule for another repository), each refusal naming the
//! file and the key; and laying the allowed sections over the person's own. Its command rules
//! need no `repo` key: they are the repository's.
//!
//! Does not own: the settings types (each layer's own), or the other layers (`super`).

use super::ConfigError;
use crate::agent::SavedCommandRule;
use std::path::{Path, PathBuf};

/// Where a repository keeps its settings, relative to its root.
pub const REPO_CONFIG: &str = ".lilypad/config.toml";

/// Sections a repository may set.
const ALLOWED: &[&str] = &["sandbox", "prompt", "command_rules"];

/// `[prompt]` keys that name files; relative ones are the repository's.
const PROMPT_PATHS: &[&str] = &[
    "harness",
    "system_prompt_file",
    "tools_file",
    "template_file",
];

/// The repository's layer, read and checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct RepoLayer {
    /// The file it was read from.
    pub(super) path: PathBuf,
    sandbox: Option<toml::Table>,
    prompt: Option<toml::Table>,
    rules: Vec<String>,
}

impl RepoLayer {
    /// The layer of the repository `workdir` is in, if it has the file.
    pub(super) fn find(workdir: &Path) -> Result<Option<Self>, ConfigError> {
        let root = crate::prompt::project_doc::repository_root(workdir);
        let path = root.join(REPO_CONFIG);
        if !path.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        Self::parse(&path, &root, &text).map(Some)
    }

    fn parse(path: &Path, root: &Path, text: &str) -> Result<Self, ConfigError> {
        let table: toml::Table = toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
        let refuse = |key: &str, why: &str| ConfigError::Refused {
            path: path.to_path_buf(),
            key: key.to_string(),
            why: why.to_string(),
        };
        let mut layer = Self {
            path: path.to_path_buf(),
            ..Self::default()
        };
        for (key, value) in table {
            match (key.as_str(), value) {
                ("sandbox", toml::Value::Table(t)) => {
                    check_sandbox(&t, &refuse)?;
                    layer.sandbox = Some(t);
                }
                ("prompt", toml::Value::Table(mut t)) => {
                    for k in PROMPT_PATHS {
                        if let Some(toml::Value::String(p)) = t.get_mut(*k) {
                            *p = root.join(&*p).display().to_string();
                        }
                    }
                    layer.prompt = Some(t);
                }
                ("command_rules", toml::Value::Array(rules)) => {
                    for rule in rules {
                        layer.rules.push(rule_prefix(rule, &refuse)?);
                    }
                }
                (k, _) if ALLOWED.contains(&k) => {
                    return Err(refuse(k, "it has the wrong form for this section"))
                }
                (k, _) => {
                    return Err(refuse(
                        k,
                        "a repository may set only [sandbox], [prompt] and [[command_rules]]",
                    ))
                }
            }
        }
        // Each section must read as its own type, so that a mistake names this file.
        let parse = |source| ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        };
        if let Some(t) = &layer.sandbox {
            toml::Value::Table(t.clone())
                .try_into::<crate::sandbox::SandboxSettings>()
                .map_err(parse)?;
        }
        if let Some(t) = &layer.prompt {
            toml::Value::Table(t.clone())
                .try_into::<crate::prompt::PromptSettings>()
                .map_err(parse)?;
        }
        Ok(layer)
    }

    /// Lay this layer over `base` (the person's own file as a table).
    pub(super) fn over(&self, base: &mut toml::Table) {
        for (name, section) in [("sandbox", &self.sandbox), ("prompt", &self.prompt)] {
            if let Some(t) = section {
                let to = base
                    .entry(name)
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                merge(to, &toml::Value::Table(t.clone()));
            }
        }
    }

    /// The repository's command rules, for the session's directory `workdir`.
    pub(super) fn rules(&self, workdir: &Path) -> Vec<SavedCommandRule> {
        self.rules
            .iter()
            .map(|prefix| SavedCommandRule {
                repo: workdir.to_path_buf(),
                prefix: prefix.clone(),
            })
            .collect()
    }
}

/// Refuse the `[sandbox]` keys that would loosen containment.
fn check_sandbox(
    t: &toml::Table,
    refuse: &impl Fn(&str, &str) -> ConfigError,
) -> Result<(), ConfigError> {
    if t.get("kind").and_then(toml::Value::as_str) == Some("host") {
        return Err(refuse(
            "sandbox.kind",
            "the host sandbox runs the model's commands on this machine",
        ));
    }
    if let Some(n) = t.get("network") {
        if n.as_str() != Some("none") {
            return Err(refuse(
                "sandbox.network",
                "it would give the session's container a network",
            ));
        }
    }
    if let Some(n) = t.get("build_network") {
        if !matches!(n.as_str(), Some("none" | "default")) {
            return Err(refuse(
                "sandbox.build_network",
                "only `default` or `none` may be asked for while the image is made",
            ));
        }
    }
    if let Some(toml::Value::Table(kube)) = t.get("kube") {
        for (key, why) in [
            ("runtime_class", "it chooses how the pod is isolated"),
            ("runtimeClassName", "it chooses how the pod is isolated"),
            ("runtimeClass", "it chooses how the pod is isolated"),
            ("kubeconfig", "it chooses the cluster credentials"),
            ("context", "it chooses the cluster credentials"),
            (
                "pull_secrets",
                "it lends the namespace's registry credentials",
            ),
            (
                "imagePullSecrets",
                "it lends the namespace's registry credentials",
            ),
            (
                "namespace",
                "it chooses where in the cluster the pod runs, and under which admission rules",
            ),
        ] {
            if kube.contains_key(key) {
                return Err(refuse(&format!("sandbox.kube.{key}"), why));
            }
        }
    }
    Ok(())
}

/// A rule's prefix: `prefix` only (the repository is the file's), and not empty.
fn rule_prefix(
    rule: toml::Value,
    refuse: &impl Fn(&str, &str) -> ConfigError,
) -> Result<String, ConfigError> {
    let toml::Value::Table(t) = rule else {
        return Err(refuse(
            "command_rules",
            "each rule is a table with `prefix`",
        ));
    };
    if let Some(k) = t.keys().find(|k| k.as_str() != "prefix") {
        let why = if k == "repo" {
            "a repository's rules are its own and cannot name another"
        } else {
            "a rule has only `prefix`"
        };
        return Err(refuse(&format!("command_rules.{k}"), why));
    }
    let prefix = t.get("prefix").and_then(toml::Value::as_str).unwrap_or("");
    let prefix = crate::agent::CommandRule::new(prefix).prefix;
    if prefix.is_empty() {
        return Err(refuse(
            "command_rules.prefix",
            "an empty prefix would approve every command",
        ));
    }
    Ok(prefix)
}

/// `from` over `to`: tables key by key, anything else replaced.
fn merge(to: &mut toml::Value, from: &toml::Value) {
    match (to, from) {
        (toml::Value::Table(a), toml::Value::Table(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(old) => merge(old, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (to, from) => *to = from.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RepoLayer, ConfigError> {
        RepoLayer::parse(Path::new("/r/.lilypad/config.toml"), Path::new("/r"), text)
    }

    #[test]
    fn loosening_keys_are_refused_with_the_file_and_key() {
        for (text, key) in [
            ("[sandbox]\nkind = \"host\"\n", "sandbox.kind"),
            ("[sandbox]\nnetwork = \"bridge\"\n", "sandbox.network"),
            (
                "[sandbox.kube]\nruntime_class = \"runc\"\n",
                "sandbox.kube.runtime_class",
            ),
            (
                "[sandbox]\nbuild_network = \"host\"\n",
                "sandbox.build_network",
            ),
            (
                "[sandbox.kube]\nnamespace = \"kube-system\"\n",
                "sandbox.kube.namespace",
            ),
            (
                "[sandbox.kube]\npull_secrets = [\"regcred\"]\n",
                "sandbox.kube.pull_secrets",
            ),
            ("[engine]\nctx = 4\n", "engine"),
            ("[remote]\nendpoint = \"http://x\"\n", "remote"),
            (
                "[[command_rules]]\nprefix = \" \"\n",
                "command_rules.prefix",
            ),
            (
                "[[command_rules]]\nrepo = \"/x\"\nprefix = \"make\"\n",
                "command_rules.repo",
            ),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(
                err.contains("/r/.lilypad/config.toml") && err.contains(&format!("`{key}`")),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn allowed_sections_lay_over_the_persons_own() {
        let layer = parse(
            "[sandbox]\nnetwork = \"none\"\nmemory = \"2g\"\nkind = \"docker\"\n[prompt]\ntools_file = \"t.json\"\n[[command_rules]]\nprefix = \"make  test\"\n",
        )
        .unwrap();
        let mut base: toml::Table =
            toml::from_str("[sandbox]\ncpus = 2\nmemory = \"8g\"\n[engine]\nctx = 4096\n").unwrap();
        layer.over(&mut base);
        let s: super::super::Settings = toml::Value::Table(base).try_into().unwrap();
        assert_eq!(s.sandbox.cpus, Some(2.0), "the person's keys stay");
        assert_eq!(
            s.sandbox.memory.map(|m| m.0),
            Some(2 << 30),
            "the repository's win"
        );
        assert_eq!(s.engine.ctx, 4096);
        assert_eq!(s.prompt.tools_file.as_deref(), Some(Path::new("/r/t.json")));
        assert_eq!(layer.rules(Path::new("/w"))[0].prefix, "make test");
        assert!(parse("[sandbox]\nimagee = \"x\"\n")
            .unwrap_err()
            .to_string()
            .contains("/r/.lilypad/config.toml"));
    }
}
