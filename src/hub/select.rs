//! Choosing a GGUF repository's file by tag, as llama.cpp's `-hf ORG/NAME:TAG` does: a `.gguf`
//! name holding the tag (any case) followed by `.` or `-`; `mmproj` and `imatrix` files are
//! never chosen; a split model (`-00001-of-0000N.gguf`) is all its parts. Without a tag:
//! `Q4_K_M`, then `Q8_0`, then the first file.

/// The tags tried, in order, when none is given.
const DEFAULT_TAGS: [&str; 2] = ["Q4_K_M", "Q8_0"];

/// `(part, count)` of a split file name (`…-00001-of-00003.gguf`).
fn split_part(name: &str) -> Option<(u32, u32)> {
    let stem = name.strip_suffix(".gguf")?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (_, part) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(part) && digits(count)) {
        return None;
    }
    Some((part.parse().ok()?, count.parse().ok()?))
}

/// Whether `name` (a path in the repository) can be a model's (first) file.
fn candidate(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".gguf")
        && !lower.contains("mmproj")
        && !lower.contains("imatrix")
        && split_part(name).is_none_or(|(part, _)| part == 1)
}

fn has_tag(name: &str, tag: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let tag = tag.to_ascii_lowercase();
    lower
        .match_indices(&tag)
        .any(|(at, _)| matches!(lower.as_bytes().get(at + tag.len()), Some(b'.' | b'-')))
}

/// The files to fetch for `tag` among `files` (the repository's paths): the chosen file, or
/// every part of a split one in order (the first part first). `None` when nothing fits.
pub fn choose(files: &[String], tag: Option<&str>) -> Option<Vec<String>> {
    let mut sorted: Vec<&String> = files.iter().filter(|f| candidate(f)).collect();
    sorted.sort();
    let tags: Vec<&str> = match tag {
        Some(t) => vec![t],
        None => DEFAULT_TAGS.to_vec(),
    };
    let first = tags
        .iter()
        .find_map(|t| sorted.iter().find(|f| has_tag(f, t)))
        .or_else(|| tag.is_none().then(|| sorted.first()).flatten())?;
    Some(parts(first))
}

/// A file and, when it is the first part of a split model, all its parts' names.
fn parts(first: &str) -> Vec<String> {
    match split_part(first) {
        Some((_, count)) => {
            let prefix = &first[..first.len() - "00001-of-00000.gguf".len()];
            (1..=count)
                .map(|i| format!("{prefix}{i:05}-of-{count:05}.gguf"))
                .collect()
        }
        None => vec![first.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn tag_picks_like_llama_cpp() {
        let files = names(&[
            "README.md",
            "M-Q8_0.gguf",
            "M-Q4_K_M.gguf",
            "mmproj-M-Q4_K_M.gguf",
            "M.imatrix-Q4_K_M.gguf",
            "M-BF16-00001-of-00002.gguf",
            "M-BF16-00002-of-00002.gguf",
        ]);
        assert_eq!(choose(&files, Some("q8_0")).unwrap(), ["M-Q8_0.gguf"]);
        assert_eq!(choose(&files, None).unwrap(), ["M-Q4_K_M.gguf"]);
        assert_eq!(
            choose(&files, Some("bf16")).unwrap(),
            ["M-BF16-00001-of-00002.gguf", "M-BF16-00002-of-00002.gguf"]
        );
        assert!(choose(&files, Some("Q5_K_M")).is_none());
        assert!(choose(&files, Some("Q8")).is_none(), "Q8 is followed by _");
        let only = names(&["b-F16.gguf", "a-F32.gguf"]);
        assert_eq!(choose(&only, None).unwrap(), ["a-F32.gguf"]);
        assert_eq!(
            choose(&names(&["x-Q8_0.gguf", "x-Q8_0.gguf.bak"]), None).unwrap(),
            ["x-Q8_0.gguf"]
        );
        assert!(choose(&names(&["mmproj-F16.gguf"]), None).is_none());
    }
}
