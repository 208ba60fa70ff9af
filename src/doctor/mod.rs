//! `lilypad doctor`: what Lilypad would use and whether it will work: the model, GPU offload,
//! llama.cpp's devices with their free and total memory, the layers that would be offloaded, the memory the configured context needs, whether the
//! Docker and Kubernetes sandboxes answer, and whether the image a session in the current
//! directory would start from holds what the repository needs (bash, git, its toolchains),
//! and the repository's own config and project instructions a session there would read.
//!
//! Without a model it says which type of FrogNano fits the machine ([`fit`]) and the pull
//! command that gets it.
//!
//! Owns: the checks and the report's wording, written line by line as each check finishes (a
//! sandbox probe can take seconds). Invariant: every probe is bounded by [`PROBE_TIMEOUT`], so
//! a missing engine is reported, not waited on. Does not own: settings (`config`), argument
//! parsing (`cli`), the process exit (the caller maps [`Verdict::exit_code`]).

pub mod fit;

use crate::config::{ModelSource, Settings};
use crate::engine::llama::{
    gpu_offload_available, gpu_offload_compiled, kv_bytes_per_token, recurrent_bytes_per_sequence,
};
use crate::gguf::GgufFile;
use crate::sandbox::SandboxKind;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long each sandbox probe may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How the check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Everything found can be used (a missing model is not a failure: the report says how to
    /// get one).
    Usable,
    /// The configured or discovered model cannot be opened.
    ModelUnusable,
}

