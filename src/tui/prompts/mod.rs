//! Prompt files: Markdown files whose text a person sends with `/name` from the command
//! palette, as Codex's custom prompts. A file may open with front matter between two `---`
//! lines (`description:` and `argument-hint:`, shown in the palette); the rest is the prompt.
//! Sending it expands `$1` to `$9` (the words typed after the name, split as a shell would,
//! quotes grouping), `$ARGUMENTS` (all of them, joined by spaces) and `$$` (a `$`).
//!
//! Owns parsing a file and expanding its text, both pure. Reading the prompt directories is
//! [`load`]; where those directories are is the caller's (`cli` asks `config`).

mod load;

pub use load::{load, Loaded};

/// One prompt file, read and parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptFile {
    /// The file's name without `.md`: typed as `/name`.
    pub name: String,
    /// `description:` in the front matter.
    pub description: Option<String>,
    /// `argument-hint:` in the front matter: what to type after the name.
    pub argument_hint: Option<String>,
    /// The text after the front matter.
    pub body: String,
}

impl PromptFile {
    /// Parse the text of the file `name.md`. Text without front matter is all body; front
    /// matter that never closes is taken as body too, and keys other than the two known are
    /// ignored.
    pub fn parse(name: &str, text: &str) -> Self {
        let (front, body) = split_front_matter(text);
        let mut file = PromptFile {
            name: name.to_string(),
            description: None,
            argument_hint: None,
            body: body.to_string(),
        };
        for line in front.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = unquote(value.trim());
            if value.is_empty() {
                continue;
            }
            match key.trim() {
                "description" => file.description = Some(value.to_string()),
                "argument-hint" | "argument_hint" => file.argument_hint = Some(value.to_string()),
                _ => {}
            }
        }
        file
    }

    /// What the palette says of the file: its description, else its first line of text.
    pub fn summary(&self) -> &str {
        match &self.description {
            Some(d) => d,
            None => self
                .body
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or(""),
        }
    }

    /// The text to send for `/name args`: the body with its placeholders filled from `args`
    /// (see the module docs; a `$n` beyond the words given becomes empty).
    pub fn expand(&self, args: &str) -> String {
        expand(&self.body, &split_args(args))
    }
}

/// (front matter, body): the front matter is what lies between a first line `---` and the
/// next line `---`; without both, it is empty and the body is all of `text`.
fn split_front_matter(text: &str) -> (&str, &str) {
    let text_nobom = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text_nobom
        .strip_prefix("---\n")
        .or_else(|| text_nobom.strip_prefix("---\r\n"))
    else {
        return ("", text_nobom);
    };
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            return (&rest[..at], &rest[at + line.len()..]);
        }
        at += line.len();
    }
    ("", text_nobom)
}

/// A front matter value without the quotes around it, if it has a pair.
fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

/// The words of `args` as a shell splits them: whitespace separates, single quotes keep
/// everything up to the next single quote, double quotes keep everything but a backslash
/// before `"` or `\`, and a backslash elsewhere keeps the next character. A quote left open
/// runs to the end.
pub fn split_args(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(n @ ('"' | '\\')) => word.push(n),
                            Some(n) => {
                                word.push('\\');
                                word.push(n);
                            }
                            None => word.push('\\'),
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// `body` with `$1`..`$9`, `$ARGUMENTS` and `$$` replaced (see the module docs). Any other
/// `$` stays as it is.
pub fn expand(body: &str, args: &[String]) -> String {
    const ALL: &str = "ARGUMENTS";
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let next = after.chars().next();
        rest = match next {
            Some('$') => {
                out.push('$');
                &after[1..]
            }
            Some(d @ '1'..='9') => {
                let n = d as usize - '1' as usize;
                out.push_str(args.get(n).map_or("", String::as_str));
                &after[1..]
            }
            _ if after.starts_with(ALL) => {
                out.push_str(&args.join(" "));
                &after[ALL.len()..]
            }
            _ => {
                out.push('$');
                after
            }
        };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_gives_description_and_hint() {
        let f = PromptFile::parse(
            "fix",
            "---\ndescription: Fix a failing test\nargument-hint: \"TEST [NOTES]\"\nother: x\n---\nFix $1.\n",
        );
        assert_eq!(f.name, "fix");
        assert_eq!(f.description.as_deref(), Some("Fix a failing test"));
        assert_eq!(f.argument_hint.as_deref(), Some("TEST [NOTES]"));
        assert_eq!(f.body, "Fix $1.\n");
        assert_eq!(f.summary(), "Fix a failing test");
    }

    #[test]
    fn without_front_matter_all_is_body() {
        let f = PromptFile::parse("plain", "\nReview the diff.\nCarefully.\n");
        assert_eq!(f.description, None);
        assert_eq!(f.body, "\nReview the diff.\nCarefully.\n");
        assert_eq!(f.summary(), "Review the diff.");
        // Front matter that never closes is text.
        let f = PromptFile::parse("open", "---\ndescription: never closed\n");
        assert_eq!(f.description, None);
        assert_eq!(f.body, "---\ndescription: never closed\n");
        // Windows line ends.
        let f = PromptFile::parse("crlf", "---\r\ndescription: d\r\n---\r\nbody\r\n");
        assert_eq!(f.description.as_deref(), Some("d"));
        assert_eq!(f.body, "body\r\n");
    }

    #[test]
    fn arguments_split_as_a_shell_would() {
        let words = |s: &str| split_args(s);
        assert_eq!(words("  foo   bar "), ["foo", "bar"]);
        assert_eq!(words(r#"a "b c" 'd e' f\ g"#), ["a", "b c", "d e", "f g"]);
        assert_eq!(words(r#""say \"hi\"" '\n'"#), [r#"say "hi""#, r"\n"]);
        assert_eq!(words(r#"x"y z"w"#), ["xy zw"]);
        assert_eq!(words("''"), [""]);
        assert_eq!(words("\"open quote runs"), ["open quote runs"]);
        assert!(words("   ").is_empty());
    }

    #[test]
    fn placeholders_expand() {
        let args: Vec<String> = ["foo", "bar baz"].map(String::from).to_vec();
        assert_eq!(
            expand("first $1, second $2, third '$3', all: $ARGUMENTS.", &args),
            "first foo, second bar baz, third '', all: foo bar baz."
        );
        assert_eq!(
            expand("cost $$5 and $HOME and $0 and $", &args),
            "cost $5 and $HOME and $0 and $"
        );
        assert_eq!(expand("$1$1", &args), "foofoo");
        assert_eq!(expand("$ARGUMENTSX", &[]), "X");
        let f = PromptFile::parse("fix", "Fix $1 ($ARGUMENTS)");
        assert_eq!(
            f.expand("calc.py  'the sum'"),
            "Fix calc.py (calc.py the sum)"
        );
    }
}
