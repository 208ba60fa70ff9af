//! Shared set-up for the model tests: the tiny test model, written once per test binary, and
//! a lock that keeps model tests serial across all of the binary's modules (they use one
//! thread each and must not contend).
#![allow(dead_code)]

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
