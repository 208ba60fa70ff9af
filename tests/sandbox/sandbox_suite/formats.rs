//! Tool result formats, error strings and path rules (docs/tools.md), the same on every
//! sandbox. Runs against a fresh copy of [`super::fixture`].

use super::{bash_result, Harness};
use lilypad::tools::Before;
use serde_json::json;
use std::path::Path;

/// Read, Glob and the path rules.
pub async fn reads_and_paths(h: &Harness) {
    let root = h.sb().root().to_string();
    assert_eq!(
        h.text("Read", json!({"file_path": "src/app.py"})).await,
        "src/app.py\n1. def f():\n2.     return 1"
    );
    assert_eq!(
        h.text(
            "Read",
            json!({"path": "src/app.py", "offset": "2", "limit": 1})
        )
        .await,
        "src/app.py\n2.     return 1"
    );
    assert_eq!(
        h.text("Read", json!({"file_path": "src/app.py", "offset": 99}))
            .await,
        // Leaf: the path line and its newline, then no numbered line.
        "src/app.py\n"
    );
    assert_eq!(
        h.text(
            "Read",
            json!({"file_path": format!("{root}/src/app.py"), "limit": 0})
        )
        .await,
        "src/app.py\n1. def f():\n2.     return 1"
    );
    assert_eq!(
        h.text("Read", json!({"file_path": "~/README.md"})).await,
        "README.md\n1. # demo"
    );
    assert_eq!(
        h.text("Read", json!({"file_path": "crlf.txt"})).await,
        "crlf.txt\n1. a\n2. b"
    );
    assert_eq!(
        h.text("Read", json!({"file_path": "bin.dat"})).await,
        "bin.dat\n[binary file, 5 bytes: not shown as text]"
    );
    assert_eq!(
        h.text("Read", json!({"file_path": "nope.txt"})).await,
        "FileNotFoundError: [Errno 2] No such file or directory: 'nope.txt'"
    );
    assert_eq!(
        h.text("Read", json!({"file_path": "src"})).await,
        "IsADirectoryError: [Errno 21] Is a directory: 'src'"
    );
    assert_eq!(
        h.text("Read", json!({})).await,
        "ValueError: file_path is required"
    );
    assert_eq!(
        h.text("Read", json!({"file_path": ""})).await,
        "ValueError: file_path is required"
    );
    assert_eq!(
        h.text("Read", json!({"file_path": "src/app.py", "offset": "x"}))
            .await,
        "ValueError: offset must be an integer"
    );
    // A symlink inside the workspace is followed and shown by its real path.
    assert_eq!(
        h.text("Read", json!({"file_path": "link_in/app.py", "limit": 1}))
            .await,
        "src/app.py\n1. def f():"
    );
    // Escapes: `..`, absolute paths, symlinks to files and through directories.
    for p in [
        "../etc/passwd",
        "/etc/passwd",
        "src/../../etc/passwd",
        "~/../etc/passwd",
    ] {
        let r = h.run("Read", json!({"file_path": p})).await;
        assert!(r.is_error, "{p}: {}", r.content);
        assert!(
            r.content
                .starts_with(&format!("PermissionError: '{p}' is outside the workspace")),
            "{p}: {}",
            r.content
        );
    }
    for p in ["link_passwd", "link_out/passwd", "link_out/hostname"] {
        let r = h.text("Read", json!({"file_path": p})).await;
        assert!(
            r.starts_with(&format!(
                "PermissionError: '{p}' resolves through a symlink to /etc"
            )),
            "{p}: {r}"
        );
    }

    assert_eq!(
        h.text("Glob", json!({"pattern": "**/*.py"})).await,
        "src/app.py"
    );
    assert_eq!(
        h.text("Glob", json!({"pattern": "*.log"})).await,
        "No files matched."
    );
    assert_eq!(
        h.text("Glob", json!({"pattern": "build/*"})).await,
        "No files matched."
    );
    assert_eq!(
        h.text("Glob", json!({"pattern": "**/*.yml"})).await,
        ".github/ci.yml"
    );
    assert_eq!(
        h.text("Glob", json!({"pattern": "*", "path": "src"})).await,
        "src/app.py"
    );
    assert_eq!(
        h.text("Glob", json!({"pattern": "*.txt"})).await,
        "crlf.txt\ndup.txt"
    );
    assert_eq!(
        h.text("Glob", json!({"pattern": ""})).await,
        "ValueError: pattern is required"
    );
    assert!(h
        .text("Glob", json!({"pattern": "*", "path": "../"}))
        .await
        .starts_with("PermissionError: '../' is outside the workspace"));
    assert!(h
        .text("Glob", json!({"pattern": "*", "path": "link_out"}))
        .await
        .starts_with("PermissionError: 'link_out' resolves through a symlink"));
    assert_eq!(
        h.text("Glob", json!({"pattern": "*", "path": "README.md"}))
            .await,
        "NotADirectoryError: [Errno 20] Not a directory: 'README.md'"
    );
    assert_eq!(
        h.text("Delete", json!({"file_path": "x"})).await,
        "Unknown tool: Delete"
    );
    // The Read cap: exactly the first 20,000 characters of the full result, then the count.
    let big: String = (0..30_000).map(|i| format!("line {i} é\n")).collect();
    h.text("Write", json!({"file_path": "big.txt", "content": big}))
        .await;
    let full: String = std::iter::once("big.txt".to_string())
        .chain((0..30_000).map(|i| format!("\n{}. line {i} é", i + 1)))
        .collect();
    assert_eq!(
        h.text("Read", json!({"file_path": "big.txt"})).await,
        lilypad::tools::cap_chars(full, 20_000)
    );
    h.out("rm big.txt").await;
    // A fifo is refused rather than read forever.
    h.out("mkfifo pipe").await;
    assert_eq!(
        h.text("Read", json!({"file_path": "pipe"})).await,
        "ValueError: 'pipe' is not a regular file"
    );
    h.out("rm pipe").await;
}

