//! `lilypad doctor`: what Lilypad would use and whether it will work: the model, GPU offload,
//! the layers that would be offloaded, and the memory the configured context needs.

use crate::config::{ModelSource, Settings};
use crate::engine::llama::{gpu_offload_available, gpu_offload_compiled};
use crate::gguf::GgufFile;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {}

pub fn run(_args: &DoctorArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let e = &settings.engine;
    let mut ok = true;
    println!("Lilypad {}", env!("CARGO_PKG_VERSION"));
    let model = match settings.model_source() {
        ModelSource::Configured(p) => {
            println!("model           {} (configured)", p.display());
            Some(p)
        }
        ModelSource::Discovered(p) => {
            println!(
                "model           {} (found in the models directory)",
                p.display()
            );
            Some(p)
        }
        ModelSource::Missing { searched } => {
            let dir = searched.map_or_else(|| "-".to_string(), |d| d.display().to_string());
            println!("model           none: pass --model F.gguf, set LILYPAD_MODEL, or put a .gguf in {dir}");
            println!("                (convert the BF16 checkpoint with `lilypad convert DIR -o F.gguf`)");
            None
        }
    };
    let compiled = gpu_offload_compiled();
    let features: Vec<&str> = [
        (cfg!(feature = "cuda"), "cuda"),
        (cfg!(feature = "vulkan"), "vulkan"),
        (cfg!(feature = "metal"), "metal"),
    ]
    .iter()
    .filter_map(|(on, n)| on.then_some(*n))
    .collect();
    if compiled {
        let device = if gpu_offload_available() {
            "a GPU device is available"
        } else {
            "but no GPU device was found at run time"
        };
        println!(
            "gpu offload     compiled in ({}), {device}",
            features.join(", ")
        );
    } else {
        println!("gpu offload     not compiled in (CPU build; rebuild with --features cuda, vulkan or metal)");
    }
    let mut layers = None;
    if let Some(path) = &model {
        match GgufFile::open(path) {
            Ok(f) => {
                let arch = f.architecture().unwrap_or("unknown");
                println!(
                    "                {arch}, {} parameters, {} layers",
                    f.parameter_count(),
                    f.arch_u64("block_count").unwrap_or(0)
                );
                if arch != "qwen35" {
                    println!("                note: Lilypad's prompt format targets qwen35 (FrogNano-4B); other architectures may not follow it");
                }
                layers = f.arch_u64("block_count");
                let per_token = crate::engine::llama::kv_bytes_per_token(&f);
                let mib = per_token * u64::from(e.ctx) / (1 << 20);
                println!(
                    "context         {} tokens (attention cache about {mib} MiB)",
                    e.ctx
                );
            }
            Err(err) => {
                ok = false;
                println!("                cannot be used: {err}");
            }
        }
    } else {
        println!("context         {} tokens", e.ctx);
    }
    let offloaded = match (compiled, e.gpu_layers, layers) {
        (false, _, _) => "0 (CPU build)".to_string(),
        (true, Some(n), Some(l)) => format!("{} of {l}", u64::from(n).min(l + 1)),
        (true, Some(n), None) => n.to_string(),
        (true, None, Some(l)) => format!("all {l}"),
        (true, None, None) => "all".to_string(),
    };
    println!("gpu layers      {offloaded}");
    let threads = if e.threads > 0 {
        e.threads.to_string()
    } else {
        format!(
            "{} (all cores)",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        )
    };
    println!("threads         {threads}");
    // Sandboxes: a short probe each, so a missing engine is reported, not waited on.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for kind in [
        crate::sandbox::SandboxKind::Docker,
        crate::sandbox::SandboxKind::Kube,
    ] {
        let spec = crate::sandbox::SandboxSpec {
            kind,
            repo: std::path::PathBuf::from("."),
            docker: Default::default(),
            kube: Default::default(),
        };
        let probe = rt.block_on(async {
            tokio::time::timeout(
                std::time::Duration::from_secs(5),
                crate::sandbox::probe(&spec),
            )
            .await
        });
        let line = match probe {
            Ok(Ok(text)) => text,
            Ok(Err(e)) => format!("{kind:?}: not available: {e}").to_lowercase(),
            Err(_) => format!("{kind:?}: no answer within 5 s").to_lowercase(),
        };
        println!("sandbox         {line}");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