impl Verdict {
    /// The process exit code `lilypad doctor` reports.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Usable => 0,
            Self::ModelUnusable => 2,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    /// Writing the report failed.
    #[error(transparent)]
    Write(#[from] std::io::Error),
    /// The runtime for the sandbox probes could not start.
    #[error(transparent)]
    Runtime(std::io::Error),
}

/// Check everything `settings` name and write the report to `out`, line by line.
pub fn run(settings: &Settings, out: &mut dyn Write) -> Result<Verdict, DoctorError> {
    let e = &settings.engine;
    writeln!(out, "Lilypad {}", env!("CARGO_PKG_VERSION"))?;
    let model = model(settings, out)?;
    if model.is_none() {
        recommend(settings, out)?;
    }
    let compiled = gpu_offload_compiled();
    offload(compiled, out)?;
    devices(compiled, &crate::engine::devices(), out)?;
    let on_gpu = compiled && gpu_offload_available() && e.gpu_layers != Some(0);
    let (file, verdict) = match &model {
        Some(path) => model_file(path, e, on_gpu, out)?,
        None => {
            writeln!(out, "context         {} tokens", e.ctx)?;
            (None, Verdict::Usable)
        }
    };
    let layers = file.map(|f| f.layers);
    let offloaded = match (compiled, e.gpu_layers, layers) {
        (false, _, _) => "0 (CPU build)".to_string(),
        (true, Some(n), Some(l)) => format!("{} of {l}", u64::from(n).min(l + 1)),
        (true, Some(n), None) => n.to_string(),
        (true, None, Some(l)) => format!("all {l}"),
        (true, None, None) => "all".to_string(),
    };
    writeln!(out, "gpu layers      {offloaded}")?;
    let devices = if e.devices.is_empty() {
        "all".to_string()
    } else {
        e.devices
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    writeln!(
        out,
        "devices         {devices} (split mode {})",
        e.split_mode
    )?;
    writeln!(out, "flash attention {}", e.flash_attention)?;
    writeln!(
        out,
        "kv cache        {} keys, {} values",
        e.cache_type_k, e.cache_type_v
    )?;
    writeln!(out, "prompt heads    {}", heads_line(e))?;
    writeln!(
        out,
        "mtp drafts      {}",
        mtp_line(
            e.mtp,
            e.drafts_per_step(),
            file.map(|f| f.mtp_layer),
            on_gpu
        )
    )?;
    let threads = if e.threads > 0 {
        e.threads.to_string()
    } else {
        format!(
            "{} (all cores)",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        )
    };
    writeln!(out, "threads         {threads}")?;
    match settings.prompt.harness() {
        Ok(h) => {
            let from = match &h.source {
                crate::prompt::HarnessSource::Builtin => "built in".to_string(),
                crate::prompt::HarnessSource::File(p) => p.display().to_string(),
            };
            writeln!(out, "harness         {} ({from})", h.label())?;
        }
        Err(e) => writeln!(out, "harness         cannot be used: {e}")?,
    }
    let log = crate::config::log_file().map_or_else(
        || "(no state directory)".to_string(),
        |p| p.display().to_string(),
    );
    writeln!(
        out,
        "log             {log} (level {})",
        settings.log.filter()
    )?;
    command_rules(settings, out)?;
    project(settings, out)?;
    sandboxes(settings, out)?;
    Ok(verdict)
}

/// What `--mtp` does with this model: `layer` is whether the file has an MTP layer (`None`
/// without a model), `on_gpu` whether layers go to a GPU device.
/// The warm head: off, or what is saved where (docs/models.md, "The warm head").
fn heads_line(e: &crate::engine::EngineSettings) -> String {
    let dir = match (&e.prefix_cache_dir, e.prefix_cache_mb) {
        (_, 0) => return "off ([engine] prefix_cache_mb = 0)".into(),
        (None, _) => return "off (no cache directory on this platform)".into(),
        (Some(d), _) => d,
    };
    match crate::engine::llama::saved_heads(dir) {
        Ok((0, _)) => format!(
            "none saved yet (up to {} MB in {})",
            e.prefix_cache_mb,
            dir.display()
        ),
        Ok((n, bytes)) => format!(
            "{n} saved, {:.1} MB of {} MB, in {}",
            bytes as f64 / 1e6,
            e.prefix_cache_mb,
            dir.display()
        ),
        Err(err) => format!("cannot read {}: {err}", dir.display()),
    }
}

fn mtp_line(mtp: crate::engine::Mtp, k: u32, layer: Option<bool>, on_gpu: bool) -> String {
    use crate::engine::Mtp;
    let drafts = format!("{k} per step, when a generation decodes alone");
    match (mtp, layer) {
        (Mtp::Off, _) => "off".to_string(),
        (_, Some(false)) if mtp == Mtp::Auto => {
            "auto: none (the model file has no MTP layer)".to_string()
        }
        (_, Some(false)) => "on, but the model file has no MTP layer: loading it will fail".to_string(),
        (Mtp::Auto, _) if !on_gpu => {
            "auto: off on the CPU, where verifying a draft costs about as much as decoding its tokens (--mtp on drafts anyway)".to_string()
        }
        (m, Some(true)) => format!("{m}: {drafts}"),
        (m, None) => format!("{m}: {drafts}, if the model file has an MTP layer"),
    }
}

/// The saved command approval rules, per repository.
fn command_rules(settings: &Settings, out: &mut dyn Write) -> Result<(), DoctorError> {
    let mut files: Vec<String> = settings
        .source
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    files.extend(settings.repo_source.iter().map(|p| p.display().to_string()));
    let from = if files.is_empty() {
        String::new()
    } else {
        format!(" (in {})", files.join(" and "))
    };
    if settings.command_rules.is_empty() {
        writeln!(out, "command rules   none saved{from}")?;
        return Ok(());
    }
    writeln!(
        out,
        "command rules   {} saved{from}: these run without asking",
        settings.command_rules.len()
    )?;
    for r in &settings.command_rules {
        writeln!(
            out,
            "                `{}…` in {}",
            r.prefix,
            r.repo.display()
        )?;
    }
    Ok(())
}

/// The repository's own config file in force, and the project instructions a session in the
/// current directory would read (docs/project.md).
fn project(settings: &Settings, out: &mut dyn Write) -> Result<(), DoctorError> {
    match &settings.repo_source {
        Some(p) => writeln!(out, "repo config     {}", p.display())?,
        None => writeln!(
            out,
            "repo config     none ({} at the repository's root)",
            crate::config::REPO_CONFIG
        )?,
    }
    let Ok(here) = std::env::current_dir() else {
        return Ok(());
    };
    let user = crate::config::config_dir();
    let search = crate::prompt::project_doc::DocSearch {
        user_dir: user.as_deref(),
        workdir: &here,
        fallbacks: &settings.prompt.project_doc_fallback_filenames,
        max_bytes: settings.prompt.project_doc_max_bytes,
    };
    match crate::prompt::project_doc::gather(&search) {
        Ok(None) => writeln!(out, "instructions    none (no AGENTS.md here or above)")?,
        Ok(Some(d)) => {
            let names: Vec<&str> = d.files.iter().map(|f| f.label.as_str()).collect();
            let cut = if d.cut_bytes > 0 {
                format!("; {} bytes past the cap are left out", d.cut_bytes)
            } else {
                String::new()
            };
            writeln!(
                out,
                "instructions    {} ({} bytes in the first message{cut})",
                names.join(", "),
                d.block.len()
            )?;
        }
        Err(e) => writeln!(out, "instructions    cannot be read: {e}")?,
    }
    Ok(())
}

/// The model line(s): where the model comes from, or how to get one.
fn model(settings: &Settings, out: &mut dyn Write) -> Result<Option<PathBuf>, DoctorError> {
    Ok(match settings.model_source() {
        ModelSource::Configured(p) => {
            writeln!(out, "model           {} (configured)", p.display())?;
            Some(p)
        }
        ModelSource::Pulled { name, path } => {
            writeln!(out, "model           {} ({name}, pulled)", path.display())?;
            Some(path)
        }
        ModelSource::NotPulled { why, .. } => {
            writeln!(out, "model           none: {why}")?;
            None
        }
        ModelSource::OnlyPulled { name, path } => {
            writeln!(
                out,
                "model           {} ({name}, the only model pulled)",
                path.display()
            )?;
            Some(path)
        }
        ModelSource::SeveralPulled { names } => {
            writeln!(
                out,
                "model           none chosen: several are pulled ({}); pass --model with one",
                names.join(", ")
            )?;
            None
        }
        ModelSource::Discovered(p) => {
            writeln!(
                out,
                "model           {} (found in the models directory)",
                p.display()
            )?;
            Some(p)
        }
        ModelSource::Missing { searched } => {
            let dir = searched.map_or_else(|| "-".to_string(), |d| d.display().to_string());
            writeln!(out, "model           none: pull one (the next line says which), pass --model F.gguf or ORG/NAME[:TAG], set LILYPAD_MODEL, or put a .gguf in {dir}")?;
            None
        }
    })
}

/// Without a model: the type of FrogNano that fits this machine, and the pull that gets it.
fn recommend(settings: &Settings, out: &mut dyn Write) -> Result<(), DoctorError> {
    let fit = fit::recommend(&fit::Machine::detect());
    writeln!(out, "fits here       FrogNano {}: {}", fit.ty, fit.why)?;
    writeln!(
        out,
        "                get it: lilypad pull {} --type {}",
        settings.hub.default_repo(),
        fit.ty
    )?;
    Ok(())
}

/// Whether GPU offload is compiled in, with which backends, and whether a device is there.
fn offload(compiled: bool, out: &mut dyn Write) -> Result<(), DoctorError> {
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
        writeln!(
            out,
            "gpu offload     compiled in ({}), {device}",
            features.join(", ")
        )?;
    } else {
        writeln!(out, "gpu offload     not compiled in (CPU build; rebuild with --features cuda, vulkan or metal)")?;
    }
    Ok(())
}

/// One line per llama.cpp device (name, type, free and total memory), then, when none is a
/// GPU, that everything runs in host memory and why.
fn devices(
    compiled: bool,
    devices: &[crate::engine::BackendDevice],
    out: &mut dyn Write,
) -> Result<(), DoctorError> {
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30));
    for d in devices {
        writeln!(
            out,
            "{:<16}{} ({}, {}): {} free of {}",
            format!("device {}", d.index),
            d.name,
            d.kind,
            d.description,
            gib(d.memory_free),
            gib(d.memory_total)
        )?;
    }
    if devices.is_empty() {
        writeln!(out, "device          none reported by llama.cpp")?;
    }
    if !devices.iter().any(|d| d.is_gpu()) {
        let why = if compiled {
            "no GPU device was found at run time"
        } else {
            "this is a CPU-only build"
        };
        writeln!(
            out,
            "                CPU only ({why}): the weights and the caches are in host memory"
        )?;
    }
    Ok(())
}

