//! Reading a Python literal the way `ast.literal_eval` does, then turning it into JSON the way
//! `json.dumps` would: the fallback SGLang's qwen3_coder parser uses for object, array and
//! unknown parameter types (`{'k': 'v'}`, `True`, `None`, `(1, 2)`).
//!
//! Owns: the literal syntax (strings with their prefixes and escapes, implicit concatenation,
//! decimal/hex/octal/binary integers of any size, floats, `True`/`False`/`None`, signed numbers,
//! lists, tuples, dicts, comments and line breaks inside brackets) and the conversion of the
//! result (tuples become arrays, dict keys become strings as `json.dumps` writes them). Does not
//! own: deciding when to use it (`typing`).
//!
//! A literal that Python would read but `json.dumps` could not write (bytes, sets, complex
//! numbers, `...`, infinities) gives `None`, as does anything that is not a literal: the caller
//! keeps the raw text then. `\N{NAME}` escapes are not supported (no Unicode name table here) and
//! also give `None`.

use serde_json::{Map, Value};

/// `json.loads(json.dumps(ast.literal_eval(text)))`, or `None` where either step fails.
pub(super) fn literal_to_json(text: &str) -> Option<Value> {
    let text = text.trim_start_matches([' ', '\t']);
    let mut p = Lit {
        s: text.as_bytes(),
        src: text,
        i: 0,
        depth: 0,
    };
    p.skip_leading()?;
    let v = p.top()?;
    p.skip_trailing()?;
    to_json(v)
}

/// The Python literal at the start of `text` (after spaces) as JSON, and how many bytes it
/// took: for reading an assignment's value out of a source file. `None` as for
/// [`literal_to_json`].
pub(super) fn literal_prefix(text: &str) -> Option<(Value, usize)> {
    let mut p = Lit {
        s: text.as_bytes(),
        src: text,
        i: 0,
        depth: 0,
    };
    let v = p.value()?;
    Some((to_json(v)?, p.i))
}

/// A parsed Python value (only what literals can spell).
#[derive(Debug, Clone)]
enum Py {
    None,
    Bool(bool),
    Int(BigInt),
    Float(f64),
    Str(String),
    /// A value `json.dumps` cannot write: bytes, sets, complex numbers, `...`.
    Opaque,
    List(Vec<Py>),
    Dict(Vec<(Py, Py)>),
}

fn to_json(v: Py) -> Option<Value> {
    Some(match v {
        Py::None => Value::Null,
        Py::Bool(b) => Value::Bool(b),
        Py::Int(i) => i.to_json(),
        Py::Float(f) => Value::Number(serde_json::Number::from_f64(f)?),
        Py::Str(s) => Value::String(s),
        Py::Opaque => return None,
        Py::List(items) => Value::Array(items.into_iter().map(to_json).collect::<Option<_>>()?),
        Py::Dict(entries) => {
            // Python keeps the first key object of equal keys (1, 1.0 and True are equal) and
            // the last value; json.dumps then writes the key as text.
            let mut ids: Vec<String> = Vec::new();
            let mut map = Map::new();
            let mut names: Vec<String> = Vec::new();
            for (k, v) in entries {
                let (id, name) = key_forms(&k)?;
                let value = to_json(v)?;
                match ids.iter().position(|x| *x == id) {
                    Some(at) => {
                        map.insert(names[at].clone(), value);
                    }
                    None => {
                        ids.push(id);
                        names.push(name.clone());
                        map.insert(name, value);
                    }
                }
            }
            Value::Object(map)
        }
    })
}

/// A dict key's identity (equal keys share it) and its text in `json.dumps`.
fn key_forms(k: &Py) -> Option<(String, String)> {
    Some(match k {
        Py::Str(s) => (format!("s:{s}"), s.clone()),
        Py::None => ("n".into(), "null".into()),
        Py::Bool(b) => (format!("i:{}", u8::from(*b)), b.to_string()),
        Py::Int(i) => (format!("i:{}", i.to_decimal()), i.to_decimal()),
        Py::Float(f) if f.is_finite() => {
            let name = super::pyjson::float_repr(*f);
            let id = if f.fract() == 0.0 {
                format!("i:{}", BigInt::from_whole_f64(*f)?.to_decimal())
            } else {
                format!("f:{name}")
            };
            (id, name)
        }
        _ => return None,
    })
}

/// A signed integer of any size: sign and magnitude in base 10^9, least significant first.
#[derive(Debug, Clone, Default)]
pub(super) struct BigInt {
    negative: bool,
    limbs: Vec<u32>,
}

