//! Tar archives of a workspace: [`pack`] a host directory for upload into a pod (or
//! [`pack_only`] one of its entries), and
//! [`unpack`] what comes back from one.
//!
//! What comes back is untrusted (the model controls the pod's files): `unpack` writes only
//! below its destination. Entries with absolute paths or `..` are skipped, nothing is written
//! through a symlink (tar-rs checks every entry's parent), hard links may only point at files
//! already unpacked inside, and devices and fifos are skipped.

use super::SandboxError;
use std::path::{Component, Path};

/// A tar of `dir`'s contents (paths relative to it; symlinks stored as symlinks). `dir`
/// itself has no entry: the destination's own owner and mode must stay as they are (a
/// non-root extractor may not change them).
pub fn pack(dir: &Path) -> Result<Vec<u8>, SandboxError> {
    let err = |e| SandboxError::io("archiving", dir.display().to_string(), e);
    let mut b = tar::Builder::new(Vec::new());
    b.follow_symlinks(false);
    b.mode(tar::HeaderMode::Complete);
    let mut children: Vec<_> = std::fs::read_dir(dir).map_err(err)?.flatten().collect();
    children.sort_by_key(|e| e.file_name());
    for child in children {
        let path = child.path();
        let name = child.file_name();
        if child.file_type().map_err(err)?.is_dir() {
            b.append_dir_all(&name, &path).map_err(err)?;
        } else {
            b.append_path_with_name(&path, &name).map_err(err)?;
        }
    }
    b.into_inner().map_err(err)
}

/// A tar of the one entry `name` of `dir` (a directory, with its contents), as [`pack`] writes
/// it.
pub fn pack_only(dir: &Path, name: &str) -> Result<Vec<u8>, SandboxError> {
    let err = |e| SandboxError::io("archiving", dir.join(name).display().to_string(), e);
    let mut b = tar::Builder::new(Vec::new());
    b.follow_symlinks(false);
    b.mode(tar::HeaderMode::Complete);
    b.append_dir_all(name, dir.join(name)).map_err(err)?;
    b.into_inner().map_err(err)
}

/// Unpack `data` below `dest` (an existing directory), safely (see the module docs).
/// Returns the number of entries skipped as unsafe.
pub fn unpack(data: &[u8], dest: &Path) -> Result<usize, SandboxError> {
    let show = || dest.display().to_string();
    let mut archive = tar::Archive::new(data);
    archive.set_preserve_permissions(true);
    archive.set_unpack_xattrs(false);
    archive.set_overwrite(true);
    let mut skipped = 0;
    let entries = archive
        .entries()
        .map_err(|e| SandboxError::io("reading archive for", show(), e))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| SandboxError::io("reading archive for", show(), e))?;
        let path = entry
            .path()
            .map_err(|e| SandboxError::io("reading archive for", show(), e))?
            .into_owned();
        let safe = path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        let kind = entry.header().entry_type();
        let allowed = kind.is_file() || kind.is_dir() || kind.is_symlink() || kind.is_hard_link();
        if !safe || !allowed {
            skipped += 1;
            continue;
        }
        if kind.is_hard_link() {
            // Copy the earlier file instead of linking, and only from inside `dest`.
            let target = entry.link_name().ok().flatten().map(|t| t.into_owned());
            let ok = target.as_deref().is_some_and(|t| {
                t.components()
                    .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
            });
            let (Some(target), true) = (target, ok) else {
                skipped += 1;
                continue;
            };
            let src = dest.join(&target);
            let real = std::fs::canonicalize(&src).ok();
            let root = std::fs::canonicalize(dest).ok();
            match (real, root) {
                (Some(r), Some(d)) if r.starts_with(&d) && r.is_file() => {
                    if let Some(parent) = dest.join(&path).parent() {
                        let inside = std::fs::canonicalize(parent).is_ok_and(|p| p.starts_with(&d));
                        if !inside {
                            skipped += 1;
                            continue;
                        }
                    }
                    std::fs::copy(&r, dest.join(&path)).map_err(|e| {
                        SandboxError::io("unpacking", path.display().to_string(), e)
                    })?;
                }
                _ => skipped += 1,
            }
            continue;
        }
        match entry.unpack_in(dest) {
            Ok(true) => {}
            Ok(false) => skipped += 1,
            // tar-rs refuses to write through a symlink that leads outside: skip the entry.
            Err(e) if e.to_string().contains("outside of destination") => skipped += 1,
            Err(e) => return Err(SandboxError::io("unpacking", path.display().to_string(), e)),
        }
    }
    Ok(skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_entry(
        b: &mut tar::Builder<Vec<u8>>,
        name: &[u8],
        kind: tar::EntryType,
        link: Option<&[u8]>,
        data: &[u8],
    ) {
        let mut h = tar::Header::new_old();
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        if let Some(l) = link {
            h.as_old_mut().linkname[..l.len()].copy_from_slice(l);
        }
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }

    #[test]
    fn hostile_entries_stay_inside() {
        let outside = tempfile::tempdir().unwrap();
        let out = outside.path().to_str().unwrap().as_bytes().to_vec();
        let mut b = tar::Builder::new(Vec::new());
        raw_entry(&mut b, b"ok.txt", tar::EntryType::Regular, None, b"fine");
        raw_entry(&mut b, b"../evil1", tar::EntryType::Regular, None, b"x");
        let abs = [out.as_slice(), b"/evil2"].concat();
        raw_entry(&mut b, &abs, tar::EntryType::Regular, None, b"x");
        raw_entry(&mut b, b"esc", tar::EntryType::Symlink, Some(&out), b"");
        raw_entry(&mut b, b"esc/evil3", tar::EntryType::Regular, None, b"x");
        raw_entry(
            &mut b,
            b"hard",
            tar::EntryType::Link,
            Some(b"../../etc/passwd"),
            b"",
        );
        raw_entry(&mut b, b"hard2", tar::EntryType::Link, Some(b"ok.txt"), b"");
        raw_entry(&mut b, b"dev", tar::EntryType::Char, None, b"");
        let data = b.into_inner().unwrap();
        let dest = tempfile::tempdir().unwrap();
        let skipped = unpack(&data, dest.path()).unwrap();
        assert_eq!(std::fs::read(dest.path().join("ok.txt")).unwrap(), b"fine");
        assert_eq!(std::fs::read(dest.path().join("hard2")).unwrap(), b"fine");
        assert_eq!(
            std::fs::read_dir(outside.path()).unwrap().count(),
            0,
            "wrote outside"
        );
        assert!(!dest.path().join("hard").exists());
        assert!(!dest.path().join("dev").exists());
        assert!(skipped >= 5, "{skipped}");
    }

    #[test]
    fn pack_round_trips() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir(src.path().join("d")).unwrap();
        std::fs::write(src.path().join("d/f"), b"data").unwrap();
        std::os::unix::fs::symlink("d/f", src.path().join("l")).unwrap();
        let dest = tempfile::tempdir().unwrap();
        assert_eq!(unpack(&pack(src.path()).unwrap(), dest.path()).unwrap(), 0);
        assert_eq!(std::fs::read(dest.path().join("d/f")).unwrap(), b"data");
        assert_eq!(
            std::fs::read_link(dest.path().join("l")).unwrap(),
            Path::new("d/f")
        );
    }
}
