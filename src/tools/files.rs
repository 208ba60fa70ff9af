//! Read (numbered lines, capped) and Glob (sorted workdir-relative paths, capped).

use super::args::Args;
use super::format::{cap_chars, Failure};
use super::paths::{self, Target};
use super::ToolLimits;
use crate::sandbox::{EntryKind, Sandbox, SandboxExt};

/// Bytes examined to decide that a file is binary (as git does: a NUL byte).
const SNIFF_BYTES: usize = 8000;

/// True for content that should not be shown or edited as text.
pub(crate) fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0)
}

/// A target that must be an existing file.
pub(crate) fn expect_file(t: &Target) -> Result<(), Failure> {
    match t.kind {
        EntryKind::File => Ok(()),
        // A fifo or device would block or stream forever.
        EntryKind::Other => Err(Failure::value(format!(
            "'{}' is not a regular file",
            t.shown
        ))),
        EntryKind::Dir => Err(Failure::new(
            "IsADirectoryError",
            format!("[Errno 21] Is a directory: '{}'", t.shown),
        )),
        EntryKind::Missing => Err(Failure::new(
            "FileNotFoundError",
            format!("[Errno 2] No such file or directory: '{}'", t.shown),
        )),
    }
}

pub(crate) async fn read(
    sb: &dyn Sandbox,
    a: &Args<'_>,
    lim: &ToolLimits,
) -> Result<String, Failure> {
    let raw = a.file_path()?;
    let offset = a.int("offset")?.unwrap_or(1).max(1) as usize;
    let limit = a.int("limit")?.filter(|l| *l > 0).map(|l| l as usize);
    let t = paths::resolve(sb, &raw).await?;
    expect_file(&t)?;
    let bytes = sb
        .read(&t.path)
        .await
        .map_err(|e| Failure::from_sandbox(&e, &t.shown))?;
    if is_binary(&bytes) {
        return Ok(format!(
            "{}\n[binary file, {} bytes: not shown as text]",
            t.shown,
            bytes.len()
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut out = t.shown.clone();
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let mut shown_lines = 0usize;
    if !text.is_empty() {
        let lines = body.split('\n').enumerate().skip(offset - 1);
        let lines: Box<dyn Iterator<Item = (usize, &str)>> = match limit {
            Some(l) => Box::new(lines.take(l)),
            None => Box::new(lines),
        };
        for (i, line) in lines {
            shown_lines += 1;
            out.push('\n');
            out.push_str(&(i + 1).to_string());
            out.push_str(". ");
            out.push_str(line.strip_suffix('\r').unwrap_or(line));
            if out.len() > lim.read_chars * 4 + 64 {
                // Far past the cap already: the rest would only be cut. Count it instead.
                return Ok(cap_with_rest(out, &text, i, lim.read_chars));
            }
        }
    }
    if shown_lines == 0 {
        // Leaf writes the path line and its newline, then the numbered lines joined: with no
        // line to show (an offset past the end, an empty file) the newline stays.
        out.push('\n');
    }
    Ok(cap_chars(out, lim.read_chars))
}

/// Cap a Read result built up to line index `last` of `text`, counting the characters the
/// remaining lines would have added.
fn cap_with_rest(out: String, text: &str, last: usize, cap: usize) -> String {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let rest: u64 = body
        .split('\n')
        .enumerate()
        .skip(last + 1)
        .map(|(i, l)| {
            (1 + (i + 1).to_string().len() + 2 + l.strip_suffix('\r').unwrap_or(l).chars().count())
                as u64
        })
        .sum();
    let total = out.chars().count() as u64 + rest;
    super::format::cut_with_total(&out, cap, total)
}

pub(crate) async fn glob(
    sb: &dyn Sandbox,
    a: &Args<'_>,
    lim: &ToolLimits,
) -> Result<String, Failure> {
    let pattern = a.required("pattern")?;
    let dir = match a.string("path")? {
        Some(p) if !p.is_empty() => p,
        _ => sb.workdir().to_string(),
    };
    let t = paths::resolve(sb, &dir).await?;
    match t.kind {
        EntryKind::Dir => {}
        EntryKind::Missing => {
            return Err(Failure::new(
                "FileNotFoundError",
                format!("[Errno 2] No such file or directory: '{}'", t.shown),
            ))
        }
        _ => {
            return Err(Failure::new(
                "NotADirectoryError",
                format!("[Errno 20] Not a directory: '{}'", t.shown),
            ))
        }
    }
    let absolute = pattern.starts_with('/');
    let pat = if absolute {
        paths::normalize(&pattern)
    } else {
        pattern.trim_start_matches("./").to_string()
    };
    let matcher = globset::GlobBuilder::new(&pat)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| Failure::value(format!("invalid glob pattern '{pattern}': {e}")))?
        .compile_matcher();
    let files = sb
        .list_files(&t.path)
        .await
        .map_err(|e| Failure::from_sandbox(&e, &t.shown))?;
    let base = t.path.trim_end_matches('/');
    let full = |rel: &str| format!("{base}/{rel}");
    let matched: Vec<&String> = files
        .iter()
        .filter(|rel| {
            if absolute {
                matcher.is_match(full(rel))
            } else {
                matcher.is_match(rel.as_str())
            }
        })
        .collect();
    if matched.is_empty() {
        return Ok("No files matched.".into());
    }
    let hits: Vec<String> = if paths::within(&t.path, sb.workdir()) {
        // `files` is sorted and, below the workdir, every shown path is the directory's shown
        // path plus the relative one: the first matches are the first shown, so only the
        // listed ones are formatted.
        matched
            .iter()
            .take(lim.glob_files)
            .map(|rel| paths::shown(sb, &full(rel)))
            .collect()
    } else {
        let mut all: Vec<String> = matched
            .iter()
            .map(|rel| paths::shown(sb, &full(rel)))
            .collect();
        all.sort();
        all.truncate(lim.glob_files);
        all
    };
    let more = matched.len() - hits.len();
    let mut out = hits.join("\n");
    if more > 0 {
        out.push_str(&format!("\n... {more} more files"));
    }
    Ok(out)
}
