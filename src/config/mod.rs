//! Layered settings: built-in defaults < config file < the repository's `.lilypad/config.toml`
//! (`repo`: `[sandbox]`, `[prompt]` and `[[command_rules]]`, nothing that loosens containment)
//! < environment < command-line flags.
//! This is the only module that reads settings (the file and the environment); everything
//! else receives its part of a [`Settings`]. Each layer owns its own settings type
//! (`crate::engine::EngineSettings`, `crate::engine::remote::RemoteSettings`,
//! `crate::serve::ServeSettings`, `crate::prompt::PromptSettings`, ...); this module only
//! gathers them into one file format, layers and validates them. It sits above every module
//! whose settings it gathers and below `crate::launch`; nothing under it imports it.
//! Paths (config file, models, sessions) come from `directories` so they follow each
//! platform's conventions. Does not own: the command line (`crate::cli` turns its flags into
//! [`Overrides`]).

mod hub;
mod repo;
mod wandb;

pub use wandb::WandbSettings;

pub use repo::REPO_CONFIG;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use thiserror::Error;

pub use crate::engine::script::ScriptSettings;
pub use crate::engine::{EngineSettings, SamplingSettings};
pub use crate::sandbox::SandboxSettings;

/// Errors while reading settings.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid TOML: {source}")]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("cannot write config file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A repository's config file sets what only the person may set.
    #[error("{path}: `{key}` cannot be set in a repository's config ({why}); set it in your own config file or on the command line")]
    Refused {
        path: PathBuf,
        key: String,
        why: String,
    },
}

/// The top layer: values given on the command line (`crate::cli` fills it from its flags).
/// `None` means "not given": the lower layers decide.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// GGUF model file
    pub model: Option<PathBuf>,
    /// Layers to offload to the GPU (needs a build with `cuda`, `vulkan` or `metal`)
    pub gpu_layers: Option<u32>,
    /// Context size in tokens
    pub ctx: Option<u32>,
    /// Flash attention (`auto`, `on`, `off`)
    pub flash_attention: Option<crate::engine::FlashAttention>,
    /// Element type of the attention cache's keys and values
    pub cache_type: Option<crate::engine::CacheType>,
    /// How the model is split over several GPUs
    pub split_mode: Option<crate::engine::SplitMode>,
    /// One attention cache shared by all sequences (`true`) or one per sequence (`false`)
    pub kv_unified: Option<bool>,
    /// GPU devices to use, by index (empty: not given)
    pub devices: Vec<usize>,
    /// Drafting with the model file's MTP layer (`auto`, `on`, `off`)
    pub mtp: Option<crate::engine::Mtp>,
    /// Tokens the MTP layer drafts per step
    pub draft_tokens: Option<u32>,
    /// CPU threads for generation
    pub threads: Option<u32>,
    /// Cap on generated tokens per model turn
    pub max_turn_tokens: Option<u32>,
    /// Sampling seed (runs with the same seed and prompt give the same text)
    pub seed: Option<u32>,
    /// Greedy decoding instead of sampling
    pub greedy: bool,
    /// No grammar on tool calls
    pub no_grammar: bool,
    /// Harness profile file (system prompt and tools)
    pub harness: Option<PathBuf>,
    /// A remote OpenAI-compatible server instead of the in-process engine, e.g.
    /// http://gpu-box:30000/v1 (SGLang, vLLM, llama.cpp server, `lilypad serve`)
    pub endpoint: Option<String>,
    /// Environment variable that holds the API key: sent to --endpoint, or required from
    /// clients by `lilypad serve`
    pub api_key_env: Option<String>,
    /// Model name to request from --endpoint (default: the first it lists), or to serve under
    pub model_name: Option<String>,
    /// tokenizer.json for counting tokens when the endpoint reports no usage
    pub tokenizer: Option<PathBuf>,
    /// Config file (default: the platform config dir's lilypad/config.toml)
    pub config: Option<PathBuf>,
    /// The directory the session works in: its repository's `.lilypad/config.toml` is a layer
    /// (`None`: no repository layer).
    pub repo: Option<PathBuf>,
    /// Diagnostics filter (`warn`, `info`, `debug`, or tracing directives such as
    /// `lilypad=debug,warn`)
    pub log_level: Option<String>,
    /// The sandbox flags, over the `[sandbox]` section.
    pub sandbox: SandboxOverrides,
}

