//! Evaluation presets (`lilypad run --preset NAME`): Leaf's published evaluation settings,
//! kept as facts in `assets/presets/leaf-eval.toml`, and how they resolve against the settings
//! and flags. Order: built-in defaults < config file and environment < preset < explicit
//! flags. Owns the preset file's format and the resolution; the flags are `crate::cli`'s.
//!
//! What a preset sets and Lilypad applies: steps, context, per-turn cap, wall time, attempts
//! (seeds), tries per attempt (`max_attempts`), sampling, the remote engine's model-call
//! retries, and the pod's memory limit on Kubernetes. The image lock's file name is recorded,
//! and is the file `--image-lock` without a path reads; the lock itself is the user's file.

use crate::config::Settings;
use crate::launch::SessionOptions;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use thiserror::Error;

const PRESETS: &str = include_str!("../../assets/presets/leaf-eval.toml");

#[derive(Debug, Error)]
pub enum PresetError {
    #[error("unknown preset {0:?}; the presets are: {1}")]
    Unknown(String, String),
    #[error("the built-in preset file does not parse: {0}")]
    Parse(#[from] toml::de::Error),
}

/// One preset, as the file writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// The model the preset was published with (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub steps: u32,
    pub context: u32,
    /// Absent: no per-turn cap but the context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turn_tokens: Option<u32>,
    pub wall_time_secs: u64,
    /// Attempts per task, each with its own seed.
    pub seeds: u32,
    /// Tries of an attempt that ends in an error (a sandbox or model failure, no reward),
    /// inside one run.
    pub max_attempts: u32,
    /// Retries of one failed model call (the remote engine's `retries`).
    pub model_call_retries: u32,
    /// The pod's memory limit on Kubernetes ("32Gi"), when the preset sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<String>,
    /// The digest lock the benchmark's images are pinned with (a file name, recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_lock: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition_penalty: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<bool>,
}

/// Every preset, by name.
pub fn all() -> Result<BTreeMap<String, Preset>, PresetError> {
    Ok(toml::from_str(PRESETS)?)
}

/// The preset called `name`.
pub fn find(name: &str) -> Result<Preset, PresetError> {
    let mut all = all()?;
    let names = all.keys().cloned().collect::<Vec<_>>().join(", ");
    all.remove(name)
        .ok_or_else(|| PresetError::Unknown(name.to_string(), names))
}

/// The values given explicitly on the command line, which win over a preset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Explicit {
    pub ctx: Option<u32>,
    pub max_turn_tokens: Option<u32>,
    pub max_steps: Option<u32>,
    pub wall_time: Option<u64>,
    pub attempts: Option<u32>,
    pub seed: Option<u32>,
    pub max_attempts: Option<u32>,
}

/// The settings a run resolved to, recorded in its header.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    pub steps: u32,
    pub context: u32,
    pub max_turn_tokens: u32,
    pub wall_time_secs: Option<u64>,
    /// Whether the wall time came from the run (`--wall-time` or the preset) rather than
    /// the defaults; a run's own wall time holds over a Harbor task's.
    #[serde(skip)]
    pub wall_time_given: bool,
    pub attempts: u32,
    /// Tries of an attempt that ends in an error, inside one run (default 1).
    pub max_attempts: u32,
    /// The remote engine's retries of a failed model call, when a preset set them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_call_retries: Option<u32>,
    /// The pod memory limit a preset set (applied on Kubernetes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<String>,
    /// The image lock a preset names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_lock: Option<String>,
    /// `--seed`, else the config file's; `None`: a batch starts from 0, a single run takes a
    /// fresh seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_seed: Option<u32>,
    #[serde(serialize_with = "tidy_sampling")]
    pub sampling: crate::config::SamplingSettings,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repetition_penalty: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<bool>,
}

