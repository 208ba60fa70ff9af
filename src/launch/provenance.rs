//! What a session is reproduced from: the model's identity (file name, size and SHA-256, or
//! endpoint and served model), the sampling and seed, the sandbox image, and the SHA-256 of
//! the harness text. Owns computing these facts; recording them is the session header's job
//! (`crate::session::Provenance`), and which preset a run came from is its caller's.

use super::EngineChoice;
use crate::agent::AgentConfig;
use crate::prompt::ToolSpec;
use crate::sandbox::SandboxSpec;
use crate::session::{ModelIdentity, Provenance};
use std::io::Read;
use std::path::Path;

/// SHA-256 (lowercase hex) of the harness text: the system prompt, a newline, and the tool
/// schemas as compact JSON (an array in the order the model reads them).
pub fn harness_sha256(system_prompt: &str, tools: &[ToolSpec]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(system_prompt.as_bytes());
    ctx.update(b"\n");
    ctx.update(serde_json::to_string(tools).unwrap_or_default().as_bytes());
    hex(ctx.finish().as_ref())
}

/// SHA-256 (lowercase hex) of a file's bytes, read in 1 MiB pieces (a model file of many
/// gigabytes is never held in memory).
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(hex(ctx.finish().as_ref()))
}

/// Write the numbers of `v` that hold an `f32` (sampling parameters) as their shortest
/// decimal form, `0.6` rather than `0.6000000238418579`.
pub fn tidy_f32(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            if let Some(x) = n.as_f64() {
                let short = x as f32;
                if f64::from(short) == x {
                    if let Some(t) = short
                        .to_string()
                        .parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                    {
                        *n = t;
                    }
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(tidy_f32),
        serde_json::Value::Object(o) => o.values_mut().for_each(tidy_f32),
        _ => {}
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The model behind `engine`: file name and size (and its SHA-256 when `hash`), the script's
/// path, or the endpoint with `served` (the model name the server serves, when known).
pub fn model_identity(engine: &EngineChoice, hash: bool, served: Option<String>) -> ModelIdentity {
    match engine {
        EngineChoice::Llama(path) | EngineChoice::Script(path) => {
            let kind = if matches!(engine, EngineChoice::Llama(_)) {
                "llama"
            } else {
                "script"
            };
            let file = match engine {
                EngineChoice::Llama(_) => path.file_name().map(|n| n.to_string_lossy().into()),
                _ => Some(path.display().to_string()),
            };
            let size = std::fs::metadata(path).ok().map(|m| m.len());
            let sha256 = if hash {
                match sha256_file(path) {
                    Ok(h) => Some(h),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "the model file could not be hashed");
                        None
                    }
                }
            } else {
                None
            };
            ModelIdentity {
                kind: kind.into(),
                file,
                size,
                sha256,
                ..ModelIdentity::default()
            }
        }
        EngineChoice::Remote(url) => ModelIdentity {
            kind: "remote".into(),
            endpoint: Some(url.clone()),
            served_model: served,
            ..ModelIdentity::default()
        },
    }
}

/// The provenance known when a session starts from `config` on `spec` with `engine`: the
/// model without its hash (computing one is the caller's choice: it reads the whole file).
pub fn basic(config: &AgentConfig, spec: &SandboxSpec, engine: &EngineChoice) -> Provenance {
    let sampling = serde_json::to_value(&config.sampling).ok().map(|mut v| {
        // The seed has its own field.
        if let Some(o) = v.as_object_mut() {
            o.remove("seed");
        }
        tidy_f32(&mut v);
        v
    });
    Provenance {
        lilypad: env!("CARGO_PKG_VERSION").to_string(),
        model: Some(model_identity(engine, false, None)),
        sampling,
        seed: Some(config.sampling.seed),
        image: Some(spec.image_label()),
        // Known once the sandbox runs (`crate::sandbox::Sandbox::image_digest`).
        image_digest: None,
        harness_sha256: Some(harness_sha256(&config.system_prompt, &config.tools)),
        preset: None,
        attempt: None,
        limits: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_hash_is_the_sha256_of_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        // The FIPS 180-2 test vector for "abc".
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let id = model_identity(&EngineChoice::Llama(p.clone()), true, None);
        assert_eq!((id.size, id.file.as_deref()), (Some(3), Some("f")));
        assert!(id.sha256.is_some());
    }

    #[test]
    fn f32_numbers_read_as_written() {
        let mut v = serde_json::json!({"t": 0.6f32, "n": [0.95f32], "k": 20, "x": 0.1f64});
        tidy_f32(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"t": 0.6, "n": [0.95], "k": 20, "x": 0.1})
        );
    }

    #[test]
    fn harness_hash_changes_with_the_prompt_and_the_tools() {
        let a = harness_sha256("sys", &[]);
        assert_eq!(a.len(), 64);
        assert_ne!(a, harness_sha256("sys2", &[]));
        let tool = ToolSpec {
            name: "Read".into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        };
        assert_ne!(a, harness_sha256("sys", &[tool]));
    }
}
