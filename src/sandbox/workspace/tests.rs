//! The workspace on real git: the copy, the checkout, the patch whatever the model does with
//! git, and the turn records.

use super::*;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// git as the model runs it in the workspace (plain `git -C DIR`, no neutral environment but a
/// throwaway HOME).
fn model_git(dir: &Path, args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("HOME", home.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Apply `patch` to `dir` with `git apply`.
fn apply(dir: &Path, patch: &[u8]) {
    let pf = tempfile::NamedTempFile::new().unwrap();
    fs::write(pf.path(), patch).unwrap();
    let st = Command::new("git")
        .args(["apply", "--whitespace=nowarn"])
        .arg(pf.path())
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(st.success(), "{}", String::from_utf8_lossy(patch));
}

/// Every file below `dir` (`.git` skipped) with its content and mode, for exact comparisons.
fn files(dir: &Path) -> Vec<(String, Vec<u8>, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_name() == ".git" {
                continue;
            }
            let meta = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if meta.file_type().is_symlink() {
                let t = fs::read_link(&p).unwrap();
                out.push((rel, t.as_os_str().as_bytes().to_vec(), 0o120000));
            } else if meta.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    rel,
                    fs::read(&p).unwrap(),
                    meta.permissions().mode() & 0o111,
                ));
            }
        }
    }
    out.sort();
    out
}

fn write(p: &Path, s: &[u8]) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, s).unwrap();
}