/// Resolve `preset` (if any) over `settings` and `opts`, under the `explicit` flags, and
/// write the result into both.
pub fn apply(
    preset: Option<(&str, &Preset)>,
    explicit: &Explicit,
    settings: &mut Settings,
    opts: &mut SessionOptions,
) -> Resolved {
    let defaults = crate::agent::AgentConfig::new(String::new(), Vec::new(), greedy_free());
    let mut r = Resolved {
        preset: preset.map(|(n, _)| n.to_string()),
        steps: opts.max_steps.unwrap_or(defaults.max_steps),
        context: settings.engine.ctx,
        max_turn_tokens: settings.engine.max_turn_tokens,
        wall_time_secs: opts.wall_time.or(defaults.wall_time.map(|d| d.as_secs())),
        wall_time_given: opts.wall_time.is_some(),
        attempts: 1,
        max_attempts: 1,
        model_call_retries: None,
        memory_limit: None,
        image_lock: None,
        base_seed: settings.engine.sampling.seed,
        sampling: settings.engine.sampling.clone(),
        presence_penalty: None,
        repetition_penalty: None,
        thinking: None,
    };
    if let Some((_, p)) = preset {
        r.steps = p.steps;
        r.context = p.context;
        r.max_turn_tokens = p.max_turn_tokens.unwrap_or(p.context);
        r.wall_time_secs = Some(p.wall_time_secs);
        r.wall_time_given = true;
        r.attempts = p.seeds;
        r.max_attempts = p.max_attempts;
        r.model_call_retries = Some(p.model_call_retries);
        r.memory_limit.clone_from(&p.memory_limit);
        r.image_lock.clone_from(&p.image_lock);
        let s = &mut r.sampling;
        s.temperature = p.temperature.unwrap_or(s.temperature);
        s.top_p = p.top_p.unwrap_or(s.top_p);
        s.top_k = p.top_k.unwrap_or(s.top_k);
        s.min_p = p.min_p.unwrap_or(s.min_p);
        r.presence_penalty = p.presence_penalty;
        r.repetition_penalty = p.repetition_penalty;
        r.thinking = p.thinking;
    }
    r.steps = explicit.max_steps.unwrap_or(r.steps);
    r.context = explicit.ctx.unwrap_or(r.context);
    r.max_turn_tokens = explicit.max_turn_tokens.unwrap_or(r.max_turn_tokens);
    r.wall_time_secs = explicit.wall_time.or(r.wall_time_secs);
    r.wall_time_given |= explicit.wall_time.is_some();
    r.attempts = explicit.attempts.unwrap_or(r.attempts).max(1);
    r.max_attempts = explicit.max_attempts.unwrap_or(r.max_attempts).max(1);
    r.base_seed = explicit.seed.or(r.base_seed);
    r.sampling.seed = r.base_seed;
    settings.engine.ctx = r.context;
    settings.engine.max_turn_tokens = r.max_turn_tokens;
    settings.engine.sampling = r.sampling.clone();
    opts.max_steps = Some(r.steps);
    opts.wall_time = r.wall_time_secs;
    if let Some(n) = r.model_call_retries {
        settings.remote.retries = n;
    }
    if let Some(m) = &r.memory_limit {
        // Only a pod reads it; a limit the user set in `[sandbox.kube.resources]` stays.
        settings
            .sandbox
            .kube
            .resources
            .limits
            .entry("memory".into())
            .or_insert_with(|| m.clone());
    }
    r
}

impl Resolved {
    /// The limits a session records in its provenance.
    pub fn limits(&self) -> crate::session::RunLimits {
        crate::session::RunLimits {
            steps: self.steps,
            context: self.context,
            max_turn_tokens: self.max_turn_tokens,
            wall_time_secs: self.wall_time_secs,
            max_attempts: self.max_attempts,
            seeds: self.attempts,
        }
    }
}

/// The sampling settings with their `f32`s as written (`0.6`).
fn tidy_sampling<S: serde::Serializer>(
    s: &crate::config::SamplingSettings,
    to: S,
) -> Result<S::Ok, S::Error> {
    let mut v = serde_json::to_value(s).map_err(serde::ser::Error::custom)?;
    crate::launch::provenance::tidy_f32(&mut v);
    v.serialize(to)
}

