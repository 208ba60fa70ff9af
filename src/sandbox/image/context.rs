//! A directory as a tar for the Docker engine (a build context, or a workspace for the setup
//! container), with a digest of its contents that does not depend on when the files were
//! written.
//!
//! Owns: the walk (sorted, `.git` always left out, symlinks kept as symlinks, devices and
//! sockets skipped), `.dockerignore` rules, and the digest: SHA-256 over each entry's kind,
//! relative path, mode and contents (or link target), in walk order. Modification times go into
//! the tar, not into the digest, so a fresh checkout of the same files hashes the same.
//!
//! `.dockerignore` is read from the context's root as Docker does: one pattern per line, `#`
//! comments, `!` re-includes, patterns relative to the root (a leading `/` changes nothing),
//! `*` within a name, `**` across directories; a pattern that matches a directory excludes
//! what is below it, and the last matching pattern decides.

use super::ImageError;
use globset::{GlobBuilder, GlobMatcher};
use ring::digest::{Context, SHA256};
use std::path::Path;

/// A packed directory.
#[derive(Debug)]
pub struct Packed {
    pub tar: Vec<u8>,
    /// Lower-case hex SHA-256 of the contents (see the module docs).
    pub digest: String,
    /// Files and links packed.
    pub entries: usize,
}

/// `.dockerignore` rules.
#[derive(Debug, Default)]
pub struct DockerIgnore {
    rules: Vec<(GlobMatcher, bool)>,
}

impl DockerIgnore {
    /// The rules in `dir/.dockerignore` (none when there is no such file).
    pub fn load(dir: &Path) -> Result<Self, ImageError> {
        let path = dir.join(".dockerignore");
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text).map_err(|(pattern, source)| ImageError::Ignore {
                path,
                pattern,
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(ImageError::Read { path, source }),
        }
    }

    /// Rules from the text of a `.dockerignore`.
    pub fn parse(text: &str) -> Result<Self, (String, globset::Error)> {
        let mut rules = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negated, pattern) = match line.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, line),
            };
            let pattern = pattern.trim_start_matches('/').trim_end_matches('/');
            let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
            if pattern.is_empty() {
                continue;
            }
            let glob = GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| (line.to_string(), e))?;
            rules.push((glob.compile_matcher(), negated));
        }
        Ok(Self { rules })
    }

    /// Whether `rel` (a `/`-separated path relative to the root) is left out.
    pub fn excludes(&self, rel: &str) -> bool {
        let mut excluded = false;
        for (glob, negated) in &self.rules {
            let hit = glob.is_match(rel)
                || rel
                    .match_indices('/')
                    .any(|(i, _)| glob.is_match(&rel[..i]));
            if hit {
                excluded = !negated;
            }
        }
        excluded
    }

    fn has_negations(&self) -> bool {
        self.rules.iter().any(|(_, n)| *n)
    }
}

/// Pack `dir` (entries named `prefix` + relative path), leaving out `.git` and what `ignore`
/// excludes; `extra` entries (name, contents) are appended as regular files.
pub fn pack(
    dir: &Path,
    prefix: &str,
    ignore: &DockerIgnore,
    extra: &[(String, Vec<u8>)],
) -> Result<Packed, ImageError> {
    let mut p = Packer {
        tar: tar::Builder::new(Vec::new()),
        hash: Context::new(&SHA256),
        entries: 0,
        ignore,
        prefix,
    };
    if !prefix.is_empty() {
        p.dir_entry(dir, prefix.trim_end_matches('/'))?;
    }
    p.walk(dir, dir)?;
    for (name, data) in extra {
        p.hash.update(b"F");
        p.hash.update(name.as_bytes());
        p.hash.update(&[0]);
        p.hash.update(data);
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        let path = format!("{prefix}{name}");
        p.tar
            .append_data(&mut h, &path, data.as_slice())
            .map_err(|e| context_err(dir, e))?;
        p.entries += 1;
    }
    let tar = p.tar.into_inner().map_err(|e| context_err(dir, e))?;
    Ok(Packed {
        tar,
        digest: hex(p.hash.finish().as_ref()),
        entries: p.entries,
    })
}

