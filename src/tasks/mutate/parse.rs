//! Python source read with tree-sitter's Python grammar: the functions of a module (methods
//! and nested functions too, named by where they are: `Class.method`, `outer.inner`) and the
//! mutations inside each ([`mutants`]), every one checked to leave source that still parses.
//!
//! Owns: the parser and the walk over functions. Does not own: what an operator changes
//! (`super::ops`).

use super::ops::{self, Mutation};
use thiserror::Error;
use tree_sitter::{Node, Parser, Tree};

#[derive(Debug, Error)]
pub enum ParseError {
    #[error("loading tree-sitter's Python grammar: {0}")]
    Language(#[from] tree_sitter::LanguageError),
    #[error("tree-sitter could not parse {0}")]
    Parse(String),
}

/// A mutation of one function of a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutant {
    /// The module's path in the repository.
    pub path: String,
    /// The function, qualified by its classes and enclosing functions.
    pub function: String,
    /// The 1-based line the edit starts on.
    pub line: usize,
    pub mutation: Mutation,
}

impl Mutant {
    /// The mutant in words: its operator, place, and the text before and after (first line).
    pub fn describe(&self, source: &str) -> String {
        let m = &self.mutation;
        let first = |s: &str| s.trim().lines().next().unwrap_or("").to_string();
        let after = if m.replacement.is_empty() {
            "(removed)".to_string()
        } else {
            first(&m.replacement)
        };
        format!(
            "{} in {} at {}:{}: {} -> {}",
            m.op.code(),
            self.function,
            self.path,
            self.line,
            first(&source[m.start..m.end]),
            after
        )
    }
}

/// A parser of Python.
fn parser() -> Result<Parser, ParseError> {
    let mut p = Parser::new();
    p.set_language(&tree_sitter_python::LANGUAGE.into())?;
    Ok(p)
}

/// `source`'s syntax tree (`what` names it in an error).
fn tree(p: &mut Parser, source: &str, what: &str) -> Result<Tree, ParseError> {
    p.parse(source, None)
        .ok_or_else(|| ParseError::Parse(what.to_string()))
}

/// Every mutation in the functions of the module `path` whose text is `source`, in the
/// source's order; none when the module itself does not parse cleanly (its syntax is not the
/// grammar's, and a mutant could not be told apart from the parser's guesses).
pub fn mutants(path: &str, source: &str) -> Result<Vec<Mutant>, ParseError> {
    let mut p = parser()?;
    let t = tree(&mut p, source, path)?;
    if t.root_node().has_error() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    functions(t.root_node(), source, "", &mut |function, body| {
        let mut edits = Vec::new();
        in_function(body, source, &mut edits);
        for mutation in edits {
            let line = source[..mutation.start].matches('\n').count() + 1;
            found.push(Mutant {
                path: path.to_string(),
                function: function.to_string(),
                line,
                mutation,
            });
        }
    });
    let mut kept = Vec::with_capacity(found.len());
    for m in found {
        let text = ops::apply(source, &m.mutation);
        if !tree(&mut p, &text, path)?.root_node().has_error() {
            kept.push(m);
        }
    }
    Ok(kept)
}

/// Call `each` with every function under `node` (its qualified name and its body).
fn functions<'t>(node: Node<'t>, src: &str, prefix: &str, each: &mut dyn FnMut(&str, Node<'t>)) {
    let mut c = node.walk();
    for child in node.named_children(&mut c) {
        let name = child
            .child_by_field_name("name")
            .map(|n| &src[n.start_byte()..n.end_byte()]);
        let qualified = |n: &str| {
            if prefix.is_empty() {
                n.to_string()
            } else {
                format!("{prefix}.{n}")
            }
        };
        match (child.kind(), name) {
            ("function_definition", Some(n)) => {
                let q = qualified(n);
                if let Some(body) = child.child_by_field_name("body") {
                    each(&q, body);
                    functions(body, src, &q, each);
                }
            }
            ("class_definition", Some(n)) => functions(child, src, &qualified(n), each),
            _ => functions(child, src, prefix, each),
        }
    }
}

