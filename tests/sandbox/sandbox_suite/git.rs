//! The workspace as a git checkout of its own, the same in every sandbox: clean at start,
//! `git diff` shows an edit, the model's own commit and a stash it leaves behind are still in
//! the session patch, turn records restore the files exactly, and the user's repository `.git`
//! is never visible or touched. Needs git inside the sandbox (the host's, or an image with
//! git such as `lilypad-sandbox:debian`).

use super::Harness;
use crate::common::{git, git_repo};
use serde_json::json;
use std::fs;
use std::path::Path;

/// Text in the user's repository's git config and hook that must never show in a sandbox.
pub const USER_MARK: &str = "user-private-git-marker";

/// [`super::fixture`] (outside `/tmp`) made a git repository ([`git_repo`], on a branch other
/// than `main`) with history, a remote holding a token, a hook and an identity of its own.
pub fn git_fixture() -> tempfile::TempDir {
    let d = super::fixture_outside_tmp();
    let r = d.path();
    git_repo(r, &[]);
    let url = format!("https://{USER_MARK}@example.invalid/repo.git");
    git(r, &["remote", "add", "origin", &url]);
    git(r, &["config", "user.name", USER_MARK]);
    let hook = r.join(".git/hooks/post-commit");
    fs::write(&hook, format!("#!/bin/sh\necho {USER_MARK}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// Every file below `dir` with its bytes (symlinks by target), sorted: the state of the user's
/// `.git`, read without git (which could refresh the index).
pub fn tree_state(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                let t = fs::read_link(&p).unwrap().display().to_string();
                out.push((rel, t.into_bytes()));
            } else if meta.is_dir() {
                stack.push(p);
            } else {
                out.push((rel, fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

async fn exists(h: &Harness, path: &str) -> bool {
    h.out(&format!("test -e {path} && echo yes || echo no"))
        .await
        .starts_with("yes")
}

async fn patch(h: &Harness) -> String {
    String::from_utf8(
        lilypad::sandbox::workspace::Checkout::of(h.sb().as_ref())
            .export_patch()
            .await
            .unwrap(),
    )
    .unwrap()
}

/// The checks of the module docs on a sandbox opened on [`git_fixture`] `repo`. `sees_host`:
/// the sandbox sees the host's files as they are (the uncontained host sandbox), so the user's
/// repository cannot be out of its sight, only out of the workspace.
pub async fn checkout(h: &Harness, repo: &Path, sees_host: bool) {
    let before = tree_state(&repo.join(".git"));
    let sb = h.sb();
    assert_eq!(h.out("git status --porcelain").await, "");
    assert_eq!(
        h.out("git log --format='%an <%ae> %s'").await,
        "Lilypad <lilypad@localhost> Baseline: the repository as Lilypad copied it\n"
    );
    assert_eq!(h.out("git branch --show-current").await, "main\n");
    assert_eq!(h.out("git remote; ls -A .git/hooks").await, "");
    let config = h.out("cat .git/config").await;
    assert!(!config.contains(USER_MARK), "{config}");
    // The user's repository's git directory is not in sight (the host sandbox sees the host's
    // files, but not that one).
    let seen = h
        .sh(&format!(
            "cat '{0}/.git/config' '{0}/.git/hooks/post-commit'",
            repo.display()
        ))
        .await;
    assert_eq!(seen.contains(USER_MARK), sees_host, "{seen}");

    // An edit shows in `git diff`, and is recorded as turn 1.
    assert_eq!(
        h.text(
            "Edit",
            json!({"file_path": "src/app.py", "old_string": "return 1", "new_string": "return 2"})
        )
        .await,
        "Edited src/app.py (1 replacement)."
    );
    assert!(h.out("git diff").await.contains("+    return 2"));
    assert_eq!(
        lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
            .record_turn(1)
            .await
            .unwrap()
            .as_deref(),
        Some("refs/lilypad/turns/1")
    );
    let turn1 = patch(h).await;
    assert!(turn1.contains("+    return 2"), "{turn1}");

    // The model's own commit (no hook runs) is still in the patch.
    let out = h
        .out("git commit -qam 'fix f' && git status --porcelain")
        .await;
    assert_eq!(out, "", "a hook ran or the tree is not clean");
    assert_eq!(patch(h).await, turn1);

    // A stash it leaves behind does not hide its changes from the patch.
    h.out("echo new > new.txt && git add new.txt && git rm -q README.md && git stash -q")
        .await;
    assert_eq!(h.out("git status --porcelain").await, "");
    assert!(!exists(h, "new.txt").await);
    let stashed = patch(h).await;
    assert!(stashed.contains("+    return 2"), "{stashed}");
    assert!(stashed.contains("+++ b/new.txt"), "{stashed}");
    assert!(stashed.contains("deleted file mode"), "{stashed}");
    // The files did not change since turn 1 (the stash holds the changes): nothing recorded.
    assert_eq!(
        lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
            .record_turn(2)
            .await
            .unwrap(),
        None
    );
    h.out("git stash pop -q").await;
    assert!(lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
        .record_turn(3)
        .await
        .unwrap()
        .is_some());
    let turn3 = patch(h).await;
    assert_eq!(turn3, stashed);

    // Turn records restore the files exactly, whatever happened since.
    h.out("echo later >> src/app.py; rm -rf src/app.py .github; echo x > other.txt")
        .await;
    lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
        .restore_turn(1)
        .await
        .unwrap();
    assert_eq!(patch(h).await, turn1);
    assert_eq!(h.out("cat README.md").await, "# demo\n");
    assert!(!exists(h, "new.txt").await && !exists(h, "other.txt").await);
    lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
        .restore_turn(3)
        .await
        .unwrap();
    assert_eq!(patch(h).await, turn3);
    lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
        .restore_turn(0)
        .await
        .unwrap();
    assert_eq!(patch(h).await, "");
    assert_eq!(h.out("cat src/app.py").await, "def f():\n    return 1\n");

    // Deleting the in-sandbox `.git` changes nothing the session relies on.
    h.out("echo gone >> README.md; rm -rf .git").await;
    assert!(patch(h).await.contains("+gone"));
    lilypad::sandbox::workspace::Checkout::of(sb.as_ref())
        .restore_turn(3)
        .await
        .unwrap();
    assert_eq!(patch(h).await, turn3);

    assert_eq!(
        tree_state(&repo.join(".git")),
        before,
        "the user's .git changed"
    );
}
