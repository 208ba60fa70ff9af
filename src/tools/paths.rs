//! Path rules, the same for every sandbox: a path the model gives resolves against the
//! workdir (`~` and `~/...` mean the workspace root), is normalised lexically (`.`, `..`, `//`)
//! as Python's `os.path.abspath` would, must stay inside the workspace, and then has its
//! symlinks resolved by the sandbox; a result outside the workspace is refused too. Every
//! operation then uses the resolved path, so a symlink can never lead a tool outside.

use super::format::Failure;
use crate::sandbox::{EntryKind, Sandbox, SandboxExt};

/// A path the tools may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// Canonical sandbox path (inside the root).
    pub path: String,
    /// How results name it: relative to the workdir.
    pub shown: String,
    pub kind: EntryKind,
}

/// Resolve a path argument (see the module docs).
pub(crate) async fn resolve(sb: &dyn Sandbox, raw: &str) -> Result<Target, Failure> {
    let root = sb.root();
    let joined = if raw == "~" {
        root.to_string()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        format!("{root}/{rest}")
    } else if raw.starts_with('/') {
        raw.to_string()
    } else {
        format!("{}/{raw}", sb.workdir())
    };
    let lexical = normalize(&joined);
    if !within(&lexical, root) {
        return Err(Failure::new(
            "PermissionError",
            format!("'{raw}' is outside the workspace; only paths inside {root} can be used"),
        ));
    }
    let resolved = sb
        .resolve(&lexical)
        .await
        .map_err(|e| Failure::from_sandbox(&e, raw))?;
    let path = normalize(&resolved.path);
    if !within(&path, root) {
        return Err(Failure::new(
            "PermissionError",
            format!(
                "'{raw}' resolves through a symlink to {path}, outside the workspace; \
                 only paths inside {root} can be used"
            ),
        ));
    }
    Ok(Target {
        shown: shown(sb, &path),
        path,
        kind: resolved.kind,
    })
}

/// How results name a sandbox path: relative to the workdir (`.` for the workdir itself).
pub(crate) fn shown(sb: &dyn Sandbox, path: &str) -> String {
    relative(path, sb.workdir())
}

/// Lexical normalisation of an absolute path: no `.`, no `..` (above `/` stays `/`), no `//`.
pub(crate) fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

/// True when `path` is `root` or below it (both normalised).
pub(crate) fn within(path: &str, root: &str) -> bool {
    path == root || root == "/" || path.strip_prefix(root).is_some_and(|r| r.starts_with('/'))
}

/// `path` relative to `base` (both normalised, absolute), with `..` where needed.
pub(crate) fn relative(path: &str, base: &str) -> String {
    let p: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let b: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out: Vec<&str> = vec![".."; b.len() - common];
    out.extend(&p[common..]);
    if out.is_empty() {
        ".".into()
    } else {
        out.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_and_within() {
        assert_eq!(normalize("/w/./a//b/../c"), "/w/a/c");
        assert_eq!(normalize("/w/../../etc"), "/etc");
        assert!(within("/w", "/w") && within("/w/a", "/w"));
        assert!(!within("/wx", "/w") && !within("/etc", "/w"));
    }

    #[test]
    fn relative_paths() {
        assert_eq!(relative("/w/a/b.txt", "/w"), "a/b.txt");
        assert_eq!(relative("/w", "/w"), ".");
        assert_eq!(relative("/w/x", "/w/sub"), "../x");
    }
}