fn context_err(dir: &Path, source: std::io::Error) -> ImageError {
    ImageError::Context {
        path: dir.to_path_buf(),
        source,
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `parts`, each followed by a NUL, as hex.
pub fn digest_of(parts: &[&[u8]]) -> String {
    let mut c = Context::new(&SHA256);
    for p in parts {
        c.update(p);
        c.update(&[0]);
    }
    hex(c.finish().as_ref())
}

struct Packer<'a> {
    tar: tar::Builder<Vec<u8>>,
    hash: Context,
    entries: usize,
    ignore: &'a DockerIgnore,
    prefix: &'a str,
}

impl Packer<'_> {
    fn walk(&mut self, root: &Path, dir: &Path) -> Result<(), ImageError> {
        use std::os::unix::fs::PermissionsExt;
        let mut children: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| context_err(dir, e))?
            .collect::<Result<_, _>>()
            .map_err(|e| context_err(dir, e))?;
        children.sort_by_key(|e| e.file_name());
        for child in children {
            let path = child.path();
            let Ok(rel) = path.strip_prefix(root) else {
                continue;
            };
            let rel = rel.to_string_lossy().replace('\\', "/");
            if rel == ".git" || rel.ends_with("/.git") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).map_err(|e| context_err(&path, e))?;
            let excluded = self.ignore.excludes(&rel);
            let name = format!("{}{rel}", self.prefix);
            if meta.is_dir() {
                if excluded && !self.ignore.has_negations() {
                    continue;
                }
                if !excluded {
                    self.dir_entry(&path, &name)?;
                }
                self.walk(root, &path)?;
            } else if excluded {
                continue;
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).map_err(|e| context_err(&path, e))?;
                self.hash.update(b"L");
                self.hash.update(rel.as_bytes());
                self.hash.update(&[0]);
                self.hash.update(target.to_string_lossy().as_bytes());
                self.hash.update(&[0]);
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_size(0);
                h.set_mode(0o777);
                h.set_mtime(mtime(&meta));
                self.tar
                    .append_link(&mut h, &name, &target)
                    .map_err(|e| context_err(&path, e))?;
                self.entries += 1;
            } else if meta.is_file() {
                let data = std::fs::read(&path).map_err(|e| context_err(&path, e))?;
                let mode = meta.permissions().mode() & 0o7777;
                self.hash.update(b"F");
                self.hash.update(rel.as_bytes());
                self.hash.update(&[0]);
                self.hash.update(format!("{mode:o}").as_bytes());
                self.hash.update(&[0]);
                self.hash.update(&(data.len() as u64).to_le_bytes());
                self.hash.update(&data);
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(data.len() as u64);
                h.set_mode(mode);
                h.set_mtime(mtime(&meta));
                self.tar
                    .append_data(&mut h, &name, data.as_slice())
                    .map_err(|e| context_err(&path, e))?;
                self.entries += 1;
            }
        }
        Ok(())
    }

    fn dir_entry(&mut self, path: &Path, name: &str) -> Result<(), ImageError> {
        self.hash.update(b"D");
        self.hash.update(name.as_bytes());
        self.hash.update(&[0]);
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_size(0);
        h.set_mode(0o755);
        h.set_mtime(0);
        self.tar
            .append_data(&mut h, format!("{name}/"), std::io::empty())
            .map_err(|e| context_err(path, e))
    }
}

fn mtime(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    u64::try_from(meta.mtime()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tar: &[u8]) -> Vec<String> {
        let mut a = tar::Archive::new(tar);
        a.entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn dockerignore_rules() {
        let ig =
            DockerIgnore::parse("# comment\n/target\n*.log\n**/__pycache__\ndocs\n!docs/keep.md\n")
                .unwrap();
        assert!(ig.excludes("target"));
        assert!(ig.excludes("target/debug/x"));
        assert!(ig.excludes("a.log"));
        assert!(
            !ig.excludes("sub/a.log"),
            "`*.log` matches at the root only"
        );
        assert!(ig.excludes("pkg/__pycache__/m.pyc"));
        assert!(ig.excludes("docs/other.md"));
        assert!(
            !ig.excludes("docs/keep.md"),
            "the last matching rule decides"
        );
        assert!(!ig.excludes("src/main.py"));
    }

    #[test]
    fn pack_honours_the_ignore_file_and_the_digest_ignores_mtimes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::create_dir_all(d.join(".git")).unwrap();
        std::fs::create_dir_all(d.join("build")).unwrap();
        std::fs::write(d.join("src/a.py"), "print(1)\n").unwrap();
        std::fs::write(d.join("build/out.bin"), "x").unwrap();
        std::fs::write(d.join(".git/HEAD"), "ref").unwrap();
        std::fs::write(d.join(".dockerignore"), "build\n").unwrap();
        let ig = DockerIgnore::load(d).unwrap();
        let a = pack(d, "", &ig, &[]).unwrap();
        let n = names(&a.tar);
        assert!(n.contains(&"src/a.py".to_string()), "{n:?}");
        assert!(
            !n.iter()
                .any(|p| p.starts_with("build") || p.starts_with(".git")),
            "{n:?}"
        );
        // Touching a file changes its mtime, not the digest; changing its bytes does.
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(d.join("src/a.py"))
            .unwrap()
            .set_modified(t)
            .unwrap();
        assert_eq!(pack(d, "", &ig, &[]).unwrap().digest, a.digest);
        std::fs::write(d.join("src/a.py"), "print(2)\n").unwrap();
        assert_ne!(pack(d, "", &ig, &[]).unwrap().digest, a.digest);
        let b = pack(d, "workspace/", &DockerIgnore::default(), &[]).unwrap();
        let n = names(&b.tar);
        assert!(n.contains(&"workspace/build/out.bin".to_string()), "{n:?}");
    }
}
