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

/// The tag that picks `file` among `files` (a snapshot's paths), read from the end of its
/// name (`M-Q8_0.gguf`: `Q8_0`; `M-BF16-00001-of-00002.gguf`: `BF16`), so that
/// `ORG/NAME:TAG` names that file; `None` when no part of the name picks it.
pub(crate) fn tag_of(files: &[String], file: &str) -> Option<String> {
    let base = file.rsplit('/').next()?;
    let mut stem = &base[..base.len().checked_sub(".gguf".len())?];
    if split_part(base).is_some() {
        stem = &stem[..stem.len().checked_sub("-00001-of-00000".len())?];
    }
    stem.rsplit(['-', '.'])
        .filter(|seg| !seg.is_empty())
        .find(|seg| choose(files, Some(seg)).is_some_and(|p| p[0] == file))
        .map(str::to_string)
}

/// The files of a safetensors checkpoint repository that `lilypad convert` reads, config.json
/// first (so that its architecture can be checked before the weights come): the weights
/// (`*.safetensors` at the top level, and their index), the tokenizer and its config, the chat
/// template file. `None` when `files` is no such repository (no config.json or no weights).
pub(crate) fn checkpoint_files(files: &[String]) -> Option<Vec<String>> {
    const READ: [&str; 4] = [
        "model.safetensors.index.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
    ];
    let top = |f: &&String| !f.contains('/');
    let weights: Vec<String> = files
        .iter()
        .filter(top)
        .filter(|f| f.ends_with(".safetensors"))
        .cloned()
        .collect();
    if weights.is_empty() || !files.iter().any(|f| f == "config.json") {
        return None;
    }
    let mut out = vec!["config.json".to_string()];
    out.extend(
        READ.iter()
            .filter(|r| files.iter().any(|f| f == *r))
            .map(|r| r.to_string()),
    );
    out.extend(weights);
    Some(out)
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

    #[test]
    fn a_checkpoint_is_what_convert_reads() {
        let files = names(&[
            "README.md",
            "model-00002-of-00002.safetensors",
            "model-00001-of-00002.safetensors",
            "config.json",
            "model.safetensors.index.json",
            "tokenizer.json",
            "tokenizer_config.json",
            "vocab.json",
            "sub/extra.safetensors",
        ]);
        assert_eq!(
            checkpoint_files(&files).unwrap(),
            [
                "config.json",
                "model.safetensors.index.json",
                "tokenizer.json",
                "tokenizer_config.json",
                "model-00002-of-00002.safetensors",
                "model-00001-of-00002.safetensors",
            ]
        );
        assert!(checkpoint_files(&names(&["config.json", "m-Q8_0.gguf"])).is_none());
        assert!(checkpoint_files(&names(&["model.safetensors"])).is_none());
    }

    #[test]
    fn the_tag_that_names_a_file() {
        let files = names(&[
            "M-Q8_0.gguf",
            "M-Q4_K_M.gguf",
            "sub/M.BF16-00001-of-00002.gguf",
            "sub/M.BF16-00002-of-00002.gguf",
        ]);
        assert_eq!(tag_of(&files, "M-Q8_0.gguf").as_deref(), Some("Q8_0"));
        assert_eq!(
            tag_of(&files, "sub/M.BF16-00001-of-00002.gguf").as_deref(),
            Some("BF16")
        );
        assert_eq!(tag_of(&names(&["M.gguf"]), "M.gguf").as_deref(), Some("M"));
        // Every part of this name picks the other file (tags match in any case).
        let twins = names(&["M-Q8_0.gguf", "m-q8_0.gguf"]);
        assert_eq!(tag_of(&twins, "m-q8_0.gguf"), None);
    }
}