const LIMB: u64 = 1_000_000_000;

impl BigInt {
    fn mul_add(&mut self, m: u32, a: u32) {
        let mut carry = u64::from(a);
        for limb in &mut self.limbs {
            let x = u64::from(*limb) * u64::from(m) + carry;
            *limb = (x % LIMB) as u32;
            carry = x / LIMB;
        }
        while carry > 0 {
            self.limbs.push((carry % LIMB) as u32);
            carry /= LIMB;
        }
    }

    fn is_zero(&self) -> bool {
        self.limbs.iter().all(|l| *l == 0)
    }

    /// From digits in `radix` (already checked to be valid digits).
    fn from_digits(digits: &str, radix: u32) -> Option<Self> {
        let mut n = Self::default();
        for c in digits.chars() {
            n.mul_add(radix, c.to_digit(radix)?);
        }
        Some(n)
    }

    /// The exact integer a whole, finite `f64` holds (Python's `int(float)`).
    pub(super) fn from_whole_f64(f: f64) -> Option<Self> {
        if !f.is_finite() || f.fract() != 0.0 {
            return None;
        }
        let bits = f.abs().to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        let (mantissa, shift) = if exp == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), exp - 1075)
        };
        let (mut mantissa, mut shift) = (mantissa, shift);
        while shift < 0 {
            // Whole, so the bits shifted out are zero.
            mantissa >>= 1;
            shift += 1;
        }
        // mantissa < 2^53, so it takes two limbs.
        let mut n = Self {
            negative: false,
            limbs: vec![(mantissa % LIMB) as u32, (mantissa / LIMB) as u32],
        };
        for _ in 0..shift {
            n.mul_add(2, 0);
        }
        n.negative = f < 0.0;
        Some(n)
    }

    /// Decimal digits with a `-` for negative values, as `str(int)` writes them.
    pub(super) fn to_decimal(&self) -> String {
        let mut limbs: Vec<u32> = self.limbs.clone();
        while limbs.len() > 1 && limbs.last() == Some(&0) {
            limbs.pop();
        }
        let mut s = String::new();
        if self.negative && !self.is_zero() {
            s.push('-');
        }
        match limbs.split_last() {
            None => s.push('0'),
            Some((top, rest)) => {
                s.push_str(&top.to_string());
                for l in rest.iter().rev() {
                    s.push_str(&format!("{l:09}"));
                }
            }
        }
        s
    }

    /// A JSON number when it fits 64 bits; otherwise its digits as a string (JSON values here
    /// cannot hold wider numbers; the prompt re-renders both the same way).
    pub(super) fn to_json(&self) -> Value {
        let text = self.to_decimal();
        if let Ok(i) = text.parse::<i64>() {
            return Value::from(i);
        }
        if let Ok(u) = text.parse::<u64>() {
            return Value::from(u);
        }
        Value::String(text)
    }

    fn negate(mut self) -> Self {
        self.negative = !self.negative;
        self
    }
}

