//! PatchEval Verified as a task source, run and verified as Leaf runs it: PatchEval's dataset
//! file (`patcheval/datasets/patcheval_verified.json`, a JSON array of CVEs with `cve_id`,
//! `image_url`, `repo`, `cve_description`) read as one task per CVE.
//!
//! The agent's sandbox is the task's image. Its repository is found under `/workspace` as Leaf
//! finds it ([`find_repo`]): `/workspace/NAME`, `/workspace/name` (NAME the stem of `repo`'s
//! URL path) or `/workspace` itself, whichever holds a `.git` directory first, else the one git
//! repository two or three levels down. What the verifier reads is kept from the agent: with
//! the repository at `/workspace`, `fix.patch` is removed; below it, the rest of `/workspace` is
//! hidden under an empty directory. No network, 1 CPU, 4 GB, 3,600 s for the agent (the run's
//! own wall time, when it sets one, wins, as Leaf's `max_total_time_sec` does).
//!
//! Verification ([`verify`]) is in a fresh sandbox from the same image, never the agent's: the
//! patch (the agent's change from the repository's `HEAD`) is written to `/workspace/fix.patch`
//! and `bash fix-run.sh` runs in `/workspace` for up to 600 s, without the network; exit 0 is a
//! reward of 1.0, anything else 0.0.
//!
//! The task text wraps `cve_description` in Leaf's instruction, read from the user's copy of
//! Leaf (`frognano/datasets/patch_eval_verified.py`, its `_instruction`'s string literals, never
//! executed) when `--leaf` names one; otherwise in a plain wording of our own. Each task says
//! which ([`PatchEvalTask::instruction_from`]).
//!
//! Owns: reading the dataset and Leaf's instruction, an attempt's preparation
//! ([`PatchEvalTask::prepare`]: finding the repository, the agent's sandbox settings), and the
//! verification with its reward ([`verify`]). Does not own: running the agent (`super::batch`)
//! or scoring (`super::leaf`).

use super::kind::{BatchTask, PrepareError, TaskKind};
use super::sources::{SourceError, TaskRepo};
use super::verify::Verified;
use crate::config::Settings;
use crate::launch::check::{run_check, CheckSpec};
use crate::launch::SessionOptions;
use crate::sandbox::settings::ByteSize;
use crate::sandbox::{SandboxError, SandboxKind, SandboxSettings};
use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

