//! The flags every subcommand that touches the model shares (`--model`, `--ctx`, `--endpoint`,
//! ...), and their conversion to `crate::config::Overrides`: the layers below decide what a
//! flag that was not given means.

use crate::config::{Overrides, SandboxOverrides};
use std::path::PathBuf;

/// Flags shared by every subcommand that touches the model. `None` means "not given": the
/// lower layers decide.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EngineArgs {
    /// GGUF model file [env: LILYPAD_MODEL]
    #[arg(long, global = true, env = "LILYPAD_MODEL", hide_env = true)]
    pub model: Option<PathBuf>,
    /// Layers to offload to the GPU (needs a build with `cuda`, `vulkan` or `metal`)
    #[arg(long, global = true)]
    pub gpu_layers: Option<u32>,
    /// Context size in tokens
    #[arg(long, global = true)]
    pub ctx: Option<u32>,
    /// CPU threads for generation
    #[arg(long, global = true)]
    pub threads: Option<u32>,
    /// Flash attention: auto (llama.cpp decides per device), on, off
    #[arg(long, global = true, value_name = "auto|on|off")]
    pub flash_attn: Option<crate::engine::FlashAttention>,
    /// Element type of the attention cache's keys and values: f16 (default), bf16, f32, q8_0,
    /// q5_1, q5_0, q4_1, q4_0 (quantised types need flash attention)
    #[arg(long, global = true, value_name = "TYPE")]
    pub cache_type: Option<crate::engine::CacheType>,
    /// How the model is split over several GPUs: layer (default), row, none
    #[arg(long, global = true, value_name = "layer|row|none")]
    pub split_mode: Option<crate::engine::SplitMode>,
    /// One attention cache of --ctx tokens shared by all sequences (the default)
    #[arg(long, global = true, overrides_with = "no_kv_unified")]
    pub kv_unified: bool,
    /// Each sequence its own attention cache of --ctx tokens: faster with several long
    /// conversations at once (`serve`, batches), at sequences times the memory
    #[arg(long, global = true, overrides_with = "kv_unified")]
    pub no_kv_unified: bool,
    /// GPU devices to use, by llama.cpp's device index, comma-separated [default: all]
    #[arg(long, global = true, value_delimiter = ',', value_name = "N,...")]
    pub device: Vec<usize>,
    /// Draft tokens with the model file's MTP layer, each verified by the model (same output,
    /// faster on a GPU when drafts are accepted): auto (when the file has the layer and layers
    /// are offloaded to a GPU), on (on the CPU too), off
    #[arg(long, global = true, value_name = "auto|on|off")]
    pub mtp: Option<crate::engine::Mtp>,
    /// Tokens the MTP layer drafts per step, 1 to 8 [default: 3]
    #[arg(long, global = true, value_name = "N")]
    pub draft_tokens: Option<u32>,
    /// Cap on generated tokens per model turn
    #[arg(long, global = true)]
    pub max_turn_tokens: Option<u32>,
    /// Sampling seed (runs with the same seed and prompt give the same text)
    #[arg(long, global = true)]
    pub seed: Option<u32>,
    /// Greedy decoding instead of sampling
    #[arg(long, global = true)]
    pub greedy: bool,
    /// Leave tool calls unconstrained (by default a grammar keeps them well formed)
    #[arg(long, global = true)]
    pub no_grammar: bool,
    /// Harness profile: the system prompt and tools the model reads (`lilypad harness import`
    /// writes one from your copy of Leaf) [default: the built-in profile]
    #[arg(long, global = true, value_name = "FILE")]
    pub harness: Option<PathBuf>,
    /// A remote OpenAI-compatible server instead of the in-process engine, e.g.
    /// http://gpu-box:30000/v1 (SGLang, vLLM, llama.cpp server, `lilypad serve`) [env: LILYPAD_ENDPOINT]
    #[arg(long, global = true, env = "LILYPAD_ENDPOINT", hide_env = true)]
    pub endpoint: Option<String>,
    /// Environment variable that holds the API key: sent to --endpoint, or required from
    /// clients by `lilypad serve`
    #[arg(long, global = true, value_name = "NAME")]
    pub api_key_env: Option<String>,
    /// Model name to request from --endpoint (default: the first it lists), or to serve under
    #[arg(long, global = true)]
    pub model_name: Option<String>,
    /// tokenizer.json to count tokens with when --endpoint reports no usage [default: a
    /// tokenizer.json beside --model]
    #[arg(long, global = true, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// Config file (default: the platform config dir's lilypad/config.toml) [env: LILYPAD_CONFIG]
    #[arg(long, global = true, env = "LILYPAD_CONFIG", hide_env = true)]
    pub config: Option<PathBuf>,
    /// Diagnostics: `warn` (default), `info`, `debug`, or tracing directives; the interface
    /// writes them to the log file `lilypad doctor` names [env: LILYPAD_LOG]
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
}

impl From<&EngineArgs> for Overrides {
    fn from(a: &EngineArgs) -> Self {
        Self {
            model: a.model.clone(),
            gpu_layers: a.gpu_layers,
            ctx: a.ctx,
            flash_attention: a.flash_attn,
            cache_type: a.cache_type,
            split_mode: a.split_mode,
            kv_unified: match (a.kv_unified, a.no_kv_unified) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            devices: a.device.clone(),
            mtp: a.mtp,
            draft_tokens: a.draft_tokens,
            threads: a.threads,
            max_turn_tokens: a.max_turn_tokens,
            seed: a.seed,
            greedy: a.greedy,
            no_grammar: a.no_grammar,
            harness: a.harness.clone(),
            endpoint: a.endpoint.clone(),
            api_key_env: a.api_key_env.clone(),
            model_name: a.model_name.clone(),
            tokenizer: a.tokenizer.clone(),
            config: a.config.clone(),
            log_level: a.log_level.clone(),
            sandbox: SandboxOverrides::default(),
            repo: None,
        }
    }
}
