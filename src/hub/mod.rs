//! The Hugging Face Hub: pulling a GGUF repository's file into the cache that the official
//! `huggingface_hub` client, `huggingface-cli` and llama.cpp share, finding a pulled file by
//! name with no network call, and listing what is pulled.
//!
//! A small client over `reqwest` and `ring` rather than the `hf-hub` crate: that crate reads
//! none of the Hub's environment variables (`HF_ENDPOINT`, `HF_TOKEN`, `HF_HUB_CACHE`,
//! `HF_HUB_OFFLINE`), does not resume a cut download and checks no hash. The HTTP calls, header
//! names and cache layout follow `huggingface_hub` (see docs/models.md).
//!
//! Two pulls of one file wait for each other on `huggingface_hub`'s lock file for it.
//!
//! Owns: model names (`ORG/NAME[:TAG]`), choosing a repository's file by tag, the cache
//! layout, the Hub's HTTP API and downloads. Does not own: reading the environment
//! (`crate::config` fills [`HubSettings`]), printing progress (`crate::cli` does), converting
//! safetensors checkpoints (`crate::convert`).

mod api;
mod cache;
mod download;
mod error;
mod name;
mod pull;
mod select;
mod settings;

pub use cache::{Cache, PulledModel};
pub use error::HubError;
pub use name::ModelName;
pub use pull::{find, pull, Progress, Pulled};
pub use select::choose;
pub use settings::HubSettings;