/// What went wrong reading Leaf's instruction or finding a task's repository.
#[derive(Debug, Error)]
pub enum PatchEvalError {
    #[error("no patch_eval_verified.py in {}", .0.display())]
    NoLeafFile(PathBuf),
    #[error("reading {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {what}", path.display())]
    LeafShape { path: PathBuf, what: String },
    #[error("no git repository for {0:?} under {WORKSPACE}")]
    NoRepository(String),
    #[error("more than one git repository under {WORKSPACE}, none named {0:?}")]
    SeveralRepositories(String),
    #[error("hiding {}: {source}", path.display())]
    Hide {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where PatchEval's images keep the repository and the verifier's files.
pub const WORKSPACE: &str = "/workspace";
/// The agent's wall time when the run sets none.
pub const AGENT_SECS: u64 = 3600;
/// The verifier's time limit.
pub const VERIFIER_SECS: u64 = 600;
/// Leaf's resources for a PatchEval task.
pub const CPUS: f64 = 1.0;
pub const MEMORY_BYTES: u64 = 4 << 30;

/// One CVE of the dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchEvalTask {
    /// The task's image (`image_url`, or its pinned reference under `--image-lock`).
    pub image: String,
    /// The repository's name: the stem of the dataset's `repo` URL path.
    pub repo_name: String,
    /// `leaf` (Leaf's instruction, from the user's copy) or `lilypad` (our own wording).
    pub instruction_from: &'static str,
}

/// True when `text` is PatchEval's dataset: a JSON array whose entries have `cve_id`.
pub fn is_dataset(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('[')
        && serde_json::from_str::<Vec<serde_json::Value>>(t)
            .is_ok_and(|v| !v.is_empty() && v.iter().all(|e| e.get("cve_id").is_some()))
}

/// Leaf's instruction: the string pieces of `_instruction`'s return value, with the place of
/// the description between them.
#[derive(Debug, Clone, PartialEq)]
pub struct Instruction {
    before: String,
    after: String,
}

impl Instruction {
    fn wrap(&self, description: &str) -> String {
        format!("{}{}{}", self.before, description.trim(), self.after)
    }
}

/// Our own wording, used without a copy of Leaf.
fn own_instruction(description: &str) -> String {
    format!(
        "A security vulnerability has been reported in the repository below /workspace:\n\n{}\n\n\
         Find the repository's git root, fix the vulnerability there, and keep every file you \
         touch inside that repository. The network is off; do not look for the upstream fix.",
        description.trim()
    )
}

/// Read the dataset file `file` (its text `text`) as tasks; `leaf` is the user's copy of Leaf,
/// whose instruction wraps each description.
pub fn read_tasks(
    text: &str,
    file: &Path,
    leaf: Option<&Path>,
) -> Result<Vec<BatchTask>, SourceError> {
    let bad = |why: String| SourceError::PatchEval {
        file: file.to_path_buf(),
        why,
    };
    let samples: Vec<serde_json::Value> =
        serde_json::from_str(text).map_err(|e| bad(format!("not PatchEval's dataset: {e}")))?;
    let instruction = leaf
        .map(leaf_instruction)
        .transpose()
        .map_err(SourceError::LeafInstruction)?;
    let mut seen = std::collections::HashSet::new();
    let mut tasks = Vec::with_capacity(samples.len());
    for s in samples {
        let field = |k: &str| s.get(k).and_then(|v| v.as_str()).unwrap_or("").trim();
        let cve = field("cve_id").to_string();
        if let Some(why) = super::attempts::bad_instance_id(&cve) {
            return Err(bad(format!("cve_id {cve:?}: {why}")));
        }
        if !seen.insert(cve.clone()) {
            return Err(bad(format!("cve_id {cve} is repeated")));
        }
        let image = field("image_url");
        if image.is_empty() {
            return Err(bad(format!("{cve} has no image_url")));
        }
        let description = field("cve_description");
        let (task, from) = match &instruction {
            Some(i) => (i.wrap(description), "leaf"),
            None => (own_instruction(description), "lilypad"),
        };
        tasks.push(BatchTask {
            instance_id: cve,
            task,
            kind: TaskKind::PatchEval(PatchEvalTask {
                image: image.to_string(),
                repo_name: repo_name(field("repo")),
                instruction_from: from,
            }),
        });
    }
    Ok(tasks)
}

/// The stem of a repository URL's path: `https://github.com/o/name.git` is `name`.
pub fn repo_name(url: &str) -> String {
    let path = url
        .split_once("://")
        .map(|(_, rest)| rest.split_once('/').map(|(_, p)| p).unwrap_or(""))
        .unwrap_or(url);
    let path = path.split(['?', '#']).next().unwrap_or("");
    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    match last.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_string(),
        _ => last.to_string(),
    }
}

/// `frognano/datasets/patch_eval_verified.py` in the Leaf copy at `leaf` (a checkout, an
/// installed package, or the file itself): the string literals of `_instruction`'s `return`,
/// joined, with the f-string's `{description}` as the place of the description.
pub fn leaf_instruction(leaf: &Path) -> Result<Instruction, PatchEvalError> {
    let file = match leaf.is_file() {
        true => leaf.to_path_buf(),
        false => ["frognano/datasets", "datasets", "."]
            .iter()
            .map(|d| leaf.join(d).join("patch_eval_verified.py"))
            .find(|p| p.is_file())
            .ok_or_else(|| PatchEvalError::NoLeafFile(leaf.to_path_buf()))?,
    };
    let shape = |what: &str| PatchEvalError::LeafShape {
        path: file.clone(),
        what: what.to_string(),
    };
    let source = std::fs::read_to_string(&file).map_err(|source| PatchEvalError::Read {
        path: file.clone(),
        source,
    })?;
    let body = source
        .split("def _instruction(")
        .nth(1)
        .and_then(|f| f.split("return (").nth(1))
        .ok_or_else(|| shape("no `_instruction` returning a string"))?;
    let text = joined_literals(body).map_err(shape)?;
    let (before, after) = text
        .split_once("\u{0}")
        .ok_or_else(|| shape("`_instruction` does not place the description"))?;
    Ok(Instruction {
        before: before.to_string(),
        after: after.to_string(),
    })
}