/// Diagnostics: how many, and where the interface writes them (`[log]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// A tracing filter: `warn` (the default), `info`, `debug`, or directives.
    pub level: Option<String>,
}

impl LogSettings {
    /// The filter in force.
    pub fn filter(&self) -> String {
        self.level
            .clone()
            .unwrap_or_else(|| "warn,llama-cpp-2=error".to_string())
    }
}

/// The sandbox flags (`crate::cli` fills them); each given one replaces the `[sandbox]`
/// section's value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxOverrides {
    pub kind: Option<crate::sandbox::SandboxKind>,
    pub image: Option<String>,
    pub dockerfile: Option<PathBuf>,
    pub setup: Option<String>,
    /// `--no-devcontainer`: ignore the repository's devcontainer.json.
    pub no_devcontainer: bool,
    pub cpus: Option<f64>,
    pub memory: Option<crate::sandbox::settings::ByteSize>,
    pub pids: Option<i64>,
    pub disk: Option<crate::sandbox::settings::ByteSize>,
    pub network: Option<String>,
    pub command_timeout_secs: Option<u64>,
    pub kubeconfig: Option<PathBuf>,
    pub kube_context: Option<String>,
    pub kube_namespace: Option<String>,
    pub runtime_class: Option<String>,
    /// `--image-registry` (`lilypad run`).
    pub image_registry: Option<crate::sandbox::image::reference::RegistryPrefix>,
    /// `--pull-secret` (`lilypad run`; empty: not given).
    pub pull_secrets: Vec<String>,
}

impl SandboxOverrides {
    fn apply(&self, s: &mut crate::sandbox::SandboxSettings) {
        fn set<T: Clone>(to: &mut Option<T>, from: &Option<T>) {
            if from.is_some() {
                to.clone_from(from);
            }
        }
        set(&mut s.kind, &self.kind);
        if self.image.is_some() || self.dockerfile.is_some() {
            // A flag's image replaces whatever the file named, Dockerfile included.
            s.image.clone_from(&self.image);
            s.dockerfile.clone_from(&self.dockerfile);
            if self.dockerfile.is_some() {
                s.context = None;
            }
        }
        set(&mut s.setup, &self.setup);
        if self.no_devcontainer {
            s.devcontainer = false;
        }
        set(&mut s.cpus, &self.cpus);
        set(&mut s.memory, &self.memory);
        set(&mut s.pids, &self.pids);
        set(&mut s.disk, &self.disk);
        set(&mut s.network, &self.network);
        set(&mut s.command_timeout_secs, &self.command_timeout_secs);
        set(&mut s.kube.kubeconfig, &self.kubeconfig);
        set(&mut s.kube.context, &self.kube_context);
        set(&mut s.kube.namespace, &self.kube_namespace);
        set(&mut s.kube.runtime_class, &self.runtime_class);
        set(&mut s.image_registry, &self.image_registry);
        if !self.pull_secrets.is_empty() {
            s.kube.pull_secrets.clone_from(&self.pull_secrets);
        }
    }
}

