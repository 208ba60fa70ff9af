//! Image tasks' sandbox cost, the two ways of making the workspace from an image's repository:
//! the image's own repository taken as it is ([`crate::sandbox::workspace::Workspace::adopt`],
//! what batches do) against a copy by git's rules under a fresh baseline (what they did
//! before), on Docker and on Kubernetes, as attempts per hour. The image is built here: a
//! repository of SWE-bench's size (5,000 files in a git history) with a 200 MB build tree git
//! ignores (`--quick`: 500 files, 20 MB).
//!
//! One attempt is what differs between the two ways, without a model: the repository copied
//! out of the image, the workspace made, the sandbox started, two turn records (one with an
//! edit), the session patch, the sandbox closed.
//!
//! Owns: the repository and image it builds, and the timing. Does not own: the sandboxes or the
//! workspace. A sandbox kind whose engine does not answer is left out with a note.

use super::{BenchError, Figure, Report};
use crate::sandbox::workspace::{scratch_dir, Checkout};
use crate::sandbox::{KindSettings, SandboxError, SandboxKind, SandboxSettings, SandboxSpec};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const WORKDIR: &str = "/testbed";

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> BenchError {
    super::suite::io(what)
}

/// Fill `dir` with the repository: `files` small Python files committed in git, and a
/// `build/` tree of `build_mb` incompressible megabytes that git ignores.
fn write_repository(dir: &Path, files: usize, build_mb: usize) -> Result<(), BenchError> {
    for i in 0..files {
        let path = dir.join(format!("pkg/m{:02}/f{i:04}.py", i % 50));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io("writing the bench repository"))?;
        }
        std::fs::write(&path, format!("def f{i}():\n    return {i}\n"))
            .map_err(io("writing the bench repository"))?;
    }
    std::fs::write(dir.join(".gitignore"), "build/\n").map_err(io("writing .gitignore"))?;
    let git = |args: &[&str]| -> Result<(), BenchError> {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
            .args(args)
            .output()
            .map_err(io("running git"))?;
        match out.status.success() {
            true => Ok(()),
            false => Err(BenchError::Io {
                what: "making the bench repository",
                source: std::io::Error::other(String::from_utf8_lossy(&out.stderr).into_owned()),
            }),
        }
    };
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["commit", "-qm", "bench repository"])?;
    // xorshift: data no layer compression shrinks.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut block = vec![0u8; 1 << 20];
    for i in 0..build_mb {
        for chunk in block.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
        let path = dir.join(format!("build/lib/part{:02}/blob{i:04}.so", i % 10));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io("writing the build tree"))?;
        }
        std::fs::write(path, &block).map_err(io("writing the build tree"))?;
    }
    Ok(())
}

/// `docker build` of the bench image failed (no engine, no base image): image repositories
/// are left out, with this as the note.
#[derive(Debug, thiserror::Error)]
#[error("docker build of {tag} failed: {stderr}")]
struct BuildFailed {
    tag: String,
    /// What `docker build` wrote to its standard error.
    stderr: String,
}

/// Build the bench image from `base` with the repository at [`WORKDIR`].
fn build_image(ctx: &Path, base: &str, tag: &str) -> Result<Result<(), BuildFailed>, BenchError> {
    std::fs::write(
        ctx.join("Dockerfile"),
        format!("FROM {base}\nCOPY testbed {WORKDIR}\nWORKDIR {WORKDIR}\n"),
    )
    .map_err(io("writing the Dockerfile"))?;
    let out = Command::new("docker")
        .args(["build", "-q", "-t", tag])
        .arg(ctx)
        .output()
        .map_err(io("running docker build"))?;
    Ok(match out.status.success() {
        true => Ok(()),
        false => Err(BuildFailed {
            tag: tag.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }),
    })
}