/// Write, Edit, their proposals, and the patch.
pub async fn writes_and_edits(h: &Harness, original: &Path) {
    assert_eq!(
        h.text(
            "Write",
            json!({"file_path": "new/dir/f.txt", "content": "hi\n"})
        )
        .await,
        "Wrote new/dir/f.txt (3 bytes)."
    );
    assert_eq!(
        h.text("Read", json!({"file_path": "new/dir/f.txt"})).await,
        "new/dir/f.txt\n1. hi"
    );
    assert_eq!(
        h.text("Write", json!({"file_path": "empty.txt", "content": ""}))
            .await,
        "Wrote empty.txt (0 bytes)."
    );
    assert_eq!(
        h.text("Write", json!({"file_path": "x.txt"})).await,
        "ValueError: content is required"
    );
    assert_eq!(
        h.text("Write", json!({"file_path": "src", "content": "x"}))
            .await,
        "IsADirectoryError: [Errno 21] Is a directory: 'src'"
    );
    // Writes keep the mode and the line endings.
    assert_eq!(
        h.text(
            "Write",
            json!({"file_path": "run.sh", "content": "#!/bin/sh\necho ran\n"})
        )
        .await,
        "Wrote run.sh (19 bytes)."
    );
    assert_eq!(h.out("stat -c %a run.sh").await, "755\n");
    assert_eq!(
        h.text(
            "Write",
            json!({"file_path": "crlf.txt", "content": "x\ny\n"})
        )
        .await,
        "Wrote crlf.txt (4 bytes)."
    );
    assert_eq!(h.out("wc -c < crlf.txt").await.trim(), "6");
    assert_eq!(
        h.text(
            "Edit",
            json!({"file_path": "crlf.txt", "old_string": "x\ny", "new_string": "z"})
        )
        .await,
        "Edited crlf.txt (1 replacement)."
    );
    assert_eq!(h.out("tr '\\r' R < crlf.txt").await, "zR\n");

    // Edit rules.
    assert_eq!(
        h.text(
            "Edit",
            json!({"file_path": "src/app.py", "old_string": "return 1", "new_string": "return 2"})
        )
        .await,
        "Edited src/app.py (1 replacement)."
    );
    assert_eq!(
        h.text("Edit", json!({"file_path": "dup.txt", "old_string": "x", "new_string": "y"})).await,
        "ValueError: old_string matched 3 times; set replace_all=true or use a more specific old_string"
    );
    assert_eq!(
        h.text("Edit", json!({"file_path": "dup.txt", "old_string": "x", "new_string": "y", "replace_all": "Yes"}))
            .await,
        "Edited dup.txt (3 replacements)."
    );
    assert_eq!(
        h.text(
            "Edit",
            json!({"file_path": "dup.txt", "old_string": "", "new_string": "y"})
        )
        .await,
        "ValueError: old_string must be non-empty"
    );
    assert_eq!(
        h.text(
            "Edit",
            json!({"file_path": "dup.txt", "old_string": "q", "new_string": "y"})
        )
        .await,
        "ValueError: old_string was not found"
    );
    assert_eq!(
        h.text(
            "Edit",
            json!({"file_path": "bin.dat", "old_string": "P", "new_string": "Q"})
        )
        .await,
        "ValueError: 'bin.dat' is a binary file; Edit only changes text files"
    );
    assert_eq!(
        h.text(
            "Edit",
            json!({"file_path": "gone.txt", "old_string": "a", "new_string": "b"})
        )
        .await,
        "FileNotFoundError: [Errno 2] No such file or directory: 'gone.txt'"
    );
    for p in ["link_out/evil", "../evil", "/tmp/evil"] {
        let r = h
            .text("Write", json!({"file_path": p, "content": "x"}))
            .await;
        assert!(r.starts_with("PermissionError: "), "{p}: {r}");
    }
    assert!(!super::host_exists("/etc/evil"));

    // Proposal, then approval of an edited text.
    let c = h
        .tools
        .propose(&h.call(
            "Edit",
            json!({"file_path": "README.md", "old_string": "demo", "new_string": "Demo"}),
        ))
        .await
        .unwrap();
    assert_eq!(c.shown_path, "README.md");
    assert_eq!(c.before, Before::Text("# demo\n".into()));
    assert_eq!(c.new_text, "# Demo\n");
    let r = h.tools.apply(&c, "# Demo, edited by the user\n").await;
    assert_eq!(r.content, "Edited README.md (1 replacement).");
    assert_eq!(h.out("cat README.md").await, "# Demo, edited by the user\n");
    // A proposal is refused if the file changed meanwhile, and nothing is written.
    let c = h
        .tools
        .propose(&h.call(
            "Write",
            json!({"file_path": "README.md", "content": "mine\n"}),
        ))
        .await
        .unwrap();
    h.out("echo theirs > README.md").await;
    let r = h.tools.apply(&c, &c.new_text).await;
    assert!(
        r.is_error
            && r.content
                .starts_with("RuntimeError: 'README.md' changed since"),
        "{}",
        r.content
    );
    assert_eq!(h.out("cat README.md").await, "theirs\n");
    // ... or if a new file appeared.
    let c = h
        .tools
        .propose(&h.call("Write", json!({"file_path": "late.txt", "content": "a"})))
        .await
        .unwrap();
    assert_eq!(c.before, Before::New);
    h.out("echo b > late.txt").await;
    assert!(h.tools.apply(&c, "a").await.is_error);
    h.out("rm late.txt").await;

    // The session patch applies to the original repository.
    let patch = lilypad::sandbox::workspace::Checkout::of(h.sb().as_ref())
        .export_patch()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&patch);
    assert!(text.contains("+++ b/src/app.py"), "{text}");
    assert!(text.contains("new file mode 100644"), "{text}");
    let check = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .args(["-a", &format!("{}/.", original.display())])
        .arg(check.path())
        .status()
        .unwrap();
    assert!(status.success());
    let pf = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(pf.path(), &patch).unwrap();
    let st = std::process::Command::new("git")
        .args(["apply"])
        .arg(pf.path())
        .current_dir(check.path())
        .status()
        .unwrap();
    assert!(st.success(), "git apply failed:\n{text}");
    assert_eq!(
        std::fs::read(check.path().join("crlf.txt")).unwrap(),
        b"z\r\n"
    );
    assert_eq!(
        std::fs::read_to_string(check.path().join("src/app.py")).unwrap(),
        "def f():\n    return 2\n"
    );
}