/// All settings, after layering.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub engine: EngineSettings,
    /// A remote OpenAI-compatible server (`--endpoint`); see `docs/remote.md`.
    pub remote: crate::engine::remote::RemoteSettings,
    /// `lilypad serve`; see `docs/remote.md`.
    pub serve: crate::serve::ServeSettings,
    /// System prompt, tools, chat template choice (see `crate::prompt::PromptSettings`).
    pub prompt: crate::prompt::PromptSettings,
    /// Diagnostics (`--log-level`, `LILYPAD_LOG`).
    pub log: LogSettings,
    /// Where the model's tool calls run (see `crate::sandbox::SandboxSettings`).
    pub sandbox: crate::sandbox::SandboxSettings,
    /// The terminal interface (`[interface]`: how reasoning is shown).
    pub interface: crate::tui::InterfaceSettings,
    /// The scripted engine (`--engine script:FILE`); from the environment only.
    #[serde(skip)]
    pub script: ScriptSettings,
    /// Logging batches to Weights & Biases (`[wandb]`, `lilypad run --wandb`).
    pub wandb: WandbSettings,
    /// Command approval rules saved per repository (`[[command_rules]]`, appended by the
    /// interface's "don't ask again for commands starting with…").
    pub command_rules: Vec<crate::agent::SavedCommandRule>,
    /// The Hugging Face Hub and its cache (`HF_*` variables; see `docs/models.md`); from the
    /// environment only.
    #[serde(skip)]
    pub hub: crate::hub::HubSettings,
    /// The config file these settings were read from, or would be (where rules are saved).
    #[serde(skip)]
    pub source: Option<PathBuf>,
    /// The repository's `.lilypad/config.toml`, when one was laid over the file.
    #[serde(skip)]
    pub repo_source: Option<PathBuf>,
}

impl Settings {
    /// Defaults, then the config file (if any), then the repository's (if any), then the
    /// environment, then `flags`.
    pub fn load(flags: &Overrides) -> Result<Self, ConfigError> {
        let path = flags.config.clone().or_else(default_config_path);
        let mut settings = match &path {
            Some(p) if p.exists() => Self::from_file(p)?,
            _ => Self::default(),
        };
        let layer = match &flags.repo {
            Some(dir) => repo::RepoLayer::find(dir)?,
            None => None,
        };
        if let (Some(layer), Some(dir)) = (layer, &flags.repo) {
            settings = Self::with_repo_layer(path.as_deref(), &layer, dir)?;
        }
        settings.apply_env(|k| std::env::var(k).ok());
        settings.apply_flags(flags);
        settings.source = flags.config.clone().or_else(default_config_path);
        Ok(settings)
    }

    /// The saved command rules for `repo` (compared as canonical paths).
    pub fn command_rules_for(&self, repo: &Path) -> Vec<crate::agent::CommandRule> {
        let repo = canonical(repo);
        self.command_rules
            .iter()
            .filter(|r| canonical(&r.repo) == repo)
            .map(|r| crate::agent::CommandRule::new(&r.prefix))
            .collect()
    }