/// The adjacent string literals at the start of `body` up to the closing parenthesis, joined;
/// in an f-string, `{description}` becomes NUL (the place of the description) and `{{`/`}}`
/// single braces.
fn joined_literals(body: &str) -> Result<String, &'static str> {
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let f = chars.next_if(|c| *c == 'f' || *c == 'F').is_some();
        let Some(quote) = chars.next() else {
            return Err("the return value ends early");
        };
        match quote {
            ')' if !f => return Ok(out),
            '"' | '\'' => {}
            _ => return Err("the return value is not string literals"),
        }
        let mut piece = String::new();
        loop {
            match chars.next() {
                None => return Err("a string literal is not closed"),
                Some(c) if c == quote => break,
                Some('\\') => match chars.next() {
                    Some('n') => piece.push('\n'),
                    Some('t') => piece.push('\t'),
                    Some('\n') => {}
                    Some(c) => piece.push(c),
                    None => return Err("a string literal is not closed"),
                },
                Some(c) => piece.push(c),
            }
        }
        if f {
            piece = piece
                .replace("{description}", "\u{0}")
                .replace("{{", "{")
                .replace("}}", "}");
        }
        out.push_str(&piece);
    }
}

/// Where the repository is in a copy of the image's `/workspace` at `root` (see the module
/// docs): relative to `root` (empty for `root` itself).
pub fn find_repo(root: &Path, repo_name: &str) -> Result<PathBuf, PatchEvalError> {
    let has_git = |rel: &Path| root.join(rel).join(".git").is_dir();
    // An empty name makes the first two `root` itself, as Leaf's do.
    for c in [
        repo_name.to_string(),
        repo_name.to_lowercase(),
        String::new(),
    ] {
        if has_git(Path::new(&c)) {
            return Ok(PathBuf::from(c));
        }
    }
    // Exactly one repository two or three levels down.
    let mut found = Vec::new();
    let mut level = vec![PathBuf::new()];
    for _depth in 1..=2 {
        let mut next = Vec::new();
        for rel in &level {
            let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) && e.file_name() != ".git" {
                    let child = rel.join(e.file_name());
                    if has_git(&child) {
                        found.push(child.clone());
                    }
                    next.push(child);
                }
            }
        }
        level = next;
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(PatchEvalError::NoRepository(repo_name.to_string())),
        _ => Err(PatchEvalError::SeveralRepositories(repo_name.to_string())),
    }
}

impl PatchEvalTask {
    /// An attempt's sandbox: `image` (the task's, as the sandbox runs it) with its
    /// `/workspace` copied out of it for this attempt, the repository found in it and worked
    /// on as it is ([`agent_sandbox`]); the agent's wall time is the run's when it set one,
    /// else [`AGENT_SECS`].
    pub async fn prepare(
        &self,
        image: &str,
        run_wall_time: bool,
        settings: &mut Settings,
        opts: &mut SessionOptions,
    ) -> Result<TaskRepo, PrepareError> {
        let workspace = super::kind::extract(image, WORKSPACE, "the image's workspace").await?;
        let repo = agent_sandbox(self, image, &workspace.path, &mut settings.sandbox).map_err(
            |source| PrepareError::PatchEval {
                image: image.to_string(),
                source,
            },
        )?;
        // `image` is already the reference the sandbox runs (under `--image-registry`).
        settings.sandbox.image_registry = None;
        if !run_wall_time {
            opts.wall_time = Some(AGENT_SECS);
        }
        Ok(workspace.within(repo))
    }
}

/// The agent's sandbox for a task whose image's `/workspace` was copied to `root`: where the
/// repository is (its path on the host and in the container), with `fix.patch` removed when
/// the repository is `/workspace` itself; `settings` get the image, the workdir, Leaf's
/// resources, no network, and an empty `/workspace` over the verifier's files otherwise.
pub fn agent_sandbox(
    task: &PatchEvalTask,
    image: &str,
    root: &Path,
    settings: &mut SandboxSettings,
) -> Result<PathBuf, PatchEvalError> {
    let rel = find_repo(root, &task.repo_name)?;
    let (workdir, hidden) = match rel.as_os_str().is_empty() {
        true => {
            let payload = root.join("fix.patch");
            if payload.exists() {
                std::fs::remove_file(&payload).map_err(|source| PatchEvalError::Hide {
                    path: payload.clone(),
                    source,
                })?;
            }
            (WORKSPACE.to_string(), Vec::new())
        }
        false => (
            format!("{WORKSPACE}/{}", rel.display()),
            vec![WORKSPACE.to_string()],
        ),
    };
    set_common(settings, image);
    settings.workdir = Some(workdir);
    settings.scratch_dirs = hidden;
    settings.repo_as_is = true;
    Ok(root.join(rel))
}