#[test]
fn copy_keeps_tracked_files_that_an_ignore_rule_matches() {
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    let git = |args: &[&str]| {
        let st = Command::new("git")
            .arg("-C")
            .arg(r)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .status()
            .unwrap();
        assert!(st.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    write(&r.join(".gitignore"), b"*.log\nbuild/\n");
    write(&r.join("keep.log"), b"committed anyway\n");
    write(&r.join("src/a.rs"), b"fn a() {}\n");
    git(&["add", ".gitignore", "src/a.rs"]);
    git(&["add", "-f", "keep.log"]);
    git(&["commit", "-q", "-m", "one"]);
    write(&r.join("x.log"), b"ignored\n");
    write(&r.join("build/out.o"), b"obj");
    write(&r.join("new.txt"), b"untracked\n");
    let ws = Workspace::create(r).unwrap();
    let w = ws.work_dir();
    assert!(w.join("keep.log").exists(), "a tracked file was dropped");
    assert!(w.join("src/a.rs").exists() && w.join("new.txt").exists());
    assert!(!w.join("x.log").exists() && !w.join("build").exists());
    // The user's history is not there: only the baseline commit.
    assert_eq!(model_git(w, &["rev-list", "--count", "HEAD"]).trim(), "1");
    assert_eq!(model_git(w, &["status", "--porcelain"]), "");
    assert_eq!(ws.diff(w).unwrap(), b"");
    // A change to the tracked, ignore-matching file is in the patch; a new ignored file
    // is not.
    write(&w.join("keep.log"), b"changed in the session\n");
    write(&w.join("new.log"), b"scratch\n");
    let patch = String::from_utf8(ws.diff(w).unwrap()).unwrap();
    assert!(patch.contains("+changed in the session"), "{patch}");
    assert!(!patch.contains("new.log"), "{patch}");
}

#[test]
fn copy_skips_git_and_ignored_and_patch_applies() {
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    write(&r.join(".git/config"), b"[remote] url = https://secret@x\n");
    write(&r.join(".gitignore"), b"target/\n");
    write(&r.join("target/big.bin"), b"x");
    write(&r.join("src/a.txt"), b"one\ntwo\n");
    write(&r.join("gone.txt"), b"bye\n");
    write(&r.join(".hidden"), b"h\n");
    let ws = Workspace::create(r).unwrap();
    let w = ws.work_dir();
    assert!(!fs::read_to_string(w.join(".git/config"))
        .unwrap()
        .contains("secret"));
    assert!(!w.join("target").exists());
    assert!(w.join(".hidden").exists());
    assert_eq!(ws.diff(w).unwrap(), b"");

    write(&w.join("src/a.txt"), b"one\nTWO\n");
    fs::remove_file(w.join("gone.txt")).unwrap();
    write(&w.join("new/bin.dat"), &[0, 1, 2, 255, 0]);
    write(&w.join("run.sh"), b"#!/bin/sh\n");
    fs::set_permissions(w.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    let patch = ws.diff(w).unwrap();
    let text = String::from_utf8_lossy(&patch);
    assert!(text.contains("GIT binary patch"), "{text}");
    assert!(text.contains("deleted file mode"), "{text}");
    assert!(text.contains("new file mode 100755"), "{text}");

    // The patch applies to the untouched original.
    apply(r, &patch);
    assert_eq!(fs::read(r.join("src/a.txt")).unwrap(), b"one\nTWO\n");
    assert_eq!(fs::read(r.join("new/bin.dat")).unwrap(), [0, 1, 2, 255, 0]);
    assert!(!r.join("gone.txt").exists());
}

/// A small user repository with history, a remote, a hook and config of its own.
fn user_repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    let git = |args: &[&str]| {
        let st = Command::new("git")
            .arg("-C")
            .arg(r)
            .args(["-c", "user.name=u", "-c", "user.email=u@u"])
            .args(args)
            .status()
            .unwrap();
        assert!(st.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "trunk"]);
    write(&r.join("a.txt"), b"one\ntwo\n");
    write(&r.join("bin.dat"), &[0, 1, 2]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "first"]);
    git(&[
        "remote",
        "add",
        "origin",
        "https://token@example.invalid/x.git",
    ]);
    git(&["config", "user.name", "Private Person"]);
    write(
        &r.join(".git/hooks/post-commit"),
        b"#!/bin/sh\necho hooked\n",
    );
    fs::set_permissions(
        r.join(".git/hooks/post-commit"),
        fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    write(&r.join("untracked.txt"), b"u\n");
    repo
}

#[test]
fn the_copy_is_a_clean_neutral_checkout_of_its_own() {
    let repo = user_repo();
    let ws = Workspace::create(repo.path()).unwrap();
    let w = ws.work_dir();
    assert_eq!(model_git(w, &["status", "--porcelain"]), "");
    // The `.git` Lilypad writes itself is one git finds whole and consistent.
    model_git(w, &["fsck", "--strict", "--no-progress", "--no-dangling"]);
    assert_eq!(model_git(w, &["config", "core.bare"]).trim(), "false");
    assert_eq!(model_git(w, &["branch", "--show-current"]).trim(), "main");
    assert_eq!(model_git(w, &["rev-parse", "HEAD"]).trim(), ws.baseline());
    assert_eq!(
        model_git(w, &["log", "--format=%an <%ae> %ad", "--date=unix"]).trim(),
        "Lilypad <lilypad@localhost> 946684800"
    );
    // Untracked files of the user's repository are part of the baseline.
    assert_eq!(
        model_git(w, &["ls-files"]),
        "a.txt\nbin.dat\nuntracked.txt\n"
    );
    assert_eq!(model_git(w, &["remote"]), "");
    let config = fs::read_to_string(w.join(".git/config")).unwrap();
    assert!(
        !config.contains("Private") && !config.contains("token"),
        "{config}"
    );
    assert_eq!(fs::read_dir(w.join(".git/hooks")).unwrap().count(), 0);
    // The same files make the same baseline commit.
    let again = Workspace::create(repo.path()).unwrap();
    assert_eq!(again.baseline(), ws.baseline());
    // The model's own commit works (the identity is set) and runs no hook.
    write(&w.join("a.txt"), b"one\nTWO\n");
    assert!(model_git(w, &["diff"]).contains("+TWO"));
    let out = model_git(w, &["commit", "-qam", "mine"]);
    assert!(!out.contains("hooked"), "{out}");
}

#[test]
fn caches_commands_leave_stay_out_of_the_patch_and_of_git_status() {
    let repo = user_repo();
    let r = repo.path();
    // The user's own untracked cache is not copied; a tracked one stays tracked.
    write(&r.join("__pycache__/a.cpython-311.pyc"), b"user's");
    write(&r.join("legacy.pyc"), b"v1");
    let st = Command::new("git")
        .arg("-C")
        .arg(r)
        .args(["add", "-f", "legacy.pyc"])
        .status()
        .unwrap();
    assert!(st.success());
    let ws = Workspace::create(r).unwrap();
    let w = ws.work_dir();
    assert!(!w.join("__pycache__").exists());
    assert_eq!(model_git(w, &["status", "--porcelain"]), "");

    // A test run's leftovers, one real new file, and a change to the tracked .pyc.
    write(
        &w.join("__pycache__/test_a.cpython-311-pytest-8.3.5.pyc"),
        &[0, 1],
    );
    write(&w.join("pkg/__pycache__/m.cpython-311.pyc"), &[2, 3]);
    write(&w.join(".pytest_cache/v/cache/lastfailed"), b"{}");
    write(&w.join("node_modules/x/index.js"), b"1");
    write(&w.join("pkg.egg-info/PKG-INFO"), b"Name: pkg");
    write(&w.join("fix.py"), b"x = 1\n");
    write(&w.join("legacy.pyc"), b"v2");
    assert_eq!(
        model_git(w, &["status", "--porcelain"]),
        " M legacy.pyc\n?? fix.py\n"
    );
    let patch = String::from_utf8(ws.diff(w).unwrap()).unwrap();
    let files: Vec<&str> = patch
        .lines()
        .filter_map(|l| l.strip_prefix("diff --git a/"))
        .collect();
    assert_eq!(
        files,
        ["fix.py b/fix.py", "legacy.pyc b/legacy.pyc"],
        "{patch}"
    );
}

#[test]
fn the_patch_is_the_files_whatever_the_model_does_with_git() {
    let repo = user_repo();
    let r = repo.path();
    let ws = Workspace::create(r).unwrap();
    let w = ws.work_dir();
    // Commits and a branch.
    write(&w.join("a.txt"), b"one\nTWO\n");
    model_git(w, &["commit", "-qam", "edit"]);
    model_git(w, &["switch", "-qc", "feature"]);
    write(&w.join("new.txt"), b"new\n");
    model_git(w, &["add", "new.txt"]);
    model_git(w, &["commit", "-qm", "add"]);
    let patch = String::from_utf8(ws.diff(w).unwrap()).unwrap();
    assert!(patch.contains("+TWO") && patch.contains("+new"), "{patch}");
    // History rewritten to look like nothing happened: the files still count.
    model_git(w, &["update-ref", "refs/heads/main", "HEAD"]);
    model_git(w, &["reset", "--soft", "HEAD~2"]);
    assert_eq!(String::from_utf8(ws.diff(w).unwrap()).unwrap(), patch);
    model_git(w, &["commit", "-qm", "again"]);
    // A stash takes the change out of the files; handed over, it is in the patch again.
    write(&w.join("a.txt"), b"one\nTWO\nthree\n");
    model_git(w, &["stash", "-q"]);
    let stash = Command::new("git")
        .arg("-C")
        .arg(w)
        .args(["stash", "show", "-p", "--binary", "--include-untracked"])
        .output()
        .unwrap()
        .stdout;
    let without = String::from_utf8(ws.diff(w).unwrap()).unwrap();
    assert!(!without.contains("+three"), "{without}");
    let with = String::from_utf8(ws.diff_with(w, Some(&stash)).unwrap()).unwrap();
    assert!(with.contains("+three") && with.contains("+new"), "{with}");
    // A stash that does not apply is left out, not an error.
    assert_eq!(
        String::from_utf8(ws.diff_with(w, Some(b"garbage")).unwrap()).unwrap(),
        without
    );
    // `.git` deleted: the patch is unchanged, and it applies to the user's repository.
    fs::remove_dir_all(w.join(".git")).unwrap();
    let patch = ws.diff(w).unwrap();
    assert!(!String::from_utf8_lossy(&patch).contains(".git/"));
    assert_eq!(String::from_utf8(patch.clone()).unwrap(), without);
    let copy = tempfile::tempdir().unwrap();
    copy_repo(r, copy.path()).unwrap();
    apply(copy.path(), &patch);
    assert_eq!(fs::read(copy.path().join("a.txt")).unwrap(), b"one\nTWO\n");
}

#[test]
fn the_users_repository_is_never_touched() {
    let repo = user_repo();
    let r = repo.path();
    let before = (files(&r.join(".git")), model_git(r, &["show-ref"]));
    let ws = Workspace::create(r).unwrap();
    let w = ws.work_dir();
    write(&w.join("a.txt"), b"changed\n");
    model_git(w, &["commit", "-qam", "x"]);
    ws.record_turn(w, 1).unwrap();
    ws.diff(w).unwrap();
    assert!(!w.join(".git/hooks/post-commit").exists());
    drop(ws);
    assert_eq!(
        (files(&r.join(".git")), model_git(r, &["show-ref"])),
        before
    );
}

/// Apply a restore plan as the host sandbox does.
fn restore(ws: &Workspace, turn: u32) {
    let w = ws.work_dir();
    let plan = ws.restore_plan(w, turn).unwrap();
    crate::sandbox::host::apply_restore(w, &plan).unwrap();
}

#[test]
fn turn_records_restore_the_files_exactly() {
    let repo = user_repo();
    let ws = Workspace::create(repo.path()).unwrap();
    let w = ws.work_dir();
    let t0 = files(w);
    assert_eq!(ws.record_turn(w, 1).unwrap(), None, "nothing changed");
    write(&w.join("a.txt"), b"turn two\n");
    write(&w.join("dir/new.txt"), b"new\n");
    assert_eq!(
        ws.record_turn(w, 2).unwrap().as_deref(),
        Some("refs/lilypad/turns/2")
    );
    let t2 = files(w);
    fs::remove_file(w.join("bin.dat")).unwrap();
    fs::remove_dir_all(w.join("dir")).unwrap();
    write(&w.join("dir"), b"a file where a directory was\n");
    std::os::unix::fs::symlink("a.txt", w.join("link")).unwrap();
    write(&w.join("run.sh"), b"#!/bin/sh\n");
    fs::set_permissions(w.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    ws.record_turn(w, 4).unwrap();
    let t4 = files(w);
    assert_eq!(
        ws.turns(),
        vec![
            (2, "refs/lilypad/turns/2".to_string()),
            (4, "refs/lilypad/turns/4".to_string())
        ]
    );
    // More changes, never recorded; then back to each turn.
    write(&w.join("a.txt"), b"later\n");
    restore(&ws, 3);
    assert_eq!(files(w), t2, "turn 3 is turn 2's record");
    restore(&ws, 4);
    assert_eq!(files(w), t4);
    restore(&ws, 0);
    assert_eq!(files(w), t0);
    assert!(ws.restore_plan(w, 0).unwrap().is_empty());
    // After a restore, recording turn 3 again replaces the later records.
    write(&w.join("a.txt"), b"another turn three\n");
    ws.record_turn(w, 3).unwrap();
    assert_eq!(ws.turns().len(), 2);
    assert_eq!(ws.turns()[1].0, 3);
}

/// An image's repository as its build left it: two commits, a tracked file an ignore rule
/// matches, a generated module and build output that git ignores, a rule in
/// `.git/info/exclude`.
fn image_repository(dir: &Path) {
    for (path, text) in [
        ("pkg/__init__.py", "from ._version import VERSION\n"),
        ("pkg/core.py", "def f():\n    return 1\n"),
        (".gitignore", "pkg/_version.py\nbuild/\n*.log\n"),
    ] {
        fs::create_dir_all(dir.join(path).parent().unwrap()).unwrap();
        fs::write(dir.join(path), text).unwrap();
    }
    model_git(dir, &["init", "-q", "-b", "work"]);
    model_git(dir, &["add", "-A"]);
    model_git(
        dir,
        &[
            "-c",
            "user.name=I",
            "-c",
            "user.email=i@x",
            "commit",
            "-qm",
            "one",
        ],
    );
    fs::write(dir.join("kept.log"), "tracked despite the rule\n").unwrap();
    model_git(dir, &["add", "--force", "kept.log"]);
    model_git(
        dir,
        &[
            "-c",
            "user.name=I",
            "-c",
            "user.email=i@x",
            "commit",
            "-qm",
            "two",
        ],
    );
    fs::write(dir.join("pkg/_version.py"), "VERSION = '1'\n").unwrap();
    fs::create_dir_all(dir.join("build/lib")).unwrap();
    fs::write(dir.join("build/lib/ext.so"), "binary\n").unwrap();
    fs::write(dir.join("local.tmp"), "excluded by info/exclude\n").unwrap();
    fs::write(dir.join(".git/info/exclude"), "*.tmp\n").unwrap();
}

#[test]
fn an_adopted_repository_keeps_its_files_and_history_and_patches_the_agents_change_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("testbed");
    image_repository(&dir);
    let head = model_git(&dir, &["rev-parse", "HEAD"]);
    let ws = Workspace::adopt(&dir).unwrap();
    let work = ws.work_dir().to_path_buf();
    assert_eq!(work, fs::canonicalize(&dir).unwrap(), "worked on in place");
    // Everything is still there, the image's history included.
    assert_eq!(model_git(&work, &["rev-parse", "HEAD"]), head);
    assert!(work.join("pkg/_version.py").is_file());
    assert!(work.join("build/lib/ext.so").is_file());
    assert_eq!(ws.ignored_at_start(), [PathBuf::from("build")]);
    assert!(ws.diff(&work).unwrap().is_empty(), "nothing changed yet");
    // The agent's changes, and what its commands leave in ignored places.
    fs::write(work.join("pkg/core.py"), "def f():\n    return 2\n").unwrap();
    fs::write(work.join("kept.log"), "changed\n").unwrap();
    fs::write(work.join("pkg/_version.py"), "VERSION = '2'\n").unwrap();
    fs::write(work.join("build/lib/new.so"), "rebuilt\n").unwrap();
    fs::write(work.join("more.tmp"), "scratch\n").unwrap();
    fs::write(work.join("notes.txt"), "new\n").unwrap();
    let patch = String::from_utf8(ws.diff(&work).unwrap()).unwrap();
    let changed: Vec<&str> = patch
        .lines()
        .filter_map(|l| l.strip_prefix("diff --git a/"))
        .collect();
    assert_eq!(
        changed,
        [
            "kept.log b/kept.log",
            "notes.txt b/notes.txt",
            "pkg/core.py b/pkg/core.py"
        ],
        "{patch}"
    );
    // Turn records and restoring leave the ignored files alone.
    ws.record_turn(&work, 1).unwrap().unwrap();
    let plan = ws.restore_plan(&work, 0).unwrap();
    assert!(plan.remove.contains(&PathBuf::from("notes.txt")));
    assert!(!plan
        .remove
        .iter()
        .any(|p| p.starts_with("build") || p.ends_with("_version.py")));
}

#[test]
fn an_adopted_directory_without_git_gets_one_holding_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("app");
    fs::create_dir_all(dir.join("out")).unwrap();
    fs::write(dir.join("main.c"), "int main(void) { return 0; }\n").unwrap();
    fs::write(dir.join(".gitignore"), "out/\n").unwrap();
    fs::write(dir.join("out/main.o"), "object\n").unwrap();
    let ws = Workspace::adopt(&dir).unwrap();
    let work = ws.work_dir();
    assert!(work.join("out/main.o").is_file(), "ignored files stay");
    assert_eq!(model_git(work, &["status", "--porcelain"]), "");
    let tracked = model_git(work, &["ls-files"]);
    assert_eq!(tracked, ".gitignore\nmain.c\n");
    fs::write(work.join("main.c"), "int main(void) { return 1; }\n").unwrap();
    let patch = String::from_utf8(ws.diff(work).unwrap()).unwrap();
    assert!(patch.contains("+int main(void) { return 1; }"), "{patch}");
    assert!(!patch.contains("main.o"), "{patch}");
}
