//! Whether the sandbox image holds what the repository needs, checked at start so that the
//! person hears about a missing toolchain before the model does.
//!
//! Owns: which programs a repository needs, read from the names of its top-level files (bash and
//! git always; python3 for `pyproject.toml`, `setup.py`, `setup.cfg` or `requirements*.txt`; node
//! for `package.json`; cargo for `Cargo.toml`; go for `go.mod`), the one shell command that asks
//! the sandbox for them (`command -v` of each), reading its answer, and the advice for what is
//! missing. The pure parts are separate from [`check`], which runs the command in a sandbox.

use super::ImageError;
use crate::sandbox::{ExecExit, ExecRequest, Sandbox, SandboxError};
use std::time::Duration;

/// A program the repository needs, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub program: &'static str,
    /// The file that asks for it, or `None` when every repository needs it.
    pub because: Option<String>,
}

/// Whether a top-level file name asks for a program.
type Asks = fn(&str) -> bool;

/// What each marker file asks for: (program, does this top-level name ask for it).
const RULES: &[(&str, Asks)] = &[
    ("python3", |n| {
        matches!(n, "pyproject.toml" | "setup.py" | "setup.cfg")
            || (n.starts_with("requirements") && n.ends_with(".txt"))
    }),
    ("node", |n| n == "package.json"),
    ("cargo", |n| n == "Cargo.toml"),
    ("go", |n| n == "go.mod"),
];

/// The programs a repository with these top-level file names needs.
pub fn needs(top_level: &[String]) -> Vec<Need> {
    let mut out = vec![
        Need {
            program: "bash",
            because: None,
        },
        Need {
            program: "git",
            because: None,
        },
    ];
    for (program, asks) in RULES {
        let mut names: Vec<&String> = top_level.iter().filter(|n| asks(n)).collect();
        names.sort();
        if let Some(first) = names.first() {
            out.push(Need {
                program,
                because: Some((*first).clone()),
            });
        }
    }
    out
}

/// The shell command that prints, one a line, the programs of `needs` the sandbox lacks.
pub fn probe_command(needs: &[Need]) -> String {
    let names: Vec<&str> = needs.iter().map(|n| n.program).collect();
    format!(
        "for p in {}; do command -v \"$p\" >/dev/null 2>&1 || echo \"$p\"; done",
        names.join(" ")
    )
}

/// The needs the probe's output names as missing.
pub fn missing(needs: &[Need], probe_output: &str) -> Vec<Need> {
    let absent: Vec<&str> = probe_output.split_whitespace().collect();
    needs
        .iter()
        .filter(|n| absent.contains(&n.program))
        .cloned()
        .collect()
}

/// One sentence on what is missing and how to fix it (`None` when nothing is).
pub fn advice(missing: &[Need], image: &str) -> Option<String> {
    if missing.is_empty() {
        return None;
    }
    let list: Vec<String> = missing
        .iter()
        .map(|n| match &n.because {
            Some(f) => format!("{} (the repository has {f})", n.program),
            None => n.program.to_string(),
        })
        .collect();
    Some(format!(
        "the sandbox image {image} lacks {}: the model's commands that need them will fail. \
         Use an image that has them: set `image` or `dockerfile` (and `setup`) in the \
         [sandbox] section of the config file (or --image / --dockerfile / --setup), or add a \
         .devcontainer/devcontainer.json to the repository (see docs/sandbox.md)",
        list.join(", ")
    ))
}