/// What `doctor` learnt from a readable model file.
#[derive(Debug, Clone, Copy)]
struct FileFacts {
    layers: u64,
    mtp_layer: bool,
}

/// What the model file holds and what its context costs (with `on_gpu`: whether layers go to
/// a GPU device, which decides whether MTP drafting keeps states); its facts when it can be
/// read, and whether it can be used.
fn model_file(
    path: &Path,
    e: &crate::engine::EngineSettings,
    on_gpu: bool,
    out: &mut dyn Write,
) -> Result<(Option<FileFacts>, Verdict), DoctorError> {
    let (ctx, sequences) = (e.ctx, e.sequences.max(1));
    let f = match GgufFile::open(path) {
        Ok(f) => f,
        Err(err) => {
            writeln!(out, "                cannot be used: {err}")?;
            return Ok((None, Verdict::ModelUnusable));
        }
    };
    let arch = f.architecture().unwrap_or("unknown");
    writeln!(
        out,
        "                {arch}, {} parameters, {} layers",
        f.parameter_count(),
        f.arch_u64("block_count").unwrap_or(0)
    )?;
    if arch != "qwen35" {
        writeln!(out, "                note: Lilypad's prompt format targets qwen35 (FrogNano-4B); other architectures may not follow it")?;
    }
    let mib = kv_bytes_per_token(&f) * u64::from(ctx) / (1 << 20);
    if e.kv_unified {
        writeln!(
            out,
            "context         {ctx} tokens (attention cache about {mib} MiB, shared by the sequences)"
        )?;
    } else {
        writeln!(
            out,
            "context         {ctx} tokens per sequence (an attention cache each, about {mib} MiB, {} MiB in all; --no-kv-unified)",
            mib * u64::from(sequences)
        )?;
    }
    let each = recurrent_bytes_per_sequence(&f);
    // With MTP drafting, each sequence keeps a state per draft token too, to cut rejected
    // drafts back.
    let mtp_layer = f.arch_u64("nextn_predict_layers").unwrap_or(0) > 0;
    let states = if e.mtp.drafts(mtp_layer, on_gpu) {
        1 + e.drafts_per_step()
    } else {
        1
    };
    if each > 0 {
        let kept = if states > 1 {
            format!(", x{states} kept for MTP drafts")
        } else {
            String::new()
        };
        writeln!(
            out,
            "sequences       {sequences} decoded together (recurrent state about {} MiB each{kept}, {} MiB in all)",
            each >> 20,
            (each * u64::from(sequences) * u64::from(states)) >> 20
        )?;
    }
    let facts = f
        .arch_u64("block_count")
        .map(|layers| FileFacts { layers, mtp_layer });
    Ok((facts, Verdict::Usable))
}