/// One attempt's sandbox work (see the module docs); its seconds.
async fn attempt(
    image: &str,
    kind: SandboxKind,
    in_place: bool,
    s: &SandboxSettings,
) -> Result<f64, SandboxError> {
    let started = Instant::now();
    let tmp = scratch_dir()?;
    let repo = crate::sandbox::image::extract::extract_dir(image, WORKDIR, tmp.path()).await?;
    let mut settings = s.clone();
    settings.image = Some(image.to_string());
    settings.workdir = Some(WORKDIR.to_string());
    settings.dockerfile = None;
    settings.devcontainer = false;
    settings.repo_as_is = in_place;
    let mut spec: SandboxSpec = settings.spec(&repo, Some(kind), kind);
    if let KindSettings::Kube(k) = &mut spec.settings {
        k.image_pull_policy = "Never".into();
    }
    let sandbox = crate::sandbox::open(&spec).await?;
    let checkout = Checkout::of(sandbox.as_ref());
    let run = async {
        checkout.record_turn(1).await?;
        sandbox
            .write(&format!("{WORKDIR}/pkg/m00/f0000.py"), b"changed\n")
            .await?;
        checkout.record_turn(2).await?;
        checkout.export_patch().await
    };
    let patch = run.await;
    sandbox.close().await?;
    if patch?.is_empty() {
        return Err(SandboxError::io(
            "taking the patch",
            "the bench repository",
            std::io::Error::other("the edit is missing from the patch"),
        ));
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Measure (see the module docs), `runs` attempts of each way on each sandbox kind.
pub fn run(quick: bool, s: &SandboxSettings, report: &mut Report) -> Result<(), BenchError> {
    let (files, build_mb, runs) = if quick { (500, 20, 2) } else { (5000, 200, 3) };
    let dir = tempfile::tempdir().map_err(io("creating a temporary directory"))?;
    let ctx = dir.path().join("ctx");
    write_repository(&ctx.join("testbed"), files, build_mb)?;
    // A Debian base, as SWE-bench's images are (GNU tar: a pod's downloads can leave the
    // ignored build tree behind).
    let base = s
        .image
        .clone()
        .unwrap_or_else(|| "lilypad-sandbox:debian".into());
    let tag = format!("lilypad-bench-image-repo:{}", std::process::id());
    eprintln!("bench batch: building an image with {files} files and {build_mb} MB ignored...");
    if let Err(why) = build_image(&ctx, &base, &tag)? {
        report
            .notes
            .push(format!("bench batch left out image repositories: {why}"));
        return Ok(());
    }
    let rt = tokio::runtime::Runtime::new().map_err(io("starting a tokio runtime"))?;
    for kind in [SandboxKind::Docker, SandboxKind::Kube] {
        let mut mean = [0.0f64; 2];
        let mut failed: Option<SandboxError> = None;
        'ways: for (w, in_place) in [(0, false), (1, true)] {
            let mut total = 0.0;
            for _ in 0..runs {
                match rt.block_on(attempt(&tag, kind, in_place, s)) {
                    Ok(secs) => total += secs,
                    Err(e) => {
                        failed = Some(e);
                        break 'ways;
                    }
                }
            }
            mean[w] = total / runs as f64;
        }
        if let Some(why) = failed {
            report.notes.push(format!(
                "bench batch left out image repositories on {kind:?}: {why}"
            ));
            continue;
        }
        let per_hour = |secs: f64| 3600.0 / secs.max(1e-9);
        report.figures.push(Figure {
            bench: "batch".into(),
            name: format!(
                "image task sandbox, {files} files + {build_mb} MB ignored, {}: own repository",
                format!("{kind:?}").to_lowercase()
            ),
            value: per_hour(mean[1]),
            unit: "attempts/h".into(),
            baseline: "a copy by git's rules (before)".into(),
            baseline_value: per_hour(mean[0]),
            ratio: mean[0] / mean[1].max(1e-9),
            better: "higher".into(),
            target: Some(1.0),
        });
    }
    let _ = Command::new("docker").args(["rmi", "-f", &tag]).output();
    Ok(())
}