/// The names of `repo`'s top-level entries. A directory (or an entry of it) that cannot be
/// read is an error naming it, never "no files": the check would then ask only for bash and
/// git and pass a repository whose toolchain is missing.
pub fn top_level(repo: &std::path::Path) -> Result<Vec<String>, ImageError> {
    let listing = |source| ImageError::Listing {
        path: repo.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(repo).map_err(listing)? {
        names.push(
            entry
                .map_err(listing)?
                .file_name()
                .to_string_lossy()
                .into_owned(),
        );
    }
    names.sort();
    Ok(names)
}

/// Ask `sandbox` for what a repository with these top-level names needs; returns what it
/// lacks.
pub async fn check(sandbox: &dyn Sandbox, top_level: &[String]) -> Result<Vec<Need>, SandboxError> {
    let needs = needs(top_level);
    let out = sandbox
        .exec(ExecRequest {
            command: probe_command(&needs),
            cwd: sandbox.root().to_string(),
            timeout: Duration::from_secs(30),
            keep_bytes: 4096,
            stream: None,
        })
        .await?;
    if out.exit != ExecExit::Exited(0) {
        return Err(SandboxError::Helper {
            helper: "image check",
            code: match out.exit {
                ExecExit::Exited(c) => c,
                ExecExit::TimedOut => -1,
            },
            stderr: String::from_utf8_lossy(&out.stderr.head).into_owned(),
        });
    }
    Ok(missing(&needs, &String::from_utf8_lossy(&out.stdout.head)))
}

/// What `lilypad doctor` reports about a spec's image.
#[derive(Debug, Clone)]
pub struct ImageReport {
    /// Which image, and whether it is built and set up yet.
    pub image: String,
    /// What it lacks for the repository; `None` when it could not be checked (not built yet).
    pub missing: Option<Vec<Need>>,
}

/// Check the image `spec` would start from (without building or setting anything up) in a
/// throw-away sandbox on an empty workspace, against `spec.repo`'s top-level files.
pub async fn check_spec(spec: &crate::sandbox::SandboxSpec) -> Result<ImageReport, SandboxError> {
    use crate::sandbox::{docker, kube, workspace::Workspace, KindSettings};
    let empty = tempfile::Builder::new()
        .prefix("lilypad-check-")
        .tempdir()
        .map_err(|e| SandboxError::io("creating", "a temporary directory", e))?;
    let names = top_level(&spec.repo)?;
    let (image, sandbox): (String, Option<std::sync::Arc<dyn Sandbox>>) = match &spec.settings {
        KindSettings::Host(_) => {
            return Ok(ImageReport {
                image: "(the host: not checked)".into(),
                missing: None,
            })
        }
        KindSettings::Docker(settings) => {
            let d = docker::connect().await?;
            let (ready, text) = super::describe_ready(&d, &spec.repo, settings).await?;
            match ready {
                Some(img) => {
                    let mut s = settings.clone();
                    s.image = img;
                    let ws = Workspace::create(empty.path())?;
                    (
                        text,
                        Some(std::sync::Arc::new(
                            docker::DockerSandbox::start(ws, &s).await?,
                        )),
                    )
                }
                None => (text, None),
            }
        }
        KindSettings::Kube(settings) => {
            let mut s = settings.clone();
            s.image = super::kube_image(&spec.repo, &s)?;
            let ws = Workspace::create(empty.path())?;
            let text = format!("image {}", s.image);
            (
                text,
                Some(std::sync::Arc::new(kube::KubeSandbox::start(ws, &s).await?)),
            )
        }
    };
    let Some(sb) = sandbox else {
        return Ok(ImageReport {
            image,
            missing: None,
        });
    };
    let result = check(sb.as_ref(), &names).await;
    // The check's answer is what matters; a container left behind is swept later.
    let _ = sb.close().await;
    Ok(ImageReport {
        image,
        missing: Some(result?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn needs_follow_the_marker_files() {
        let progs = |v: &[&str]| -> Vec<&'static str> {
            needs(&names(v)).iter().map(|n| n.program).collect()
        };
        assert_eq!(progs(&["README.md"]), ["bash", "git"]);
        assert_eq!(
            progs(&["pyproject.toml", "src"]),
            ["bash", "git", "python3"]
        );
        assert_eq!(progs(&["requirements-dev.txt"]), ["bash", "git", "python3"]);
        assert_eq!(
            progs(&["package.json", "Cargo.toml", "go.mod"]),
            ["bash", "git", "node", "cargo", "go"]
        );
        let n = needs(&names(&["setup.py", "pyproject.toml"]));
        assert_eq!(n[2].because.as_deref(), Some("pyproject.toml"));
    }

    #[test]
    fn the_probe_answer_names_what_is_missing() {
        let n = needs(&names(&["pyproject.toml"]));
        let cmd = probe_command(&n);
        assert!(cmd.contains("bash git python3"), "{cmd}");
        let m = missing(&n, "bash\npython3\n");
        assert_eq!(
            m.iter().map(|n| n.program).collect::<Vec<_>>(),
            ["bash", "python3"]
        );
        assert!(missing(&n, "").is_empty());
        let text = advice(&m, "img:1").unwrap();
        assert!(
            text.contains("python3 (the repository has pyproject.toml)"),
            "{text}"
        );
        assert!(
            text.contains("[sandbox]") && text.contains("devcontainer"),
            "{text}"
        );
        assert_eq!(advice(&[], "img:1"), None);
    }

    #[test]
    fn the_top_level_names_are_read_sorted() {
        let repo = tempfile::tempdir().unwrap();
        for name in ["go.mod", "Cargo.toml", "src"] {
            std::fs::write(repo.path().join(name), "").unwrap();
        }
        assert_eq!(
            top_level(repo.path()).unwrap(),
            ["Cargo.toml", "go.mod", "src"]
        );
    }

    #[test]
    fn an_unreadable_repository_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let gone = tmp.path().join("no-such-repo");
        match top_level(&gone) {
            Err(e @ ImageError::Listing { .. }) => {
                assert!(e.to_string().contains("no-such-repo"), "{e}");
                assert!(std::error::Error::source(&e).is_some());
            }
            other => panic!("expected a listing error, got {other:?}"),
        }
    }
}