/// The mutations of `node` and everything under it but nested functions and classes (those
/// are functions of their own).
fn in_function(node: Node<'_>, src: &str, out: &mut Vec<Mutation>) {
    ops::sites(node, src, out);
    let mut c = node.walk();
    for child in node.children(&mut c) {
        if !matches!(child.kind(), "function_definition" | "class_definition") {
            in_function(child, src, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::mutate::ops::Op;

    /// Each mutant of `src` as (operator, function, mutated source).
    fn all(src: &str) -> Vec<(Op, String, String)> {
        mutants("m.py", src)
            .unwrap()
            .into_iter()
            .map(|m| {
                (
                    m.mutation.op,
                    m.function.clone(),
                    ops::apply(src, &m.mutation),
                )
            })
            .collect()
    }

    fn of(src: &str, op: Op) -> Vec<String> {
        all(src)
            .into_iter()
            .filter(|(o, _, _)| *o == op)
            .map(|(_, _, t)| t)
            .collect()
    }

    #[test]
    fn conditions_are_inverted() {
        let src = "def f(x):\n    if x > 0:\n        return 1\n    while not x:\n        x = g()\n    return 0\n";
        assert_eq!(
            of(src, Op::InvertCondition),
            [
                "def f(x):\n    if not (x > 0):\n        return 1\n    while not x:\n        x = g()\n    return 0\n",
                "def f(x):\n    if x > 0:\n        return 1\n    while x:\n        x = g()\n    return 0\n",
            ]
        );
        let paren =
            "def f(x):\n    if (x and y):\n        return 1\n    elif x:\n        return 2\n";
        assert_eq!(
            of(paren, Op::InvertCondition),
            [
                "def f(x):\n    if not (x and y):\n        return 1\n    elif x:\n        return 2\n",
                "def f(x):\n    if (x and y):\n        return 1\n    elif not (x):\n        return 2\n",
            ]
        );
    }

    #[test]
    fn comparisons_are_swapped() {
        let src = "def f(a, b):\n    return a < b and a == b and a is not None and a not in b\n";
        assert_eq!(
            of(src, Op::SwapComparison),
            [
                "def f(a, b):\n    return a <= b and a == b and a is not None and a not in b\n",
                "def f(a, b):\n    return a < b and a != b and a is not None and a not in b\n",
                "def f(a, b):\n    return a < b and a == b and a is None and a not in b\n",
                "def f(a, b):\n    return a < b and a == b and a is not None and a in b\n",
            ]
        );
        assert_eq!(
            of("def f(a, b):\n    return a >= b\n", Op::SwapComparison),
            ["def f(a, b):\n    return a > b\n"]
        );
    }

    #[test]
    fn arithmetic_is_swapped() {
        let src = "def f(a, b):\n    return a + b * c // d - -e\n";
        assert_eq!(
            of(src, Op::SwapArithmetic),
            [
                "def f(a, b):\n    return a + b * c // d + -e\n",
                "def f(a, b):\n    return a - b * c // d - -e\n",
                "def f(a, b):\n    return a + b * c / d - -e\n",
                "def f(a, b):\n    return a + b / c // d - -e\n",
            ]
        );
    }

    #[test]
    fn statements_and_branches_are_dropped_by_whole_lines() {
        let src = "def f(x):\n    \"\"\"Doc.\"\"\"\n    y = x  # note\n    if y:\n        y += 1\n    elif x:\n        pass\n    else:\n        y = 0\n    return y\n";
        assert_eq!(
            of(src, Op::DropStatement),
            [
                "def f(x):\n    \"\"\"Doc.\"\"\"\n    if y:\n        y += 1\n    elif x:\n        pass\n    else:\n        y = 0\n    return y\n",
                "def f(x):\n    \"\"\"Doc.\"\"\"\n    y = x  # note\n    return y\n",
                "def f(x):\n    \"\"\"Doc.\"\"\"\n    y = x  # note\n    if y:\n        y += 1\n    elif x:\n        pass\n    else:\n        y = 0\n",
            ]
        );
        assert_eq!(
            of(src, Op::DropBranch),
            [
                "def f(x):\n    \"\"\"Doc.\"\"\"\n    y = x  # note\n    if y:\n        y += 1\n    else:\n        y = 0\n    return y\n",
                "def f(x):\n    \"\"\"Doc.\"\"\"\n    y = x  # note\n    if y:\n        y += 1\n    elif x:\n        pass\n    return y\n",
            ]
        );
        // Two statements on one line are left alone.
        assert!(of(
            "def f():\n    a = 1; b = 2\n    return a\n",
            Op::DropStatement
        )
        .iter()
        .all(|t| t.contains("a = 1; b = 2")));
    }

    #[test]
    fn decimal_constants_are_shifted_by_one() {
        // Hex, underscores, floats and leading zeros are left alone.
        let src = "def f(x):\n    return x[0] + 0x10 + 1_000 + 41 + 1.5 + 007\n";
        assert_eq!(
            of(src, Op::ShiftConstant),
            [
                "def f(x):\n    return x[1] + 0x10 + 1_000 + 41 + 1.5 + 007\n",
                "def f(x):\n    return x[0] + 0x10 + 1_000 + 42 + 1.5 + 007\n",
            ]
        );
    }

    #[test]
    fn only_functions_are_mutated_and_named_by_their_place() {
        let src = "LIMIT = 3\nif LIMIT > 2:\n    X = 1 + 2\n\n\nclass A:\n    size = 4\n\n    def m(self):\n        def inner():\n            return 5\n        return inner() + 6\n";
        let found: Vec<(Op, String)> = all(src).into_iter().map(|(o, f, _)| (o, f)).collect();
        assert_eq!(
            found,
            [
                (Op::DropStatement, "A.m".to_string()),
                (Op::DropStatement, "A.m".to_string()),
                (Op::SwapArithmetic, "A.m".to_string()),
                (Op::ShiftConstant, "A.m".to_string()),
                (Op::ShiftConstant, "A.m.inner".to_string()),
            ]
        );
    }

    #[test]
    fn a_mutant_is_described_without_its_whole_text() {
        let src = "def f(a):\n    return a < 1\n";
        let m = &mutants("pkg/m.py", src).unwrap()[0];
        assert_eq!(
            m.describe(src),
            "swap_comparison in f at pkg/m.py:2: < -> <="
        );
    }
}