/// Python's `int(text)`: surrounding whitespace, an optional sign, decimal digits with single
/// `_` between them.
pub(super) fn py_int(text: &str) -> Option<BigInt> {
    let t = text.trim_matches(is_py_space);
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if !valid_digits(digits, 10) {
        return None;
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    let n = BigInt::from_digits(&clean, 10)?;
    Some(if negative { n.negate() } else { n })
}

/// Python's `float(text)` for finite results and the spellings that give infinities and NaN.
pub(super) fn py_float(text: &str) -> Option<f64> {
    let t = text.trim_matches(is_py_space);
    let (sign, body) = match t.as_bytes().first() {
        Some(b'-') => (-1.0, &t[1..]),
        Some(b'+') => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    let lower = body.to_ascii_lowercase();
    match lower.as_str() {
        "inf" | "infinity" => return Some(sign * f64::INFINITY),
        "nan" => return Some(f64::NAN),
        _ => {}
    }
    let (mantissa, exponent) = match lower.find('e') {
        Some(at) => (&lower[..at], Some(&lower[at + 1..])),
        None => (lower.as_str(), None),
    };
    let (whole, frac) = match mantissa.find('.') {
        Some(at) => (&mantissa[..at], Some(&mantissa[at + 1..])),
        None => (mantissa, None),
    };
    let ok_part = |p: &str| p.is_empty() || valid_digits(p, 10);
    if !ok_part(whole) || !frac.is_none_or(ok_part) {
        return None;
    }
    if whole.is_empty() && frac.is_none_or(str::is_empty) {
        return None;
    }
    if let Some(e) = exponent {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        if !valid_digits(e, 10) {
            return None;
        }
    }
    let clean: String = body.chars().filter(|c| *c != '_').collect();
    clean.parse::<f64>().ok().map(|f| sign * f)
}

/// Whitespace as Python's `str.strip()` and `int()` see it (ASCII and the common Unicode
/// spaces).
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Non-empty digits of `radix` with single `_` only between digits.
fn valid_digits(s: &str, radix: u32) -> bool {
    !s.is_empty()
        && !s.starts_with('_')
        && !s.ends_with('_')
        && !s.contains("__")
        && s.chars().all(|c| c == '_' || c.is_digit(radix))
}

/// The literal parser over one source text.
struct Lit<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
    /// Bracket nesting: inside brackets line breaks are plain whitespace.
    depth: usize,
}

impl Lit<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn rest(&self) -> &str {
        &self.src[self.i..]
    }

    /// Blank and comment lines before the expression; an indented first line is an error, as
    /// in Python.
    fn skip_leading(&mut self) -> Option<()> {
        loop {
            let line_end = self.rest().find('\n').map_or(self.s.len(), |n| self.i + n);
            let line = &self.src[self.i..line_end];
            let body = line.trim_start_matches([' ', '\t', '\x0c']);
            if body.is_empty() || body.starts_with('#') || body == "\r" {
                if line_end >= self.s.len() {
                    self.i = self.s.len();
                    return Some(());
                }
                self.i = line_end + 1;
                continue;
            }
            if body.len() != line.len() && self.i > 0 {
                return None;
            }
            self.i += line.len() - body.len();
            return Some(());
        }
    }

    /// Whitespace the tokenizer skips here: spaces, tabs, comments, backslash line joins, and
    /// line breaks inside brackets.
    fn ws(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\x0c') => self.i += 1,
                Some(b'\\') if self.rest()[1..].starts_with('\n') => self.i += 2,
                Some(b'\\') if self.rest()[1..].starts_with("\r\n") => self.i += 3,
                Some(b'#') => {
                    while !matches!(self.peek(), None | Some(b'\n')) {
                        self.i += 1;
                    }
                }
                Some(b'\n' | b'\r') if self.depth > 0 => self.i += 1,
                _ => return,
            }
        }
    }

    /// After the expression: only whitespace, comments and line breaks may follow.
    fn skip_trailing(&mut self) -> Option<()> {
        loop {
            self.ws();
            match self.peek() {
                None => return Some(()),
                Some(b'\n' | b'\r') => self.i += 1,
                _ => return None,
            }
        }
    }

    /// The whole expression: a bare tuple (`1, 2`) is allowed at the top.
    fn top(&mut self) -> Option<Py> {
        let first = self.value()?;
        self.ws();
        if self.peek() != Some(b',') {
            return Some(first);
        }
        let mut items = vec![first];
        while self.peek() == Some(b',') {
            self.i += 1;
            self.ws();
            if matches!(self.peek(), None | Some(b'\n' | b'\r' | b'#')) {
                break;
            }
            items.push(self.value()?);
            self.ws();
        }
        Some(Py::List(items))
    }

    fn value(&mut self) -> Option<Py> {
        self.ws();
        self.signed().map(|(v, _)| v)
    }

    /// A value, and whether it is a plain constant (only constants may take a sign).
    fn signed(&mut self) -> Option<(Py, bool)> {
        self.ws();
        match self.peek()? {
            c @ (b'-' | b'+') => {
                self.i += 1;
                self.ws();
                let (v, constant) = self.atom()?;
                if !constant {
                    return None;
                }
                let v = match (v, c) {
                    (Py::Int(n), b'-') => Py::Int(n.negate()),
                    (Py::Float(f), b'-') => Py::Float(-f),
                    (v @ (Py::Int(_) | Py::Float(_)), _) => v,
                    _ => return None,
                };
                Some((v, false))
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> Option<(Py, bool)> {
        let c = self.peek()?;
        match c {
            b'[' => self.list(b']').map(|v| (Py::List(v), false)),
            b'(' => {
                self.i += 1;
                self.depth += 1;
                self.ws();
                if self.peek() == Some(b')') {
                    self.i += 1;
                    self.depth -= 1;
                    return Some((Py::List(Vec::new()), false));
                }
                let (first, constant) = self.signed()?;
                self.ws();
                match self.peek()? {
                    b')' => {
                        self.i += 1;
                        self.depth -= 1;
                        Some((first, constant))
                    }
                    b',' => {
                        let mut items = vec![first];
                        while self.peek() == Some(b',') {
                            self.i += 1;
                            self.ws();
                            if self.peek() == Some(b')') {
                                break;
                            }
                            items.push(self.value()?);
                            self.ws();
                        }
                        self.expect(b')')?;
                        self.depth -= 1;
                        Some((Py::List(items), false))
                    }
                    _ => None,
                }
            }
            b'{' => self.dict_or_set().map(|v| (v, false)),
            b'.' if self.rest().starts_with("...") => {
                self.i += 3;
                Some((Py::Opaque, false))
            }
            b'0'..=b'9' | b'.' => self.number().map(|v| (v, true)),
            b'\'' | b'"' => self.strings().map(|v| (v, true)),
            c if c == b'_' || c.is_ascii_alphabetic() || c >= 0x80 => {
                let start = self.i;
                while self
                    .peek()
                    .is_some_and(|c| c == b'_' || c.is_ascii_alphanumeric() || c >= 0x80)
                {
                    self.i += 1;
                }
                let word = &self.src[start..self.i];
                if matches!(self.peek(), Some(b'\'' | b'"')) {
                    self.i = start;
                    return self.strings().map(|v| (v, true));
                }
                match word {
                    "True" => Some((Py::Bool(true), false)),
                    "False" => Some((Py::Bool(false), false)),
                    "None" => Some((Py::None, false)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.peek() == Some(c)).then(|| self.i += 1)
    }

    /// Items up to `close`, a trailing comma allowed.
    fn list(&mut self, close: u8) -> Option<Vec<Py>> {
        self.i += 1;
        self.depth += 1;
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.peek() == Some(close) {
                self.i += 1;
                break;
            }
            items.push(self.value()?);
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                c if c == close => {
                    self.i += 1;
                    break;
                }
                _ => return None,
            }
        }
        self.depth -= 1;
        Some(items)
    }

    fn dict_or_set(&mut self) -> Option<Py> {
        self.i += 1;
        self.depth += 1;
        let mut entries = Vec::new();
        let mut is_set = false;
        loop {
            self.ws();
            if self.peek() == Some(b'}') {
                self.i += 1;
                break;
            }
            let key = self.value()?;
            self.ws();
            if self.peek() == Some(b':') && !is_set {
                self.i += 1;
                let value = self.value()?;
                // Unhashable keys make literal_eval fail.
                if matches!(key, Py::List(_) | Py::Dict(_)) {
                    return None;
                }
                entries.push((key, value));
            } else if entries.is_empty() {
                is_set = true;
            } else {
                return None;
            }
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    break;
                }
                _ => return None,
            }
        }
        self.depth -= 1;
        Some(if is_set {
            Py::Opaque
        } else {
            Py::Dict(entries)
        })
    }

    fn number(&mut self) -> Option<Py> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
        {
            // An exponent sign belongs to the number.
            let c = self.s[self.i];
            self.i += 1;
            if (c == b'e' || c == b'E')
                && !self.src[start..self.i].starts_with("0x")
                && !self.src[start..self.i].starts_with("0X")
                && matches!(self.peek(), Some(b'+' | b'-'))
            {
                self.i += 1;
            }
        }
        let text = &self.src[start..self.i];
        let lower = text.to_ascii_lowercase();
        if lower.ends_with('j') {
            return Some(Py::Opaque); // complex
        }
        for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
            if let Some(digits) = lower.strip_prefix(prefix) {
                let digits = digits.strip_prefix('_').unwrap_or(digits);
                if !valid_digits(digits, radix) {
                    return None;
                }
                let clean: String = digits.chars().filter(|c| *c != '_').collect();
                return BigInt::from_digits(&clean, radix).map(Py::Int);
            }
        }
        if lower.contains(['.', 'e']) {
            if !lower.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
                return None;
            }
            return py_float(text).map(Py::Float);
        }
        if !valid_digits(text, 10) {
            return None;
        }
        let clean: String = text.chars().filter(|c| *c != '_').collect();
        // Leading zeros are a syntax error unless the number is zero.
        if clean.len() > 1 && clean.starts_with('0') && clean.chars().any(|c| c != '0') {
            return None;
        }
        BigInt::from_digits(&clean, 10).map(Py::Int)
    }

    /// One or more adjacent string literals, joined.
    fn strings(&mut self) -> Option<Py> {
        let mut out = String::new();
        let mut any_bytes = false;
        let mut any_text = false;
        loop {
            let start = self.i;
            while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
                self.i += 1;
            }
            let prefix = self.src[start..self.i].to_ascii_lowercase();
            let (raw, bytes) = match prefix.as_str() {
                "" | "u" => (false, false),
                "r" => (true, false),
                "b" => (false, true),
                "br" | "rb" => (true, true),
                _ => return None, // f-strings and unknown prefixes are not literals
            };
            if !matches!(self.peek(), Some(b'\'' | b'"')) {
                return None;
            }
            any_bytes |= bytes;
            any_text |= !bytes;
            out.push_str(&self.string_body(raw)?);
            let save = self.i;
            self.ws();
            if !self.at_string_start() {
                self.i = save;
                break;
            }
        }
        if any_bytes && any_text {
            return None;
        }
        Some(if any_bytes { Py::Opaque } else { Py::Str(out) })
    }

    /// Whether a string literal (with an optional prefix of up to two letters) starts here.
    fn at_string_start(&self) -> bool {
        let r = self.rest();
        let letters = r.len()
            - r.trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        letters <= 2 && matches!(self.s.get(self.i + letters), Some(b'\'' | b'"'))
    }

    fn string_body(&mut self, raw: bool) -> Option<String> {
        let q = self.peek()?;
        let triple = self.s.get(self.i + 1) == Some(&q) && self.s.get(self.i + 2) == Some(&q);
        self.i += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let c = self.rest().chars().next()?;
            if c as u32 == u32::from(q) {
                if !triple {
                    self.i += 1;
                    return Some(out);
                }
                if self.s.get(self.i + 1) == Some(&q) && self.s.get(self.i + 2) == Some(&q) {
                    self.i += 3;
                    return Some(out);
                }
            }
            if (c == '\n' || c == '\r') && !triple {
                return None;
            }
            if c != '\\' {
                out.push(c);
                self.i += c.len_utf8();
                continue;
            }
            self.i += 1;
            let e = self.rest().chars().next()?;
            self.i += e.len_utf8();
            if raw {
                out.push('\\');
                out.push(e);
                continue;
            }
            match e {
                '\n' => {}
                '\r' => {
                    if self.peek() == Some(b'\n') {
                        self.i += 1;
                    }
                }
                '\\' | '\'' | '"' => out.push(e),
                'a' => out.push('\u{7}'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'v' => out.push('\u{b}'),
                '0'..='7' => {
                    let mut v = e.to_digit(8)?;
                    for _ in 0..2 {
                        match self.peek() {
                            Some(d @ b'0'..=b'7') => {
                                v = v * 8 + u32::from(d - b'0');
                                self.i += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(char::from_u32(v)?);
                }
                'x' => out.push(self.hex_escape(2)?),
                'u' => out.push(self.hex_escape(4)?),
                'U' => out.push(self.hex_escape(8)?),
                // `\N{...}` needs the Unicode name table.
                'N' => return None,
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }

    /// Exactly `n` hex digits; surrogates (which JSON text cannot carry alone) fail.
    fn hex_escape(&mut self, n: usize) -> Option<char> {
        let digits = self.src.get(self.i..self.i + n)?;
        if !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.i += n;
        char::from_u32(u32::from_str_radix(digits, 16).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lit(s: &str) -> Option<Value> {
        literal_to_json(s)
    }

    #[test]
    fn containers_and_constants() {
        assert_eq!(lit("{'k': 'v'}"), Some(json!({"k": "v"})));
        assert_eq!(lit("[True, None, False]"), Some(json!([true, null, false])));
        assert_eq!(lit("(1, 2)"), Some(json!([1, 2])));
        assert_eq!(lit("1, 2"), Some(json!([1, 2])));
        assert_eq!(lit("1,\n"), Some(json!([1])));
        assert_eq!(lit("()"), Some(json!([])));
        assert_eq!(lit("(1)"), Some(json!(1)));
        assert_eq!(lit("[1,\n 2,  # two\n]"), Some(json!([1, 2])));
        assert_eq!(lit("\n[1]"), Some(json!([1])));
        assert_eq!(lit("\n  [1]"), None);
        assert_eq!(lit("1\n2"), None);
        assert_eq!(lit("  1 "), Some(json!(1)));
    }

    #[test]
    fn numbers() {
        assert_eq!(lit("-1"), Some(json!(-1)));
        assert_eq!(lit("- 1.5"), Some(json!(-1.5)));
        assert_eq!(lit("--1"), None);
        assert_eq!(lit("-(1)"), Some(json!(-1)));
        assert_eq!(lit("-(-1)"), None);
        assert_eq!(lit("-True"), None);
        assert_eq!(lit("1e5"), Some(json!(100000.0)));
        assert_eq!(lit("5."), Some(json!(5.0)));
        assert_eq!(lit(".5"), Some(json!(0.5)));
        assert_eq!(lit("0x1F"), Some(json!(31)));
        assert_eq!(lit("0o17"), Some(json!(15)));
        assert_eq!(lit("0b11"), Some(json!(3)));
        assert_eq!(lit("007"), None);
        assert_eq!(lit("00"), Some(json!(0)));
        assert_eq!(lit("1_0"), Some(json!(10)));
        assert_eq!(lit("1__0"), None);
        assert_eq!(lit("1j"), None);
        assert_eq!(lit("1+2"), None);
        assert_eq!(lit("1e999"), None);
        assert_eq!(
            lit("123456789012345678901234567890"),
            Some(json!("123456789012345678901234567890"))
        );
    }

    #[test]
    fn strings() {
        assert_eq!(lit("'a' 'b'"), Some(json!("ab")));
        assert_eq!(lit(r#""\d""#), Some(json!("\\d")));
        assert_eq!(lit(r"r'\n'"), Some(json!("\\n")));
        assert_eq!(lit(r"'\x41\u00e9\101\n'"), Some(json!("Aé\u{41}\n")));
        assert_eq!(lit("\"\"\"a\nb\"\"\""), Some(json!("a\nb")));
        assert_eq!(lit("'a\nb'"), None);
        assert_eq!(lit("'\\\n'"), Some(json!("")));
        assert_eq!(lit("b'x'"), None);
        assert_eq!(lit("f'x'"), None);
        assert_eq!(lit(r"'\N{BULLET}'"), None);
        assert_eq!(lit("'it''s'"), Some(json!("its")));
    }

    #[test]
    fn dict_keys_as_json_dumps_writes_them() {
        assert_eq!(
            lit("{1: 'a', True: 'b', None: 'c', 1.5: 'd', 'x': 'e'}"),
            Some(json!({"1": "b", "null": "c", "1.5": "d", "x": "e"}))
        );
        assert_eq!(lit("{1: 2, 1.0: 3}"), Some(json!({"1": 3})));
        assert_eq!(lit("{[1]: 2}"), None);
        assert_eq!(lit("{1, 2}"), None);
        assert_eq!(lit("{}"), Some(json!({})));
        assert_eq!(lit("..."), None);
        assert_eq!(lit("hello"), None);
        assert_eq!(lit("true"), None);
    }

    #[test]
    fn exact_integers_of_floats() {
        assert_eq!(BigInt::from_whole_f64(30.0).unwrap().to_decimal(), "30");
        assert_eq!(
            BigInt::from_whole_f64(1.2345678901234567e29)
                .unwrap()
                .to_decimal(),
            "123456789012345677877719597056"
        );
        assert_eq!(BigInt::from_whole_f64(-5.0).unwrap().to_decimal(), "-5");
        assert_eq!(
            BigInt::from_whole_f64(2f64.powi(64)).unwrap().to_decimal(),
            "18446744073709551616"
        );
        assert!(BigInt::from_whole_f64(0.5).is_none());
    }

    #[test]
    fn python_int_and_float() {
        assert_eq!(py_int(" 42 ").unwrap().to_decimal(), "42");
        assert_eq!(py_int("-1_000").unwrap().to_decimal(), "-1000");
        assert_eq!(py_int("0012").unwrap().to_decimal(), "12");
        assert!(py_int("1.0").is_none());
        assert!(py_int("").is_none());
        assert!(py_int("-").is_none());
        assert_eq!(py_float(" 1e3"), Some(1000.0));
        assert_eq!(py_float("5."), Some(5.0));
        assert_eq!(py_float(".5"), Some(0.5));
        assert_eq!(py_float("1_0.5"), Some(10.5));
        assert!(py_float(".").is_none());
        assert!(py_float("1e").is_none());
        assert!(py_float("0x10").is_none());
        assert_eq!(py_float("-inf"), Some(f64::NEG_INFINITY));
        assert!(py_float("nan").unwrap().is_nan());
    }
}
