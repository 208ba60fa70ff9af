//! The process-wide llama.cpp backend. llama.cpp must be initialised exactly once per process,
//! so every engine shares this one; its log output is routed to `tracing` (hidden unless
//! `LILYPAD_LOG` asks for it) instead of being printed over the interface. Also the devices it
//! reports (for `lilypad doctor`).

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
        .map_err(|e| EngineError::Backend(Box::new(e.clone())))
}

/// Whether this build can offload layers to a GPU.
pub fn gpu_offload_compiled() -> bool {
    cfg!(any(feature = "cuda", feature = "vulkan", feature = "metal"))
}

/// Whether the backend reports a usable GPU device at run time.
pub fn gpu_offload_available() -> bool {
    get().map(|b| b.supports_gpu_offload()).unwrap_or(false)
}

/// One of llama.cpp's backend devices, as its backend reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendDevice {
    /// The index `--device` takes.
    pub index: usize,
    /// llama.cpp's name for it (`CPU`, `CUDA0`, `Vulkan0`).
    pub name: String,
    /// What it is (the processor's or the card's name).
    pub description: String,
    /// The backend it belongs to (`CPU`, `CUDA`, `Vulkan`, `Metal`).
    pub backend: String,
    /// `cpu`, `gpu`, `integrated gpu`, `accelerator` or `unknown`.
    pub kind: &'static str,
    /// Bytes free and in all, as the backend reports them now.
    pub memory_free: u64,
    pub memory_total: u64,
}

impl BackendDevice {
    /// Whether layers can be offloaded to it (a GPU or an integrated one).
    pub fn is_gpu(&self) -> bool {
        matches!(self.kind, "gpu" | "integrated gpu")
    }
}

/// Every device of every backend this build has (the backend initialised first); empty when
/// it cannot start.
pub fn devices() -> Vec<BackendDevice> {
    use llama_cpp_2::LlamaBackendDeviceType as T;
    if get().is_err() {
        return Vec::new();
    }
    llama_cpp_2::list_llama_ggml_backend_devices()
        .into_iter()
        .map(|d| BackendDevice {
            index: d.index,
            name: d.name,
            description: d.description,
            backend: d.backend,
            kind: match d.device_type {
                T::Cpu => "cpu",
                T::Gpu => "gpu",
                T::IntegratedGpu => "integrated gpu",
                T::Accelerator => "accelerator",
                T::Unknown => "unknown",
            },
            memory_free: d.memory_free as u64,
            memory_total: d.memory_total as u64,
        })
        .collect()
}
