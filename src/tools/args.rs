//! Reading tool arguments the way the original harness did: a missing, null or empty value
//! counts as missing; numbers may come as numeric strings; `file_path` falls back to `path`.

use super::format::Failure;
use serde_json::{Map, Value};

/// A call's arguments.
pub(crate) struct Args<'a>(&'a Map<String, Value>);

impl<'a> Args<'a> {
    pub(super) fn new(map: &'a Map<String, Value>) -> Self {
        Self(map)
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    /// A string argument; scalars are taken as their text. `None` when absent or null.
    pub(super) fn string(&self, name: &str) -> Result<Option<String>, Failure> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(Failure::value(format!("{name} must be a string"))),
        }
    }

    /// A required string: absent, null and empty all give `ValueError: {name} is required`.
    pub(super) fn required(&self, name: &str) -> Result<String, Failure> {
        match self.string(name)? {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(Failure::value(format!("{name} is required"))),
        }
    }

    /// `file_path`, or `path` when `file_path` is missing.
    pub(super) fn file_path(&self) -> Result<String, Failure> {
        match self.string("file_path")? {
            Some(s) if !s.is_empty() => Ok(s),
            _ => self
                .required("path")
                .map_err(|_| Failure::value("file_path is required".into())),
        }
    }

    /// A required string that may be empty (file content, replacement text).
    pub(super) fn text(&self, name: &str) -> Result<String, Failure> {
        self.string(name)?
            .ok_or_else(|| Failure::value(format!("{name} is required")))
    }

    /// An optional integer; numeric strings and integral floats accepted; empty is absent.
    pub(super) fn int(&self, name: &str) -> Result<Option<i64>, Failure> {
        let bad = || Failure::value(format!("{name} must be an integer"));
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .map(Some)
                .ok_or_else(bad),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => {
                let t = s.trim();
                t.parse::<i64>()
                    .ok()
                    .or_else(|| {
                        t.parse::<f64>()
                            .ok()
                            .filter(|f| f.fract() == 0.0)
                            .map(|f| f as i64)
                    })
                    .map(Some)
                    .ok_or_else(bad)
            }
            Some(_) => Err(bad()),
        }
    }

    /// An optional number; numeric strings accepted; empty is absent.
    pub(super) fn number(&self, name: &str) -> Result<Option<f64>, Failure> {
        let bad = || Failure::value(format!("{name} must be a number"));
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n.as_f64().map(Some).ok_or_else(bad),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => s.trim().parse::<f64>().map(Some).map_err(|_| bad()),
            Some(_) => Err(bad()),
        }
    }

    /// A flag: true for boolean true or "1", "true", "yes", "on" (any case).
    pub(super) fn truthy(&self, name: &str) -> bool {
        match self.get(name) {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => {
                matches!(
                    s.trim().to_ascii_lowercase().as_str(),
                    "1" | "true" | "yes" | "on"
                )
            }
            Some(Value::Number(n)) => n.as_i64() == Some(1),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn required_and_fallback() {
        let m = map(json!({"file_path": "", "path": "a.txt", "command": null}));
        let a = Args::new(&m);
        assert_eq!(a.file_path().unwrap(), "a.txt");
        assert_eq!(
            a.required("command").unwrap_err().to_string(),
            "ValueError: command is required"
        );
        let m = map(json!({}));
        assert_eq!(
            Args::new(&m).file_path().unwrap_err().to_string(),
            "ValueError: file_path is required"
        );
    }

    #[test]
    fn numbers_and_truthiness() {
        let m = map(json!({"offset": "3", "limit": 2.0, "bad": "x", "t": "2.5",
            "a": "YES", "b": "On", "c": "no", "d": true, "e": "1", "f": 0}));
        let a = Args::new(&m);
        assert_eq!(a.int("offset").unwrap(), Some(3));
        assert_eq!(a.int("limit").unwrap(), Some(2));
        assert_eq!(
            a.int("bad").unwrap_err().to_string(),
            "ValueError: bad must be an integer"
        );
        assert_eq!(a.number("t").unwrap(), Some(2.5));
        assert!(a.truthy("a") && a.truthy("b") && a.truthy("d") && a.truthy("e"));
        assert!(!a.truthy("c") && !a.truthy("f") && !a.truthy("missing"));
    }
}
