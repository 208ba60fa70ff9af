//! Typing the raw text of a tool-call parameter by the tool's schema, as SGLang's qwen3_coder
//! parser does (docs/prompt-format.md, "Parsing model output").
//!
//! Owns: the conversion rules. Does not own: finding parameters in the output (`parser`),
//! deciding a parameter's type from its schema (`tools::ParamType`), or validating required
//! arguments (the tools answer those with their own messages).
//!
//! Rules, applied to the value as written (only the parser's one leading and one trailing
//! newline are gone; nothing else is trimmed):
//! - `null` in any case is null, whatever the type (` null` is not);
//! - strings, and parameters the schema does not declare, stay raw;
//! - integers through Python's `int()` (which itself allows surrounding whitespace, a sign and
//!   `_` between digits), of any size; otherwise the raw string;
//! - numbers through Python's `float()`; written without `.` and `e` and whole, the integer the
//!   float holds; otherwise the float (`30.0`, `1e3` and `5.` stay floats); otherwise the raw
//!   string. Infinities and NaN stay the raw string (JSON values cannot hold them);
//! - booleans: true only for `true` in any case, anything else false (`true ` is false);
//! - objects and arrays: JSON, else a Python literal (`{'k': 'v'}`), else the raw string;
//! - other declared types: a Python literal, else the raw string.
//!
//! Integers beyond 64 bits are kept as their digits in a string: the prompt re-renders them
//! the same way (as `str()` would), and the tools read numeric strings.

use serde_json::Value;

use super::pyliteral::{literal_to_json, py_float, py_int, BigInt};
use super::tools::ParamType;

/// The typed value of one parameter's raw text.
pub fn type_value(raw: &str, ty: ParamType) -> Value {
    if raw.to_lowercase() == "null" {
        return Value::Null;
    }
    let text = || Value::String(raw.to_string());
    match ty {
        ParamType::String | ParamType::Unknown => text(),
        ParamType::Integer => py_int(raw).map_or_else(text, |n| n.to_json()),
        ParamType::Number => type_number(raw).unwrap_or_else(text),
        ParamType::Boolean => Value::Bool(raw.to_lowercase() == "true"),
        ParamType::Object | ParamType::Array => serde_json::from_str(raw)
            .ok()
            .or_else(|| literal_to_json(raw))
            .unwrap_or_else(text),
        ParamType::Literal => literal_to_json(raw).unwrap_or_else(text),
    }
}

fn type_number(raw: &str) -> Option<Value> {
    let f = py_float(raw)?;
    if !f.is_finite() {
        return None;
    }
    let may_be_integer = !raw.contains('.') && !raw.to_lowercase().contains('e');
    if may_be_integer && f.fract() == 0.0 {
        return BigInt::from_whole_f64(f).map(|n| n.to_json());
    }
    serde_json::Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_in_any_case_is_null_but_only_as_written() {
        for ty in [ParamType::String, ParamType::Integer, ParamType::Boolean] {
            assert_eq!(type_value("NULL", ty), Value::Null);
            assert_eq!(type_value("null", ty), Value::Null);
        }
        assert_eq!(type_value(" null", ParamType::String), json!(" null"));
        assert_eq!(type_value("null ", ParamType::Integer), json!("null "));
        assert_eq!(type_value("Null", ParamType::Unknown), Value::Null);
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
        assert_eq!(
            type_value("18446744073709551615", ParamType::Integer),
            json!(18446744073709551615u64)
        );
        assert_eq!(
            type_value("123456789012345678901234567890", ParamType::Integer),
            json!("123456789012345678901234567890")
        );
    }

    #[test]
    fn numbers_keep_floats_as_floats() {
        assert_eq!(type_value("30", ParamType::Number), json!(30));
        assert!(type_value("30", ParamType::Number).is_i64());
        for (raw, want) in [("30.0", 30.0), ("1e3", 1000.0), ("5.", 5.0), ("1.5", 1.5)] {
            let v = type_value(raw, ParamType::Number);
            assert!(v.is_f64(), "{raw} gave {v}");
            assert_eq!(v.as_f64(), Some(want));
        }
        assert_eq!(type_value(" 7 ", ParamType::Number), json!(7));
        assert_eq!(type_value("inf", ParamType::Number), json!("inf"));
        assert_eq!(type_value("NaN", ParamType::Number), json!("NaN"));
        assert_eq!(type_value("soon", ParamType::Number), json!("soon"));
        // Python: int(float("12345678901234567890123")), the float's own digits.
        assert_eq!(
            type_value("12345678901234567890123", ParamType::Number),
            json!("12345678901234567741440")
        );
    }

    #[test]
    fn booleans_are_true_only_for_true_as_written() {
        assert_eq!(type_value("true", ParamType::Boolean), json!(true));
        assert_eq!(type_value("True", ParamType::Boolean), json!(true));
        assert_eq!(type_value("TRUE", ParamType::Boolean), json!(true));
        assert_eq!(type_value("true ", ParamType::Boolean), json!(false));
        assert_eq!(type_value(" true", ParamType::Boolean), json!(false));
        assert_eq!(type_value("yes", ParamType::Boolean), json!(false));
        assert_eq!(type_value("1", ParamType::Boolean), json!(false));
    }

    #[test]
    fn objects_and_arrays_parse_as_json_then_as_python() {
        assert_eq!(type_value("[1, 2]", ParamType::Array), json!([1, 2]));
        assert_eq!(
            type_value("{\"b\": 1, \"a\": 2}", ParamType::Object)
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["b", "a"]
        );
        assert_eq!(
            type_value("{'k': 'v', 'n': None, 't': True}", ParamType::Object),
            json!({"k": "v", "n": null, "t": true})
        );
        assert_eq!(
            type_value("('a', 'b')", ParamType::Array),
            json!(["a", "b"])
        );
        assert_eq!(type_value("[1,", ParamType::Array), json!("[1,"));
        assert_eq!(type_value("{1, 2}", ParamType::Array), json!("{1, 2}"));
    }

    #[test]
    fn other_declared_types_read_python_literals() {
        assert_eq!(type_value("42", ParamType::Literal), json!(42));
        assert_eq!(type_value("'x'", ParamType::Literal), json!("x"));
        assert_eq!(type_value("hello", ParamType::Literal), json!("hello"));
    }
}