/// Bash formats.
pub async fn commands(h: &Harness) {
    let root = h.sb().root().to_string();
    assert_eq!(
        h.text(
            "Bash",
            json!({"command": "echo out; echo err >&2; exit 3", "description": "d"})
        )
        .await,
        bash_result(3, "out\n", "err\n")
    );
    assert_eq!(
        h.text("Bash", json!({"command": "pwd"})).await,
        bash_result(0, &format!("{root}\n"), "")
    );
    assert_eq!(
        h.text("Bash", json!({"command": ""})).await,
        "ValueError: command is required"
    );
    let t0 = std::time::Instant::now();
    assert_eq!(
        h.text(
            "Bash",
            json!({"command": "echo before; sleep 30", "timeout": "1500"})
        )
        .await,
        "Timed out after 1.5s\nSTDOUT:\nbefore\n\nSTDERR:\n"
    );
    assert!(
        t0.elapsed().as_secs() < 15,
        "timeout took {:?}",
        t0.elapsed()
    );
    // No stdin: a command reading it ends at once.
    assert_eq!(
        h.text("Bash", json!({"command": "cat", "timeout": 20}))
            .await,
        bash_result(0, "", "")
    );
    // Still usable after a timeout.
    assert_eq!(h.out("echo alive").await, "alive\n");
}