    /// These settings (read from the person's file at `path`, if any) with the repository's
    /// layer over them; its command rules are for `workdir`.
    fn with_repo_layer(
        path: Option<&Path>,
        layer: &repo::RepoLayer,
        workdir: &Path,
    ) -> Result<Self, ConfigError> {
        let own = match path.filter(|p| p.exists()) {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                    path: p.to_path_buf(),
                    source,
                })?;
                toml::from_str(&text).map_err(|source| ConfigError::Parse {
                    path: p.to_path_buf(),
                    source,
                })?
            }
            None => toml::Table::new(),
        };
        let mut table = own;
        layer.over(&mut table);
        let mut settings: Self =
            toml::Value::Table(table)
                .try_into()
                .map_err(|source| ConfigError::Parse {
                    path: layer.path.clone(),
                    source,
                })?;
        settings.command_rules.extend(layer.rules(workdir));
        settings.repo_source = Some(layer.path.clone());
        Ok(settings)
    }

    /// Read one TOML config file (missing fields keep their defaults).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse_file(path, &text)
    }

    fn parse_file(path: &Path, text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Environment layer. Only variables that are not also flags live here; flags read their
    /// own variables through clap.
    fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) {
        let home = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf());
        self.hub = hub::from_env(&get, home);
        self.hub.converted_dir = converted_dir();
        if self.engine.prefix_cache_dir.is_none() {
            self.engine.prefix_cache_dir = heads_dir();
        }
        if let Some(v) = get("LILYPAD_GPU_LAYERS").and_then(|v| v.parse().ok()) {
            self.engine.gpu_layers = Some(v);
        }
        if let Some(v) = get("LILYPAD_CTX").and_then(|v| v.parse().ok()) {
            self.engine.ctx = v;
        }
        if let Some(v) = get("LILYPAD_KEYS") {
            match v.trim() {
                "chat" => self.interface.keys = crate::tui::KeyScheme::Chat,
                "modal" => self.interface.keys = crate::tui::KeyScheme::Modal,
                _ => {}
            }
        }
        if let Some(v) = get("LILYPAD_THREADS").and_then(|v| v.parse().ok()) {
            self.engine.threads = v;
        }
        if let Some(v) = get("LILYPAD_LOG").filter(|v| !v.trim().is_empty()) {
            self.log.level = Some(v);
        }
        // Slows scripted replies down, for watching them and for queueing tests.
        if let Some(v) = get("LILYPAD_SCRIPT_DELAY_MS").and_then(|v| v.parse().ok()) {
            self.script.piece_delay_ms = v;
        }
    }

    fn apply_flags(&mut self, f: &Overrides) {
        let e = &mut self.engine;
        if f.model.is_some() {
            e.model.clone_from(&f.model);
        }
        if f.gpu_layers.is_some() {
            e.gpu_layers = f.gpu_layers;
        }
        if let Some(v) = f.ctx {
            e.ctx = v;
        }
        if let Some(v) = f.flash_attention {
            e.flash_attention = v;
        }
        if let Some(v) = f.cache_type {
            e.cache_type_k = v;
            e.cache_type_v = v;
        }
        if let Some(v) = f.split_mode {
            e.split_mode = v;
        }
        if let Some(v) = f.kv_unified {
            e.kv_unified = v;
        }
        if !f.devices.is_empty() {
            e.devices.clone_from(&f.devices);
        }
        if let Some(v) = f.mtp {
            e.mtp = v;
        }
        if let Some(v) = f.draft_tokens {
            e.draft_tokens = v;
        }
        if let Some(v) = f.threads {
            e.threads = v;
        }
        if let Some(v) = f.max_turn_tokens {
            e.max_turn_tokens = v;
        }
        if f.seed.is_some() {
            e.sampling.seed = f.seed;
        }
        if f.greedy {
            e.sampling.greedy = true;
        }
        if f.log_level.is_some() {
            self.log.level.clone_from(&f.log_level);
        }
        if f.no_grammar {
            e.sampling.tool_grammar = false;
        }
        if f.harness.is_some() {
            self.prompt.harness.clone_from(&f.harness);
        }
        // Remote engine and server: the key and model flags name both sides.
        if f.endpoint.is_some() {
            self.remote.endpoint.clone_from(&f.endpoint);
        }
        if f.api_key_env.is_some() {
            self.remote.api_key_env.clone_from(&f.api_key_env);
            self.serve.api_key_env.clone_from(&f.api_key_env);
        }
        if f.model_name.is_some() {
            self.remote.model_name.clone_from(&f.model_name);
            self.serve.model_name.clone_from(&f.model_name);
        }
        if f.tokenizer.is_some() {
            self.remote.tokenizer.clone_from(&f.tokenizer);
        }
        f.sandbox.apply(&mut self.sandbox);
    }
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Append a `[[command_rules]]` entry for `repo` to the config file at `path` (created if
/// missing). Appending keeps the file's own text and comments as they are; a rule already
/// saved is not added again.
pub fn append_command_rule(path: &Path, repo: &Path, prefix: &str) -> Result<(), ConfigError> {
    let repo = canonical(repo);
    let prefix = crate::agent::CommandRule::new(prefix).prefix;
    let existing = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    if !existing.trim().is_empty() {
        let current = Settings::parse_file(path, &existing)?;
        let saved = crate::agent::SavedCommandRule {
            repo: repo.clone(),
            prefix: prefix.clone(),
        };
        if current.command_rules.contains(&saved) {
            return Ok(());
        }
    }
    let entry = toml::to_string(&crate::agent::SavedCommandRule { repo, prefix }).map_err(|e| {
        ConfigError::Write {
            path: path.to_path_buf(),
            source: std::io::Error::other(e),
        }
    })?;
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("\n[[command_rules]]\n{entry}"));
    let write = |source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(write)?;
    }
    std::fs::write(path, text).map_err(write)
}

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "lilypad")
}

/// `…/lilypad/harness/` in the platform's config directory: where `lilypad harness import`
/// writes profiles.
pub fn harness_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.config_dir().join("harness"))
}

