//! `lilypad demo`: a scripted session on a small bundled repository, so a newcomer sees the
//! whole flow (reasoning, reads, an edit, a multi-hunk edit, a command, a final answer, the
//! session patch) with no model and no Docker: the scripted engine plays
//! `assets/demo/script.txt` and the host sandbox works on a copy of the repository.

use super::interactive;
use crate::config::Settings;
use crate::engine::{ScriptEngine, TemplatedModel};
use crate::launch::interface::{ModelPlan, Plan};
use crate::launch::{Beginning, EngineChoice, SessionOptions};
use crate::prompt::Renderer;
use crate::sandbox::SandboxKind;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// The bundled repository, file by file.
const DEMO_FILES: &[(&str, &str)] = &[
    (
        ".gitignore",
        include_str!("../../assets/demo/repo/.gitignore"),
    ),
    (
        "README.md",
        include_str!("../../assets/demo/repo/README.md"),
    ),
    (
        "inventory.py",
        include_str!("../../assets/demo/repo/inventory.py"),
    ),
    (
        "test_inventory.py",
        include_str!("../../assets/demo/repo/test_inventory.py"),
    ),
];
const DEMO_SCRIPT: &str = include_str!("../../assets/demo/script.txt");
/// The task the demo starts with.
pub(super) const DEMO_TASK: &str =
    "The test test_low_stock_includes_threshold fails. Find out why and fix it.";

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Where to create the demo repository (must be empty or missing; default: a new
    /// temporary folder, kept afterwards so you can look at the result)
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Directory for the session log (default: the platform data dir's lilypad/sessions)
    #[arg(long, env = "LILYPAD_SESSION_DIR")]
    pub session_dir: Option<PathBuf>,
    /// Milliseconds between streamed pieces of model output (0: instant)
    #[arg(long, default_value_t = 8)]
    pub delay_ms: u64,
    /// Pause after every model turn
    #[arg(long)]
    pub step: bool,
    /// Colour theme: dark, light, or a theme file
    #[arg(long, env = "LILYPAD_THEME")]
    pub theme: Option<String>,
}

pub(super) fn run(args: &DemoArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let repo = match &args.repo {
        Some(r) => r.clone(),
        None => tempfile::Builder::new()
            .prefix("lilypad-demo-")
            .tempdir()
            .context("creating a folder for the demo repository")?
            .keep(),
    };
    create_repo(&repo)?;
    let repo = std::fs::canonicalize(&repo).unwrap_or(repo);
    let path = Path::new("assets/demo/script.txt");
    let mut engine = ScriptEngine::from_text(DEMO_SCRIPT, path)?;
    engine.piece_delay = Duration::from_millis(args.delay_ms);
    engine.name = "demo".into();
    let model = TemplatedModel::new(Arc::new(engine), Renderer::builtin(&settings.prompt)?);
    let opts = SessionOptions {
        repo: Some(repo.clone()),
        sandbox: crate::launch::SandboxOptions {
            kind: Some(SandboxKind::Host),
            uncontained: false,
        },
        allow_host: false,
        approve: None,
        max_steps: None,
        wall_time: None,
        step: args.step,
        engine: None,
        session_dir: args.session_dir.clone(),
        // The bundled repository is not the person's project: no instructions of theirs.
        no_project_doc: true,
    };
    let spec = crate::launch::sandbox_spec(settings, &opts, &repo, SandboxKind::Host);
    let mut tui = interactive::tui_options(
        settings,
        &repo,
        Some(DEMO_TASK.to_string()),
        args.theme.as_deref(),
        args.step,
        Vec::new(),
    )?;
    // The demo's messages stay out of the person's input history.
    tui.history = None;
    let plan = Plan {
        settings: settings.clone(),
        opts,
        model: ModelPlan::Ready(Arc::new(model)),
        engine_label: EngineChoice::Script(PathBuf::from("(bundled demo script)")),
        spec,
        beginning: Beginning::New {
            task: DEMO_TASK.to_string(),
        },
        check: None,
        tui,
    };
    interactive::open(plan)?;
    eprintln!("demo repository: {}", repo.display());
    Ok(ExitCode::SUCCESS)
}

/// Write the bundled repository into `dir` (missing or empty) and commit it when git is
/// there, so `git diff` shows what the session changed once the patch is applied.
fn create_repo(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        let mut entries =
            std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
        if entries.next().is_some() {
            anyhow::bail!(
                "{} is not empty: give --repo a new or empty folder",
                dir.display()
            );
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, text) in DEMO_FILES {
        std::fs::write(dir.join(name), text).with_context(|| format!("writing {name}"))?;
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let _ = git(&["init", "-q"])
        && git(&["add", "-A"])
        && git(&[
            "-c",
            "user.name=Lilypad demo",
            "-c",
            "user.email=demo@lilypad.invalid",
            "commit",
            "-q",
            "-m",
            "corner-shop: the bundled demo repository",
        ]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_parses_and_the_repo_is_written() {
        let turns =
            crate::engine::script::parse_script(DEMO_SCRIPT, Path::new("script.txt")).unwrap();
        assert_eq!(turns.len(), 6);
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("shop");
        create_repo(&repo).unwrap();
        assert!(repo.join("inventory.py").is_file());
        assert!(create_repo(&repo).is_err(), "a non-empty folder is refused");
    }
}