/// One line per sandbox kind: what it reports, or why it is not available; then
/// whether the image of the sandbox a session here would use holds what this repository needs.
fn sandboxes(settings: &Settings, out: &mut dyn Write) -> Result<(), DoctorError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(DoctorError::Runtime)?;
    let repo = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    for kind in [SandboxKind::Host, SandboxKind::Docker, SandboxKind::Kube] {
        let spec = settings.sandbox.spec(&repo, Some(kind), kind);
        let probe = rt.block_on(async {
            tokio::time::timeout(PROBE_TIMEOUT, crate::sandbox::probe(&spec)).await
        });
        let line = match probe {
            Ok(Ok(text)) => text,
            Ok(Err(e)) => format!("{kind:?}: not available: {e}").to_lowercase(),
            Err(_) => {
                format!("{kind:?}: no answer within {} s", PROBE_TIMEOUT.as_secs()).to_lowercase()
            }
        };
        writeln!(out, "sandbox         {line}")?;
    }
    image_check(settings, &repo, &rt, out)
}

/// How long the image check may take (it starts a container or a pod).
pub const IMAGE_CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// The image line: which image a session in `repo` starts from and what it lacks.
fn image_check(
    settings: &Settings,
    repo: &Path,
    rt: &tokio::runtime::Runtime,
    out: &mut dyn Write,
) -> Result<(), DoctorError> {
    use crate::sandbox::image::check;
    let spec = settings.sandbox.spec(repo, None, SandboxKind::Docker);
    if spec.kind() == SandboxKind::Host {
        return Ok(());
    }
    let report = rt.block_on(async {
        tokio::time::timeout(IMAGE_CHECK_TIMEOUT, check::check_spec(&spec)).await
    });
    let kind = spec.kind();
    match report {
        Ok(Ok(r)) => {
            writeln!(out, "sandbox image   {kind}: {}", r.image)?;
            match r.missing {
                None => {}
                Some(m) => match check::advice(&m, &spec.image_label()) {
                    None => writeln!(out, "                has what {} needs", repo.display())?,
                    Some(advice) => writeln!(out, "                missing: {advice}")?,
                },
            }
        }
        Ok(Err(e)) => writeln!(out, "sandbox image   {kind}: not checked: {e}")?,
        Err(_) => writeln!(
            out,
            "sandbox image   {kind}: not checked within {} s",
            IMAGE_CHECK_TIMEOUT.as_secs()
        )?,
    }
    Ok(())
}
