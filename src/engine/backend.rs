//! The process-wide llama.cpp backend. llama.cpp must be initialised exactly once per process,
//! so every engine shares this one; its log output is routed to `tracing` (hidden unless
//! `LILYPAD_LOG` asks for it) instead of being printed over the interface.

use super::EngineError;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::LlamaCppError;
use std::sync::{Arc, OnceLock};

static BACKEND: OnceLock<Result<LlamaBackend, Arc<LlamaCppError>>> = OnceLock::new();

/// The shared backend, initialised on first use.
pub(super) fn get() -> Result<&'static LlamaBackend, EngineError> {
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(Arc::new)
        })
        .as_ref()
        .map_err(|e| EngineError::Backend(e.clone()))
}

/// Whether this build can offload layers to a GPU.
pub fn gpu_offload_compiled() -> bool {
    cfg!(any(feature = "cuda", feature = "vulkan", feature = "metal"))
}

/// Whether the backend reports a usable GPU device at run time.
pub fn gpu_offload_available() -> bool {
    get().map(|b| b.supports_gpu_offload()).unwrap_or(false)
}
