//! Python-compatible text forms of JSON-like values, for chat templates written against Python's
//! Jinja: `json.dumps` (what Hugging Face's `tojson` filter calls) and `str()`.
//!
//! Owns: the exact spelling of numbers, booleans, `None`, strings and containers in those two
//! forms. Does not own: template evaluation (see `render.rs`).
//!
//! Invariants: `dumps` with the default separators writes `", "` and `": "`, keeps non-ASCII
//! characters, escapes only what Python escapes with `ensure_ascii=False`, and keeps the key order
//! it is given (the crate uses `serde_json` with `preserve_order`). Floats follow Python's `repr`
//! (`1.0`, `1e+16`, `1.5e-05`).

use serde_json::Value;
use std::fmt::Write as _;

/// Options of Python's `json.dumps` that templates use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DumpOptions {
    /// `indent=N`: pretty-print with N spaces per level (and `","` as item separator).
    pub indent: Option<usize>,
    /// `sort_keys=True`.
    pub sort_keys: bool,
    /// `separators=(item, key)`; `None` means Python's default for the chosen indent.
    pub separators: Option<(String, String)>,
}

/// `json.dumps(value, ensure_ascii=False, ...)`.
pub fn dumps(value: &Value, opts: &DumpOptions) -> String {
    let (item_sep, key_sep) = match &opts.separators {
        Some((i, k)) => (i.clone(), k.clone()),
        None if opts.indent.is_some() => (",".to_string(), ": ".to_string()),
        None => (", ".to_string(), ": ".to_string()),
    };
    let mut out = String::new();
    let writer = Dumper {
        indent: opts.indent,
        sort_keys: opts.sort_keys,
        item_sep,
        key_sep,
    };
    writer.write(&mut out, value, 0);
    out
}

struct Dumper {
    indent: Option<usize>,
    sort_keys: bool,
    item_sep: String,
    key_sep: String,
}

impl Dumper {
    fn newline(&self, out: &mut String, level: usize) {
        if let Some(n) = self.indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', n * level));
        }
    }

    fn write(&self, out: &mut String, value: &Value, level: usize) {
        match value {
            Value::Null => out.push_str("null"),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Number(n) => out.push_str(&json_number(n)),
            Value::String(s) => push_json_string(out, s),
            Value::Array(items) => {
                if items.is_empty() {
                    out.push_str("[]");
                    return;
                }
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&self.item_sep);
                    }
                    self.newline(out, level + 1);
                    self.write(out, item, level + 1);
                }
                self.newline(out, level);
                out.push(']');
            }
            Value::Object(map) => {
                if map.is_empty() {
                    out.push_str("{}");
                    return;
                }
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                if self.sort_keys {
                    entries.sort_by(|a, b| a.0.cmp(b.0));
                }
                out.push('{');
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(&self.item_sep);
                    }
                    self.newline(out, level + 1);
                    push_json_string(out, key);
                    out.push_str(&self.key_sep);
                    self.write(out, item, level + 1);
                }
                self.newline(out, level);
                out.push('}');
            }
        }
    }
}

/// A JSON string literal as Python writes it with `ensure_ascii=False`: `"`, `\` and control
/// characters escaped, everything else kept.
fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    match n.as_f64() {
        Some(f) if f.is_nan() => "NaN".to_string(),
        Some(f) if f.is_infinite() && f > 0.0 => "Infinity".to_string(),
        Some(f) if f.is_infinite() => "-Infinity".to_string(),
        Some(f) => float_repr(f),
        None => n.to_string(),
    }
}

/// Python's `repr(float)`: the shortest digits that read back to the same float, in fixed
/// notation when the decimal exponent is in `-4..16`, else in exponent notation (`1e+16`).
pub(super) fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    // `{:e}` gives the shortest round-trip digits as `d.ddddde-x`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let mut s = String::from(sign);
        if point <= 0 {
            s.push_str("0.");
            s.extend(std::iter::repeat_n('0', (-point) as usize));
            s.push_str(&digits);
        } else {
            let point = point as usize;
            if digits.len() <= point {
                s.push_str(&digits);
                s.extend(std::iter::repeat_n('0', point - digits.len()));
                s.push_str(".0");
            } else {
                s.push_str(&digits[..point]);
                s.push('.');
                s.push_str(&digits[point..]);
            }
        }
        s
    } else {
        let mut s = String::from(sign);
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let exp_sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(s, "e{exp_sign}{:02}", exp.abs());
        s
    }
}

/// Python's `str(value)`: strings as they are, `True`/`False`/`None`, numbers as Python prints
/// them, containers in their `repr` form (`{'a': 1}`).
pub(super) fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => {
            let mut out = String::new();
            push_repr(&mut out, other);
            out
        }
    }
}

fn push_repr(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (None, Some(u), _) => out.push_str(&u.to_string()),
            (None, None, Some(f)) => out.push_str(&float_repr(f)),
            (None, None, None) => out.push_str(&n.to_string()),
        },
        Value::String(s) => push_py_string_repr(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                push_repr(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                push_py_string_repr(out, key);
                out.push_str(": ");
                push_repr(out, item);
            }
            out.push('}');
        }
    }
}

/// `repr(str)`: single quotes unless the text has a single quote and no double quote.
fn push_py_string_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dumps_uses_python_separators_and_keeps_non_ascii() {
        let v: Value =
            serde_json::from_str(r#"{"b": 1, "a": [true, null, "é\n\"<x>"], "c": {}}"#).unwrap();
        assert_eq!(
            dumps(&v, &DumpOptions::default()),
            r#"{"b": 1, "a": [true, null, "é\n\"<x>"], "c": {}}"#
        );
    }

    #[test]
    fn dumps_escapes_control_characters_like_python() {
        let v = json!("a\u{1}b\u{7f}\t");
        assert_eq!(dumps(&v, &DumpOptions::default()), "\"a\\u0001b\u{7f}\\t\"");
    }

    #[test]
    fn dumps_indent_and_sort_keys() {
        let v: Value = serde_json::from_str(r#"{"b": [1, 2], "a": {}}"#).unwrap();
        let opts = DumpOptions {
            indent: Some(2),
            sort_keys: true,
            separators: None,
        };
        assert_eq!(
            dumps(&v, &opts),
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    2\n  ]\n}"
        );
    }

    #[test]
    fn floats_follow_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (120.0, "120.0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (-2.25, "-2.25"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (123456789012345.6, "123456789012345.6"),
            (1e300, "1e+300"),
            (-0.0, "-0.0"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "{f}");
        }
    }

    #[test]
    fn str_is_python_str() {
        assert_eq!(py_str(&json!(true)), "True");
        assert_eq!(py_str(&json!(false)), "False");
        assert_eq!(py_str(&json!(null)), "None");
        assert_eq!(py_str(&json!(3)), "3");
        assert_eq!(py_str(&json!(2.0)), "2.0");
        assert_eq!(py_str(&json!("x")), "x");
        assert_eq!(
            py_str(&json!({"k": ["it's", 1, null]})),
            r#"{'k': ["it's", 1, None]}"#
        );
    }
}