fn set_common(s: &mut SandboxSettings, image: &str) {
    s.image = Some(image.to_string());
    s.dockerfile = None;
    s.devcontainer = false;
    s.setup = None;
    s.network = Some("none".into());
    s.cpus = Some(CPUS);
    s.memory = Some(ByteSize(MEMORY_BYTES));
}

/// Verify `patch` in a fresh sandbox of `kind` from `image` (see the module docs).
pub async fn verify(
    image: &str,
    patch: &[u8],
    kind: SandboxKind,
    base: &SandboxSettings,
) -> Result<Verified, SandboxError> {
    let tmp = crate::sandbox::workspace::scratch_dir()?;
    let root = crate::sandbox::image::extract::extract_dir(image, WORKSPACE, tmp.path()).await?;
    let mut s = base.clone();
    set_common(&mut s, image);
    s.workdir = Some(WORKSPACE.to_string());
    s.scratch_dirs = Vec::new();
    s.repo_as_is = true;
    let spec = s.spec(&root, Some(kind), kind);
    let sandbox = crate::sandbox::open(&spec).await?;
    let mut text = patch.to_vec();
    if !text.ends_with(b"\n") {
        text.push(b'\n');
    }
    let run = async {
        sandbox
            .write(&format!("{WORKSPACE}/fix.patch"), &text)
            .await?;
        let spec = CheckSpec {
            command: "bash fix-run.sh".into(),
            timeout: Duration::from_secs(VERIFIER_SECS),
        };
        run_check(sandbox.as_ref(), &spec).await
    };
    let outcome = run.await;
    let _ = sandbox.close().await;
    let run = outcome?;
    let reward = Some(if run.passed { 1.0 } else { 0.0 });
    Ok(Verified { run, reward })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_names_are_their_urls_stems() {
        assert_eq!(repo_name("https://github.com/acme/Proj"), "Proj");
        assert_eq!(repo_name("https://github.com/acme/proj.git"), "proj");
        assert_eq!(repo_name("https://github.com/acme/proj/"), "proj");
        assert_eq!(repo_name(""), "");
    }

    #[test]
    fn the_repository_is_found_as_leaf_finds_it() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("Proj/.git")).unwrap();
        assert_eq!(find_repo(root, "Proj").unwrap(), PathBuf::from("Proj"));
        // Another name: the one repository below is taken.
        assert_eq!(find_repo(root, "other").unwrap(), PathBuf::from("Proj"));
        std::fs::create_dir_all(root.join("src/lib/.git")).unwrap();
        assert!(find_repo(root, "other").is_err(), "two repositories");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        assert_eq!(find_repo(root, "other").unwrap(), PathBuf::new());
    }

    #[test]
    fn an_instruction_is_read_from_string_literals() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("patch_eval_verified.py");
        std::fs::write(
            &file,
            "def _instruction(sample):\n    description = sample\n    return (\n        \
             \"Fix this: \"\n        f\"{description}\\n\\n\"\n        'Braces {{ stay }} in plain text.'\n    )\n",
        )
        .unwrap();
        let i = leaf_instruction(&file).unwrap();
        assert_eq!(
            i.wrap("  the bug  "),
            "Fix this: the bug\n\nBraces {{ stay }} in plain text."
        );
        std::fs::write(&file, "def _instruction(s):\n    return (\"no place\")\n").unwrap();
        assert!(leaf_instruction(&file).is_err());
    }

    #[test]
    fn the_dataset_is_told_apart_and_read() {
        let text = r#"[{"cve_id": "CVE-2024-1", "image_url": "ghcr.io/x/y:1",
            "repo": "https://github.com/a/b", "cve_description": " overflow "}]"#;
        assert!(is_dataset(text));
        assert!(!is_dataset("{\"instance_id\": \"a\", \"task\": \"t\"}\n"));
        let tasks = read_tasks(text, Path::new("d.json"), None).unwrap();
        assert_eq!(tasks[0].instance_id, "CVE-2024-1");
        assert!(tasks[0].task.contains("overflow"));
        let TaskKind::PatchEval(p) = &tasks[0].kind else {
            panic!("not a PatchEval task: {:?}", tasks[0].kind)
        };
        assert_eq!(p.image, "ghcr.io/x/y:1");
        assert_eq!(p.repo_name, "b");
        assert_eq!(p.instruction_from, "lilypad");
    }
}
