//! The mutation operators: for one node of a Python syntax tree, the small edits that turn it
//! into a bug ([`sites`]), each a byte range of the source and its replacement text
//! ([`Mutation`]); and applying one ([`apply`]).
//!
//! - [`Op::InvertCondition`]: the condition of an `if`, `elif` or `while` negated (`if x:` to
//!   `if not (x):`, `if not x:` to `if x:`).
//! - [`Op::SwapComparison`]: `<` and `<=`, `>` and `>=`, `==` and `!=`, `in` and `not in`, `is`
//!   and `is not`, each to the other.
//! - [`Op::SwapArithmetic`]: `+` and `-`, `*` and `/`, `//` to `/`, `<<` and `>>`, `&` and `|`.
//! - [`Op::DropStatement`]: one statement of a block of two or more removed, its whole lines
//!   (never a docstring or `pass`).
//! - [`Op::DropBranch`]: an `elif` or `else` clause of an `if` removed, its whole lines.
//! - [`Op::ShiftConstant`]: a decimal integer literal plus one.
//!
//! Owns: what each operator changes. Does not own: finding the functions the operators run in,
//! or checking that a mutant still parses (`super::parse`).

use tree_sitter::Node;

/// Which operator made a mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    InvertCondition,
    SwapComparison,
    SwapArithmetic,
    DropStatement,
    DropBranch,
    ShiftConstant,
}

impl Op {
    /// The operator as one word.
    pub fn code(self) -> &'static str {
        match self {
            Op::InvertCondition => "invert_condition",
            Op::SwapComparison => "swap_comparison",
            Op::SwapArithmetic => "swap_arithmetic",
            Op::DropStatement => "drop_statement",
            Op::DropBranch => "drop_branch",
            Op::ShiftConstant => "shift_constant",
        }
    }
}

/// One edit: the bytes `start..end` of the source replaced by `replacement`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mutation {
    pub op: Op,
    pub start: usize,
    pub end: usize,
    pub replacement: String,
}

/// `source` with `m` applied (`m`'s range lies on character boundaries: it was made from this
/// source's syntax tree).
pub fn apply(source: &str, m: &Mutation) -> String {
    let mut out = String::with_capacity(source.len() + m.replacement.len());
    out.push_str(&source[..m.start]);
    out.push_str(&m.replacement);
    out.push_str(&source[m.end..]);
    out
}

/// The comparison each comparison operator becomes.
fn swapped_comparison(op: &str) -> Option<&'static str> {
    Some(match op {
        "<" => "<=",
        "<=" => "<",
        ">" => ">=",
        ">=" => ">",
        "==" => "!=",
        "!=" => "==",
        "in" => "not in",
        "not in" => "in",
        "is" => "is not",
        "is not" => "is",
        _ => return None,
    })
}

/// The operator each arithmetic operator becomes.
fn swapped_arithmetic(op: &str) -> Option<&'static str> {
    Some(match op {
        "+" => "-",
        "-" => "+",
        "*" => "/",
        "/" => "*",
        "//" => "/",
        "<<" => ">>",
        ">>" => "<<",
        "&" => "|",
        "|" => "&",
        _ => return None,
    })
}

/// The mutations of `node` itself (not of its children), pushed onto `out`.
pub fn sites(node: Node<'_>, src: &str, out: &mut Vec<Mutation>) {
    let text = |n: Node<'_>| &src[n.start_byte()..n.end_byte()];
    let edit = |op, n: Node<'_>, replacement: String| Mutation {
        op,
        start: n.start_byte(),
        end: n.end_byte(),
        replacement,
    };
    match node.kind() {
        "if_statement" | "elif_clause" | "while_statement" => {
            if let Some(cond) = node.child_by_field_name("condition") {
                out.push(edit(Op::InvertCondition, cond, inverted(cond, src)));
            }
            if node.kind() == "if_statement" {
                let mut c = node.walk();
                for alt in node.children_by_field_name("alternative", &mut c) {
                    if let Some((start, end)) = whole_lines(src, alt.start_byte(), alt.end_byte()) {
                        out.push(Mutation {
                            op: Op::DropBranch,
                            start,
                            end,
                            replacement: String::new(),
                        });
                    }
                }
            }
        }
        "comparison_operator" => {
            let mut c = node.walk();
            for child in node.children(&mut c).filter(|n| !n.is_named()) {
                if let Some(to) = swapped_comparison(child.kind()) {
                    out.push(edit(Op::SwapComparison, child, to.to_string()));
                }
            }
        }
        "binary_operator" => {
            if let Some(op) = node.child_by_field_name("operator") {
                if let Some(to) = swapped_arithmetic(op.kind()) {
                    out.push(edit(Op::SwapArithmetic, op, to.to_string()));
                }
            }
        }
        "integer" => {
            let t = text(node);
            let decimal =
                t.bytes().all(|b| b.is_ascii_digit()) && (t == "0" || !t.starts_with('0'));
            if let Some(n) = decimal.then(|| t.parse::<u64>().ok()).flatten() {
                if let Some(shifted) = n.checked_add(1) {
                    out.push(edit(Op::ShiftConstant, node, shifted.to_string()));
                }
            }
        }
        "block" => {
            let mut c = node.walk();
            let statements: Vec<Node<'_>> = node
                .named_children(&mut c)
                .filter(|n| n.kind() != "comment")
                .collect();
            if statements.len() < 2 {
                return;
            }
            for s in statements {
                if s.kind() == "pass_statement" || is_docstring(s) {
                    continue;
                }
                if let Some((start, end)) = whole_lines(src, s.start_byte(), s.end_byte()) {
                    out.push(Mutation {
                        op: Op::DropStatement,
                        start,
                        end,
                        replacement: String::new(),
                    });
                }
            }
        }
        _ => {}
    }
}

/// The negation of the condition `cond`.
fn inverted(cond: Node<'_>, src: &str) -> String {
    let text = &src[cond.start_byte()..cond.end_byte()];
    if cond.kind() == "not_operator" {
        if let Some(arg) = cond.child_by_field_name("argument") {
            return src[arg.start_byte()..arg.end_byte()].to_string();
        }
    }
    if cond.kind() == "parenthesized_expression" {
        format!("not {text}")
    } else {
        format!("not ({text})")
    }
}

/// Whether statement `s` is a string alone (a docstring).
fn is_docstring(s: Node<'_>) -> bool {
    s.kind() == "expression_statement"
        && s.named_child_count() == 1
        && s.named_child(0).is_some_and(|c| c.kind() == "string")
}

/// The whole lines holding `start..end`, with the ending newline, when nothing but indentation
/// comes before it on its first line and nothing but a comment after it on its last.
pub fn whole_lines(src: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let line_start = src[..start].rfind('\n').map_or(0, |i| i + 1);
    if !src[line_start..start].trim().is_empty() {
        return None;
    }
    let line_end = src[end..].find('\n').map_or(src.len(), |i| end + i + 1);
    let after = src[end..line_end].trim();
    if !(after.is_empty() || after.starts_with('#')) {
        return None;
    }
    Some((line_start, line_end))
}
