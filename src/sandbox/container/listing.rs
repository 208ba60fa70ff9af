//! The output of the listing helper ([`super::scripts::LIST`]) and the ignore rules applied to
//! it, as git would apply them.
//!
//! Owns: splitting a listing into files and ignore files, and filtering the files by those
//! ignore files (a deeper ignore file wins; nothing below an ignored directory comes back).
//!
//! Does not own: running the helper (`super::ops`) or sorting the result.

use std::collections::HashMap;

/// The output of [`super::scripts::LIST`]: the files (relative to `dir`), and the non-empty ignore
/// files as `(absolute path, content)`.
pub(super) fn parse_listing(dir: &str, out: &[u8]) -> (Vec<String>, Vec<(String, String)>) {
    let mut records = out.split(|b| *b == 0);
    let files: Vec<String> = records
        .by_ref()
        .take_while(|r| !r.is_empty())
        .map(|r| {
            String::from_utf8_lossy(r)
                .trim_start_matches("./")
                .to_string()
        })
        .collect();
    let rest: Vec<&[u8]> = records.collect();
    let rules = rest
        .chunks(2)
        .filter(|pair| pair.len() == 2 && !pair[1].is_empty())
        .map(|pair| {
            let path = String::from_utf8_lossy(pair[0]).into_owned();
            let path = match path.strip_prefix("./") {
                Some(rel) => format!("{dir}/{rel}"),
                None => path,
            };
            (path, String::from_utf8_lossy(pair[1]).into_owned())
        })
        .collect();
    (files, rules)
}

/// Drop the files (relative to `dir`) that the ignore files (`(path, content)`, absolute
/// paths) exclude, with git's rules: a deeper ignore file wins, and nothing below an ignored
/// directory can be re-included.
pub(super) fn filter_ignored(
    dir: &str,
    files: Vec<String>,
    rules: &[(String, String)],
) -> Vec<String> {
    use ignore::gitignore::{Gitignore, GitignoreBuilder};
    use ignore::Match;
    let mut matchers: Vec<(String, Gitignore)> = Vec::new();
    for (path, content) in rules {
        let base = path
            .trim_end_matches(".gitignore")
            .trim_end_matches('/')
            .to_string();
        let mut b = GitignoreBuilder::new(if base.is_empty() { "/" } else { &base });
        for line in content.lines() {
            let _ = b.add_line(None, line);
        }
        if let Ok(g) = b.build() {
            matchers.push((base, g));
        }
    }
    // By directory: a path is judged by the ignore files of its ancestors, deepest first, so
    // the first decisive answer wins. Looking the ancestors up costs the path's depth, not the
    // number of ignore files (a kernel tree has hundreds).
    let by_base: HashMap<&str, &Gitignore> =
        matchers.iter().map(|(b, g)| (b.as_str(), g)).collect();
    let ignored = |abs: &str, is_dir: bool| -> bool {
        let mut cur = abs;
        while let Some((parent, _)) = cur.rsplit_once('/') {
            if let Some(g) = by_base.get(parent) {
                match g.matched(abs, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            cur = parent;
        }
        false
    };
    let mut dir_cache: HashMap<String, bool> = HashMap::new();
    files
        .into_iter()
        .filter(|rel| {
            let abs = format!("{dir}/{rel}");
            let mut cur = String::from(dir);
            for comp in rel
                .split('/')
                .collect::<Vec<_>>()
                .iter()
                .rev()
                .skip(1)
                .rev()
            {
                cur = format!("{cur}/{comp}");
                let hit = *dir_cache
                    .entry(cur.clone())
                    .or_insert_with(|| ignored(&cur, true));
                if hit {
                    return false;
                }
            }
            !ignored(&abs, false)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_split_into_files_and_ignore_files() {
        let out = b"./a.py\0./src/.gitignore\0\0/w/.gitignore\0*.log\n\0./src/.gitignore\0gen\n\0/w/missing\0\0";
        let (files, rules) = parse_listing("/w/x", out);
        assert_eq!(files, vec!["a.py", "src/.gitignore"]);
        assert_eq!(
            rules,
            vec![
                ("/w/.gitignore".to_string(), "*.log\n".to_string()),
                ("/w/x/src/.gitignore".to_string(), "gen\n".to_string()),
            ]
        );
        let (files, rules) = parse_listing("/w", b"\0");
        assert!(files.is_empty() && rules.is_empty());
    }

    #[test]
    fn gitignore_rules_like_git() {
        let files = vec![
            "a.py".to_string(),
            "build/out.o".into(),
            "src/keep.log".into(),
            "src/x.log".into(),
            "src/gen/y.rs".into(),
        ];
        let rules = vec![
            ("/w/.gitignore".to_string(), "build/\n*.log\n".to_string()),
            (
                "/w/src/.gitignore".to_string(),
                "!keep.log\ngen\n".to_string(),
            ),
        ];
        let kept = filter_ignored("/w", files, &rules);
        assert_eq!(kept, vec!["a.py", "src/keep.log"]);
    }
}
