//! The Hugging Face Hub: pulling a GGUF repository's file, or a safetensors checkpoint's
//! files, into the cache that the official `huggingface_hub` client, `huggingface-cli` and
//! llama.cpp share; finding a pulled file by name with no network call (a checkpoint's
//! conversion in Lilypad's own store, [`Store`]); listing and removing what is pulled.
//!
//! A small client over `reqwest` and `ring` rather than the `hf-hub` crate: that crate reads
//! none of the Hub's environment variables (`HF_ENDPOINT`, `HF_TOKEN`, `HF_HUB_CACHE`,
//! `HF_HUB_OFFLINE`), does not resume a cut download and checks no hash. The HTTP calls, header
//! names and cache layout follow `huggingface_hub` (see docs/models.md).
//!
//! Two pulls of one file wait for each other on `huggingface_hub`'s lock file for it.
//!
//! Owns: model names (`ORG/NAME[:TAG]`), choosing a repository's file by tag (or a
//! checkpoint's files), the cache layout and the store's, the Hub's HTTP API and downloads. Does not own: reading the environment
//! (`crate::config` fills [`HubSettings`]), printing progress (`crate::cli` does), converting
//! safetensors checkpoints (`crate::convert`).

mod api;
mod cache;
mod download;
mod error;
mod local;
mod name;
mod pull;
mod remove;
mod select;
mod settings;
mod store;

pub use cache::{Cache, PulledModel};
pub use error::HubError;
pub use local::{find, only, Only};
pub use name::ModelName;
pub use pull::{fetch, plan, Plan, Progress, RepoKind};
pub use remove::{remove, Removed};
pub use select::choose;
pub use settings::{HubSettings, FROGNANO_REPO};
pub use store::Store;
