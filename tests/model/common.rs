//! Shared set-up for the model tests: the tiny test model, written once per test binary, and
//! a lock that keeps model tests serial across all of the binary's modules (they use one
//! thread each and must not contend).

use lilypad::config::EngineSettings;
use lilypad::engine::EngineHandle;
use lilypad::testmodel::{self, TinySpec};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

static MODEL: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
static SERIAL: Mutex<()> = Mutex::new(());

/// The synthetic-vocabulary tiny model, generated on first use.
pub fn tiny_model() -> &'static Path {
    &MODEL
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("tiny.gguf");
            testmodel::write(&path, &TinySpec::synthetic()).expect("write tiny model");
            (dir, path)
        })
        .1
}

/// Hold this while a test uses an engine.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Settings for tests: one thread, small batches and context.
pub fn test_settings() -> EngineSettings {
    EngineSettings {
        ctx: 4096,
        threads: 1,
        batch: 128,
        ubatch: 64,
        ..EngineSettings::default()
    }
}

pub fn load(settings: &EngineSettings) -> EngineHandle {
    EngineHandle::load(tiny_model(), settings, |_| {}).expect("load tiny model")
}

/// A prompt in the model's chat format.
pub fn chat(system: &str, user: &str) -> String {
    format!(
        "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n<think>\n"
    )
}

/// Logits that must be those of another run: bit for bit on the CPU; on a GPU device
/// (scripts/test-vulkan.sh), where the batch shape changes the order of float operations and
/// activations are f16, within 0.1 and with the same most likely token.
pub fn assert_same_logits(got: &[f32], want: &[f32]) {
    if !lilypad::engine::llama::gpu_offload_available() {
        assert_eq!(got, want);
        return;
    }
    assert_eq!(got.len(), want.len());
    let worst = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(worst < 0.1, "largest logit difference {worst}");
    let top = |v: &[f32]| {
        v.iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i)
    };
    assert_eq!(top(got), top(want), "the most likely token");
}