/// `…/lilypad/` in the platform's config directory: where the person's own `AGENTS.md` is.
pub fn config_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.config_dir().to_path_buf())
}

/// `…/lilypad/prompts/` in the platform's config directory: the person's own prompt files
/// for the interface's command palette.
pub fn prompts_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.config_dir().join("prompts"))
}

/// `…/lilypad/config.toml` in the platform's config directory.
pub fn default_config_path() -> Option<PathBuf> {
    project_dirs().map(|d| d.config_dir().join("config.toml"))
}

/// Where downloaded or converted models are looked for when no `--model` is given.
pub fn models_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.data_dir().join("models"))
}

/// Lilypad's store of GGUF files converted from pulled checkpoints, by repository, commit
/// and type (`crate::hub::Store`).
pub fn converted_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.data_dir().join("converted"))
}

/// `…/lilypad/heads/` in the platform's cache directory: the engine's saved prompt heads
/// (`[engine] prefix_cache_dir` when the config file does not say).
pub fn heads_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.cache_dir().join("heads"))
}

/// Where the model comes from, for messages.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelSource {
    /// `--model`, `LILYPAD_MODEL` or the config file.
    Configured(PathBuf),
    /// A model name (`ORG/NAME[:TAG]`) given as the model, found in the Hugging Face cache.
    Pulled { name: String, path: PathBuf },
    /// A model name given as the model that is not in the cache (or cannot be read there).
    NotPulled { name: String, why: String },
    /// Found in the models directory.
    Discovered(PathBuf),
    /// No model named and none in the models directory: the one model pulled (its name).
    OnlyPulled { name: String, path: PathBuf },
    /// No model named and several pulled: one must be chosen (their names).
    SeveralPulled { names: Vec<String> },
    /// Nothing configured and nothing found in `searched`.
    Missing { searched: Option<PathBuf> },
}

impl ModelSource {
    /// The file to load, or why there is none.
    pub fn file(&self) -> Result<&Path, NoModel> {
        match self {
            Self::Configured(p)
            | Self::Discovered(p)
            | Self::Pulled { path: p, .. }
            | Self::OnlyPulled { path: p, .. } => Ok(p),
            Self::NotPulled { why, .. } => Err(NoModel::NotPulled(why.clone())),
            Self::SeveralPulled { names } => Err(NoModel::Several(names.join(", "))),
            Self::Missing { .. } => Err(NoModel::Missing),
        }
    }
}

/// Why no model file is there to load.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum NoModel {
    /// A model name not in the Hugging Face cache (the message says to pull it).
    #[error("{0}")]
    NotPulled(String),
    /// Several pulled models and none named (their names).
    #[error("several models are pulled and none is chosen: pass --model with one of {0} (or set LILYPAD_MODEL)")]
    Several(String),
    #[error("no model: pass --model F.gguf or --model ORG/NAME[:TAG] after `lilypad pull ORG/NAME[:TAG]` (see `lilypad doctor`)")]
    Missing,
}

impl Settings {
    /// The model to use: the configured one, else the first `.gguf` in the models directory
    /// (FrogNano files first, then by name), else the one model pulled into the Hugging Face
    /// cache (several: none is chosen, and the answer names them).
    /// A configured value that is no file but reads as `ORG/NAME[:TAG]` is looked up in the
    /// Hugging Face cache, with no network call.
    pub fn model_source(&self) -> ModelSource {
        if let Some(p) = &self.engine.model {
            let given = p.to_string_lossy();
            if !p.exists() && crate::hub::ModelName::looks_like(&given) {
                let found = crate::hub::ModelName::parse(&given)
                    .and_then(|name| crate::hub::find(&self.hub, &name, None));
                return match found {
                    Ok(path) => ModelSource::Pulled {
                        name: given.into_owned(),
                        path,
                    },
                    Err(e) => ModelSource::NotPulled {
                        name: given.into_owned(),
                        why: e.to_string(),
                    },
                };
            }
            return ModelSource::Configured(p.clone());
        }
        let dir = models_dir();
        let found = dir.as_deref().and_then(find_gguf);
        if let Some(p) = found {
            return ModelSource::Discovered(p);
        }
        match crate::hub::only(&self.hub) {
            Ok(crate::hub::Only::Nothing) => ModelSource::Missing { searched: dir },
            Ok(crate::hub::Only::One(m)) => ModelSource::OnlyPulled {
                name: m.name(),
                path: m.path,
            },
            Ok(crate::hub::Only::Several(all)) => ModelSource::SeveralPulled {
                names: all.iter().map(|m| m.name()).collect(),
            },
            // An unreadable cache is said, not taken for an empty one.
            Err(e) => ModelSource::NotPulled {
                name: "the pulled models".to_string(),
                why: e.to_string(),
            },
        }
    }
}

