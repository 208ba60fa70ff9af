//! Typing the raw text of a tool-call parameter by the tool's schema (MODEL.md section 4).
//!
//! Owns: the conversion rules. Does not own: finding parameters in the output (`parser`) or
//! validating required arguments (the tools answer those with their own messages).
//!
//! Rules: `null` in any case is null; strings stay raw; integers parse as integers, else stay
//! strings; numbers parse as integers when whole, else as floats, else stay strings; booleans are
//! true only for `true` in any case; objects and arrays parse as JSON, else stay strings;
//! parameters the schema does not declare stay strings.

use serde_json::Value;

use super::tools::ParamType;

/// The typed value of one parameter's raw text.
pub fn type_value(raw: &str, ty: ParamType) -> Value {
    if raw.trim().eq_ignore_ascii_case("null") {
        return Value::Null;
    }
    match ty {
        ParamType::String | ParamType::Unknown => Value::String(raw.to_string()),
        ParamType::Integer => parse_integer(raw.trim())
            .map(Value::from)
            .unwrap_or_else(|| Value::String(raw.to_string())),
        ParamType::Number => parse_number(raw.trim()).unwrap_or_else(|| Value::String(raw.into())),
        ParamType::Boolean => Value::Bool(raw.trim().eq_ignore_ascii_case("true")),
        ParamType::Object | ParamType::Array => {
            serde_json::from_str(raw.trim()).unwrap_or_else(|_| Value::String(raw.to_string()))
        }
    }
}

/// Python's `int(text)` for plain decimal integers (an optional sign, digits, `_` between
/// digits).
fn parse_integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
        return None;
    }
    let cleaned: String = digits.chars().filter(|c| *c != '_').collect();
    if cleaned.is_empty() || cleaned == "-" {
        return None;
    }
    cleaned.parse::<i64>().ok()
}

/// A number: whole values become integers (`"30"`, `"30.0"` -> 30), others floats; anything
/// that is not a finite number stays text.
fn parse_number(text: &str) -> Option<Value> {
    if let Some(i) = parse_integer(text) {
        return Some(Value::from(i));
    }
    let lower = text.to_ascii_lowercase();
    // Rust accepts "inf"/"nan" spellings that are not numbers a tool could use.
    if lower.contains("inf") || lower.contains("nan") {
        return None;
    }
    let f: f64 = text.parse().ok()?;
    if !f.is_finite() {
        return None;
    }
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        // Whole and exactly representable: the integer it spells.
        return Some(Value::from(f as i64));
    }
    serde_json::Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_in_any_case_is_null() {
        for ty in [ParamType::String, ParamType::Integer, ParamType::Boolean] {
            assert_eq!(type_value("NULL", ty), Value::Null);
            assert_eq!(type_value("null", ty), Value::Null);
        }
    }

    #[test]
    fn strings_stay_raw() {
        assert_eq!(type_value("  a\n b ", ParamType::String), json!("  a\n b "));
        assert_eq!(type_value("42", ParamType::Unknown), json!("42"));
    }

    #[test]
    fn integers() {
        assert_eq!(type_value("42", ParamType::Integer), json!(42));
        assert_eq!(type_value(" -3 ", ParamType::Integer), json!(-3));
        assert_eq!(type_value("+7", ParamType::Integer), json!(7));
        assert_eq!(type_value("1_000", ParamType::Integer), json!(1000));
        assert_eq!(type_value("3.5", ParamType::Integer), json!("3.5"));
        assert_eq!(type_value("ten", ParamType::Integer), json!("ten"));
        assert_eq!(type_value("", ParamType::Integer), json!(""));
    }

    #[test]
    fn numbers() {
        assert_eq!(type_value("30", ParamType::Number), json!(30));
        assert_eq!(type_value("30.0", ParamType::Number), json!(30));
        assert_eq!(type_value("1.5", ParamType::Number), json!(1.5));
        assert_eq!(type_value("1e3", ParamType::Number), json!(1000));
        assert_eq!(type_value("inf", ParamType::Number), json!("inf"));
        assert_eq!(type_value("NaN", ParamType::Number), json!("NaN"));
        assert_eq!(type_value("soon", ParamType::Number), json!("soon"));
    }

    #[test]
    fn booleans_are_true_only_for_true() {
        assert_eq!(type_value("true", ParamType::Boolean), json!(true));
        assert_eq!(type_value("True", ParamType::Boolean), json!(true));
        assert_eq!(type_value(" TRUE ", ParamType::Boolean), json!(true));
        assert_eq!(type_value("yes", ParamType::Boolean), json!(false));
        assert_eq!(type_value("1", ParamType::Boolean), json!(false));
        assert_eq!(type_value("False", ParamType::Boolean), json!(false));
    }

    #[test]
    fn objects_and_arrays_parse_as_json() {
        assert_eq!(type_value("[1, 2]", ParamType::Array), json!([1, 2]));
        assert_eq!(
            type_value("{\"b\": 1, \"a\": 2}", ParamType::Object)
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["b", "a"]
        );
        assert_eq!(type_value("[1,", ParamType::Array), json!("[1,"));
    }
}