/// Sampling for building the agent's default limits (its values are not used).
fn greedy_free() -> crate::engine::SamplingParams {
    crate::engine::SamplingParams::from_settings(&Default::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What differs between Leaf's four evaluation configs.
    struct Leaf {
        name: &'static str,
        max_turn_tokens: u32,
        model_call_retries: u32,
        memory_limit: Option<&'static str>,
        image_lock: Option<&'static str>,
    }

    /// Leaf's evaluation configs as of frognano commit 5229bdf
    /// (`frognano/configs/eval/*.yaml` and `tests/test_config.py`), restated here.
    const LEAF_5229BDF: [Leaf; 4] = [
        Leaf {
            name: "swebench-verified",
            max_turn_tokens: 8192,
            model_call_retries: 5,
            memory_limit: Some("32Gi"),
            image_lock: Some("image_locks/sweb-v-20260904.json"),
        },
        Leaf {
            name: "swebench-pro",
            max_turn_tokens: 32_000,
            model_call_retries: 2,
            memory_limit: Some("32Gi"),
            image_lock: None,
        },
        Leaf {
            name: "terminal-bench-2-verified",
            max_turn_tokens: 32_000,
            model_call_retries: 2,
            memory_limit: Some("32Gi"),
            image_lock: None,
        },
        Leaf {
            name: "patch-eval-verified",
            max_turn_tokens: 8192,
            model_call_retries: 5,
            memory_limit: None,
            image_lock: None,
        },
    ];

    #[test]
    fn the_presets_hold_leafs_values_at_5229bdf() {
        let all = all().unwrap();
        assert_eq!(all.len(), LEAF_5229BDF.len());
        for leaf in LEAF_5229BDF {
            let name = leaf.name;
            let p = &all[name];
            // The same for all four.
            assert_eq!(p.steps, 150, "{name}");
            assert_eq!(p.context, 131_072, "{name}");
            assert_eq!(p.wall_time_secs, 10_800, "{name}");
            assert_eq!(p.seeds, 3, "{name}");
            assert_eq!(p.max_attempts, 2, "{name}");
            assert_eq!(p.temperature, Some(0.6), "{name}");
            assert_eq!(p.top_p, Some(0.95), "{name}");
            assert_eq!(p.top_k, Some(20), "{name}");
            assert_eq!(p.min_p, Some(0.0), "{name}");
            // Each its own.
            assert_eq!(p.max_turn_tokens, Some(leaf.max_turn_tokens), "{name}");
            assert_eq!(p.model_call_retries, leaf.model_call_retries, "{name}");
            assert_eq!(p.memory_limit.as_deref(), leaf.memory_limit, "{name}");
            assert_eq!(p.image_lock.as_deref(), leaf.image_lock, "{name}");
        }
        assert!(find("nope")
            .unwrap_err()
            .to_string()
            .contains("swebench-pro"));
    }

    #[test]
    fn flags_win_over_the_preset_and_the_preset_over_settings() {
        let mut settings = Settings::default();
        settings.engine.sampling.temperature = 1.0;
        settings.engine.max_turn_tokens = 100;
        let mut opts = SessionOptions::default();
        let p = find("patch-eval-verified").unwrap();
        let explicit = Explicit {
            max_steps: Some(7),
            seed: Some(40),
            ..Explicit::default()
        };
        let r = apply(
            Some(("patch-eval-verified", &p)),
            &explicit,
            &mut settings,
            &mut opts,
        );
        assert_eq!((r.steps, r.context, r.max_turn_tokens), (7, 131_072, 8192));
        assert_eq!((r.attempts, r.base_seed), (3, Some(40)));
        assert_eq!(r.sampling.temperature, 0.6);
        assert_eq!(opts.max_steps, Some(7));
        assert_eq!(opts.wall_time, Some(10_800));
        assert_eq!(settings.engine.max_turn_tokens, 8192);
        assert_eq!((r.max_attempts, settings.remote.retries), (2, 5));
        assert_eq!(r.limits().seeds, 3);
        // PatchEval sets no memory limit; SWE-bench Pro does, unless the user set one.
        assert!(settings.sandbox.kube.resources.limits.is_empty());
        let pro = find("swebench-pro").unwrap();
        let mut s = Settings::default();
        let r = apply(
            Some(("swebench-pro", &pro)),
            &Explicit {
                max_attempts: Some(4),
                ..Explicit::default()
            },
            &mut s,
            &mut SessionOptions::default(),
        );
        assert_eq!((r.max_turn_tokens, r.max_attempts), (32_000, 4));
        assert_eq!(s.sandbox.kube.resources.limits["memory"], "32Gi");
        assert_eq!(s.remote.retries, 2);
        // Without a preset the settings stand.
        let r = apply(
            None,
            &Explicit::default(),
            &mut Settings::default(),
            &mut SessionOptions::default(),
        );
        assert_eq!(
            (r.steps, r.max_turn_tokens, r.attempts, r.max_attempts),
            (150, 8192, 1, 1)
        );
    }
}
