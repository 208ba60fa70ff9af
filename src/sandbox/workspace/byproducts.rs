//! What commands leave behind that never belongs in a patch: interpreter and test-runner
//! caches, virtual environments, installed dependencies. A repository without ignore rules for
//! them (six's sdist has none, say) would otherwise get `__pycache__/*.pyc` in its session
//! patch the first time the model runs its tests.
//!
//! Owns: the pattern list and where it is written: the store's and the in-sandbox `.git`'s
//! `info/exclude` (so the patch and the model's own `git status` agree), and the exclusions of
//! the copy (so the user's own untracked caches are not copied). Like any ignore rule they
//! apply to new files only: a file the repository tracks stays in the patch when it changes.
//!
//! Does not own: the repository's own ignore files, which apply as well.

use crate::sandbox::SandboxError;
use std::path::Path;

/// The patterns, in gitignore syntax.
pub const PATTERNS: &[&str] = &[
    "__pycache__/",
    "*.py[cod]",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".tox/",
    ".nox/",
    ".coverage",
    ".coverage.*",
    "*.egg-info/",
    ".venv/",
    "node_modules/",
    ".DS_Store",
];

/// Write the patterns as `GIT_DIR/info/exclude`.
pub fn write_exclude(git_dir: &Path) -> Result<(), SandboxError> {
    let info = git_dir.join("info");
    std::fs::create_dir_all(&info)
        .map_err(|e| SandboxError::io("creating", info.display().to_string(), e))?;
    let mut text = String::from("# Left by commands, never part of a Lilypad session patch.\n");
    for p in PATTERNS {
        text.push_str(p);
        text.push('\n');
    }
    let path = info.join("exclude");
    std::fs::write(&path, text)
        .map_err(|e| SandboxError::io("writing", path.display().to_string(), e))
}

/// `git ls-files` arguments that leave the patterns' untracked files out.
pub fn ls_files_args() -> impl Iterator<Item = String> {
    PATTERNS.iter().map(|p| format!("--exclude={p}"))
}