fn find_gguf(dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
        .collect();
    files.sort_by_key(|p| {
        let name = p.file_name().map(|n| n.to_string_lossy().to_lowercase());
        (
            !name.as_deref().is_some_and(|n| n.contains("frognano")),
            p.clone(),
        )
    });
    files.into_iter().next()
}

/// Where the interface's diagnostics go (`--log-level` / `LILYPAD_LOG` set how many), since
/// they cannot be printed over the screen: the platform's state directory
/// (`$XDG_STATE_HOME/lilypad`, by default `~/.local/state/lilypad`, on Linux), or the data
/// directory where a platform has no state directory.
pub fn log_file() -> Option<PathBuf> {
    project_dirs().map(|d| {
        d.state_dir()
            .unwrap_or_else(|| d.data_dir())
            .join("lilypad.log")
    })
}

/// Where the message line's history is kept (every repository's, in one JSONL file): the
/// platform's state directory, or the data directory where a platform has none.
pub fn history_file() -> Option<PathBuf> {
    project_dirs().map(|d| {
        d.state_dir()
            .unwrap_or_else(|| d.data_dir())
            .join("history.jsonl")
    })
}

/// Where session logs live.
pub fn sessions_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.data_dir().join("sessions"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_apply_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[engine]\nctx = 4096\nthreads = 3\n[engine.sampling]\ntop_k = 5\n",
        )
        .unwrap();
        let mut s = Settings::from_file(&path).unwrap();
        assert_eq!(s.engine.ctx, 4096);
        assert_eq!(s.engine.sampling.top_k, 5);
        assert_eq!(s.engine.sampling.top_p, 0.95, "unset fields keep defaults");
        s.apply_env(|k| (k == "LILYPAD_CTX").then(|| "2048".to_string()));
        assert_eq!(s.engine.ctx, 2048, "environment overrides the file");
        s.apply_flags(&Overrides {
            ctx: Some(1024),
            greedy: true,
            ..Default::default()
        });
        assert_eq!(s.engine.ctx, 1024, "flags override the environment");
        assert_eq!(s.engine.threads, 3);
        assert!(s.engine.sampling.greedy);
    }

    #[test]
    fn device_and_cache_settings_come_from_the_file_and_flags() {
        use crate::engine::{CacheType, FlashAttention, SplitMode};
        let mut s: Settings = toml::from_str(
            "[engine]\nflash_attention = \"on\"\ncache_type_k = \"q8_0\"\nsplit_mode = \"row\"\ndevices = [1]\n",
        )
        .unwrap();
        assert_eq!(s.engine.flash_attention, FlashAttention::On);
        assert_eq!(s.engine.cache_type_k, CacheType::Q8_0);
        assert_eq!(s.engine.cache_type_v, CacheType::F16);
        assert_eq!(s.engine.split_mode, SplitMode::Row);
        assert_eq!(s.engine.devices, vec![1]);
        s.apply_flags(&Overrides {
            cache_type: Some(CacheType::Q4_0),
            flash_attention: Some(FlashAttention::Auto),
            devices: vec![0, 2],
            ..Default::default()
        });
        assert_eq!(s.engine.cache_type_k, CacheType::Q4_0);
        assert_eq!(s.engine.cache_type_v, CacheType::Q4_0);
        assert_eq!(s.engine.flash_attention, FlashAttention::Auto);
        assert_eq!(s.engine.split_mode, SplitMode::Row, "not given: kept");
        assert_eq!(s.engine.devices, vec![0, 2]);
        assert!(toml::from_str::<Settings>("[engine]\ncache_type_k = \"q3\"\n").is_err());
    }

    #[test]
    fn the_attention_cache_layout_comes_from_the_file_and_flags() {
        assert!(Settings::default().engine.kv_unified, "unified by default");
        let mut s: Settings = toml::from_str("[engine]\nkv_unified = false\n").unwrap();
        assert!(!s.engine.kv_unified);
        s.apply_flags(&Overrides::default());
        assert!(!s.engine.kv_unified, "not given: kept");
        s.apply_flags(&Overrides {
            kv_unified: Some(true),
            ..Default::default()
        });
        assert!(s.engine.kv_unified);
    }

    #[test]
    fn sandbox_flags_override_the_section() {
        let mut s: Settings = toml::from_str(
            r#"
[sandbox]
image = "team/dev:1"
setup = "pip install -e ."
memory = "4g"
cpus = 2
image_registry = "file.example.com"
[sandbox.kube]
namespace = "ci"
runtime_class = "gvisor"
pull_secrets = ["file-cred"]
"#,
        )
        .unwrap();
        assert_eq!(s.sandbox.image.as_deref(), Some("team/dev:1"));
        // The registry and the pull secrets: the file's until a flag gives its own.
        s.apply_flags(&Overrides::default());
        assert_eq!(s.sandbox.kube.pull_secrets, ["file-cred"]);
        s.apply_flags(&Overrides {
            sandbox: SandboxOverrides {
                image_registry: Some("flag.example.com".parse().unwrap()),
                pull_secrets: vec!["flag-cred".into()],
                ..Default::default()
            },
            ..Default::default()
        });
        assert_eq!(
            s.sandbox.image_ref().as_deref(),
            Some("flag.example.com/team/dev:1")
        );
        assert_eq!(s.sandbox.kube.pull_secrets, ["flag-cred"]);
        assert_eq!(s.sandbox.memory.map(|m| m.0), Some(4 << 30));
        s.apply_flags(&Overrides {
            sandbox: SandboxOverrides {
                dockerfile: Some("ci/Dockerfile".into()),
                memory: Some("1g".parse().unwrap()),
                kube_namespace: Some("mine".into()),
                no_devcontainer: true,
                ..Default::default()
            },
            ..Default::default()
        });
        let sb = &s.sandbox;
        assert_eq!(
            sb.image, None,
            "a flag's Dockerfile replaces the file's image"
        );
        assert_eq!(sb.dockerfile.as_deref(), Some(Path::new("ci/Dockerfile")));
        assert_eq!(sb.memory.map(|m| m.0), Some(1 << 30));
        assert_eq!(sb.cpus, Some(2.0), "what no flag gives stays");
        assert_eq!(sb.setup.as_deref(), Some("pip install -e ."));
        assert_eq!(sb.kube.namespace.as_deref(), Some("mine"));
        assert_eq!(sb.kube.runtime_class.as_deref(), Some("gvisor"));
        assert!(!sb.devcontainer);
        let err = Settings::from_file(&{
            let dir = tempfile::tempdir().unwrap().keep();
            let p = dir.join("c.toml");
            std::fs::write(&p, "[sandbox]\nimagee = \"x\"\n").unwrap();
            p
        });
        assert!(err.is_err(), "unknown sandbox keys are refused");
    }

    #[test]
    fn command_rules_append_to_the_file_and_read_back_per_repository() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "# mine\n[engine]\nctx = 4096").unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        append_command_rule(&path, &a, "python -m  pytest").unwrap();
        append_command_rule(&path, &a, "python -m pytest").unwrap();
        append_command_rule(&path, &b, "make").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\n[engine]\nctx = 4096\n"), "{text}");
        assert_eq!(text.matches("[[command_rules]]").count(), 2, "{text}");
        let s = Settings::from_file(&path).unwrap();
        assert_eq!(s.engine.ctx, 4096);
        assert_eq!(
            s.command_rules_for(&a),
            vec![crate::agent::CommandRule::new("python -m pytest")]
        );
        assert_eq!(s.command_rules_for(&b).len(), 1);
        assert!(s.command_rules_for(dir.path()).is_empty());
    }

    #[test]
    fn the_repository_layer_goes_between_the_file_and_the_flags() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".lilypad")).unwrap();
        std::fs::write(
            repo.join(REPO_CONFIG),
            "[sandbox]\nmemory = \"2g\"\n[[command_rules]]\nprefix = \"make test\"\n",
        )
        .unwrap();
        let own = dir.path().join("config.toml");
        std::fs::write(&own, "[sandbox]\nmemory = \"8g\"\ncpus = 3\n").unwrap();
        let flags = Overrides {
            config: Some(own),
            repo: Some(repo.clone()),
            ..Default::default()
        };
        let s = Settings::load(&flags).unwrap();
        assert_eq!(s.sandbox.memory.map(|m| m.0), Some(2 << 30));
        assert_eq!(s.sandbox.cpus, Some(3.0));
        assert_eq!(
            s.command_rules_for(&repo),
            vec![crate::agent::CommandRule::new("make test")]
        );
        assert!(s.command_rules_for(dir.path()).is_empty());
        let s = Settings::load(&Overrides {
            sandbox: SandboxOverrides {
                memory: Some("1g".parse().unwrap()),
                ..Default::default()
            },
            ..flags.clone()
        })
        .unwrap();
        assert_eq!(s.sandbox.memory.map(|m| m.0), Some(1 << 30), "flags win");
        std::fs::write(repo.join(REPO_CONFIG), "[sandbox]\nnetwork = \"host\"\n").unwrap();
        let err = Settings::load(&flags).unwrap_err().to_string();
        assert!(
            err.contains(".lilypad/config.toml") && err.contains("`sandbox.network`"),
            "{err}"
        );
    }

    #[test]
    fn the_interface_section_sets_how_reasoning_is_shown() {
        let s: Settings = toml::from_str("[interface]\nreasoning = \"full\"\n").unwrap();
        assert_eq!(s.interface.reasoning, crate::tui::ReasoningView::Full);
        assert_eq!(
            Settings::default().interface.reasoning,
            crate::tui::ReasoningView::Collapsed
        );
    }

    #[test]
    fn bad_config_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[engine]\nctxx = 1\n").unwrap();
        let err = Settings::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("c.toml"), "{err}");
    }

    #[test]
    fn remote_and_serve_sections_read_from_the_config_file() {
        let s: Settings = toml::from_str(
            r#"
[remote]
endpoint = "http://gpu:30000/v1"
api_key_env = "TEAM_KEY"
output = "raw"
extra_body = { chat_template_kwargs = { enable_thinking = true } }
[serve]
listen = "0.0.0.0:9000"
allow_remote = true
max_queue = 3
parallel = 2
keys_file = "/etc/lilypad/keys.jsonl"
audit_dir = "/var/log/lilypad"
audit_content = true
audit_retention_days = 30
"#,
        )
        .unwrap();
        assert_eq!(s.remote.endpoint.as_deref(), Some("http://gpu:30000/v1"));
        assert_eq!(s.remote.output, crate::engine::remote::OutputStyle::Raw);
        assert_eq!(s.remote.retries, 3, "unset fields keep their defaults");
        assert_eq!(
            s.remote.extra_body["chat_template_kwargs"]["enable_thinking"],
            true
        );
        assert_eq!(
            (s.serve.listen.as_str(), s.serve.max_queue),
            ("0.0.0.0:9000", 3)
        );
        assert!(s.serve.allow_remote);
        assert_eq!(s.serve.parallel, Some(2));
        assert_eq!(
            s.serve.keys_file.as_deref(),
            Some(Path::new("/etc/lilypad/keys.jsonl"))
        );
        assert_eq!(
            s.serve.audit_dir.as_deref(),
            Some(Path::new("/var/log/lilypad"))
        );
        assert!(s.serve.audit_content);
        assert_eq!(s.serve.audit_retention_days, Some(30));
        let err = toml::from_str::<Settings>("[serve]\nlisten_on = 1\n");
        assert!(err.is_err(), "unknown keys are refused");
    }
}
