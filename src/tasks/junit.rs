//! pytest's JUnit XML (`--junitxml`) read into test outcomes keyed by pytest's own test ids
//! (`tests/test_x.py::TestClass::test_name[param]`), never pytest's text output.
//!
//! pytest writes one `<testcase classname=".." name="..">` per test: `classname` is the test's
//! module path with dots (`tests.test_x`, then the class: `tests.test_x.TestClass`), `name` the
//! function with its parameters. A child `<failure>`, `<error>` or `<skipped>` says how it went
//! (none: passed), with a `message` attribute and the traceback as text. A module that could
//! not be collected is a test case with an empty `classname`, its dotted module as `name`, and
//! an `<error message="collection failure">`: a [`FileError`], not a test. The ids are made
//! back from the files pytest ran ([`Report::parse`]'s `files`): the longest file whose dotted
//! form begins the classname is the test's file.
//!
//! Owns: parsing and the id rule. Does not own: running pytest (`super::validate`).

use quick_xml::events::Event;
use quick_xml::Reader;
use std::collections::BTreeMap;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum JunitError {
    #[error("reading pytest's JUnit XML: {0}")]
    Xml(#[from] quick_xml::Error),
    #[error("reading pytest's JUnit XML: an attribute: {0}")]
    Attribute(#[from] quick_xml::events::attributes::AttrError),
    #[error("pytest's JUnit XML has no <testsuite>")]
    NotJunit,
}

/// How one test went. Ordered from best to worst: a test reported twice (a failure in the
/// call and an error in its teardown) keeps the worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Passed,
    Skipped,
    Failed,
    /// An error outside the test's body (a fixture's setup or teardown).
    Error,
}

/// One test's result.
#[derive(Debug, Clone, PartialEq)]
pub struct TestCase {
    pub id: String,
    pub outcome: Outcome,
    /// The `message` of the failure, error or skip (empty when it passed).
    pub message: String,
    /// The traceback pytest wrote (empty when it passed).
    pub text: String,
}

/// A test module pytest could not collect.
#[derive(Debug, Clone, PartialEq)]
pub struct FileError {
    pub file: String,
    /// pytest's report (the import error and its traceback).
    pub text: String,
}

/// The tests of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub cases: Vec<TestCase>,
    pub file_errors: Vec<FileError>,
}

impl Report {
    /// Parse `xml`, written by pytest for a run over `files` (paths relative to its rootdir).
    pub fn parse(xml: &str, files: &[String]) -> Result<Self, JunitError> {
        let mut reader = Reader::from_str(xml);
        let mut report = Report::default();
        let mut suite = false;
        // The open test case: (classname, name, outcome, message, text), and whether its
        // child element's text is being read.
        let mut open: Option<(String, String, Outcome, String, String)> = None;
        let mut in_result = false;
        loop {
            let event = reader.read_event()?;
            match &event {
                Event::Start(e) | Event::Empty(e) => {
                    let empty = matches!(event, Event::Empty(_));
                    match e.local_name().as_ref() {
                        "testsuite" => suite = true,
                        "testcase" => {
                            let (class, name) = (attr(e, "classname")?, attr(e, "name")?);
                            open =
                                Some((class, name, Outcome::Passed, String::new(), String::new()));
                            if empty {
                                report.close(open.take(), files);
                            }
                        }
                        tag @ ("failure" | "error" | "skipped") => {
                            if let Some(case) = open.as_mut() {
                                let outcome = match tag {
                                    "failure" => Outcome::Failed,
                                    "error" => Outcome::Error,
                                    _ => Outcome::Skipped,
                                };
                                if outcome > case.2 {
                                    case.2 = outcome;
                                    case.3 = attr(e, "message")?;
                                    case.4.clear();
                                    in_result = !empty;
                                }
                            }
                        }
                        _ => {}
                    }
                }
                Event::Text(t) if in_result => {
                    if let Some(case) = open.as_mut() {
                        case.4.push_str(&t.xml10_content());
                    }
                }
                Event::CData(t) if in_result => {
                    if let Some(case) = open.as_mut() {
                        case.4.push_str(&t.xml10_content());
                    }
                }
                Event::GeneralRef(r) if in_result => {
                    if let Some(case) = open.as_mut() {
                        let resolved = match r.resolve_char_ref()? {
                            Some(c) => c.to_string(),
                            None => {
                                let name = r.xml10_content();
                                quick_xml::escape::resolve_predefined_entity(&name)
                                    .unwrap_or("")
                                    .to_string()
                            }
                        };
                        case.4.push_str(&resolved);
                    }
                }
                Event::End(e) => match e.local_name().as_ref() {
                    "testcase" => report.close(open.take(), files),
                    "failure" | "error" | "skipped" => in_result = false,
                    _ => {}
                },
                Event::Eof => break,
                _ => {}
            }
        }
        if !suite {
            return Err(JunitError::NotJunit);
        }
        Ok(report)
    }

    fn close(&mut self, case: Option<(String, String, Outcome, String, String)>, files: &[String]) {
        let Some((class, name, outcome, message, text)) = case else {
            return;
        };
        if class.is_empty() && message == "collection failure" {
            self.file_errors.push(FileError {
                file: file_of(&name, files).0,
                text,
            });
            return;
        }
        self.cases.push(TestCase {
            id: node_id(&class, &name, files),
            outcome,
            message,
            text,
        });
    }

    /// Each test's outcome by its id (the worse of two reports of one test).
    pub fn outcomes(&self) -> BTreeMap<&str, Outcome> {
        let mut out = BTreeMap::new();
        for c in &self.cases {
            let o = out.entry(c.id.as_str()).or_insert(c.outcome);
            *o = (*o).max(c.outcome);
        }
        out
    }

    /// The test `id`'s worst report.
    pub fn case(&self, id: &str) -> Option<&TestCase> {
        self.cases
            .iter()
            .filter(|c| c.id == id)
            .max_by_key(|c| c.outcome)
    }
}

fn attr(e: &quick_xml::events::BytesStart<'_>, key: &str) -> Result<String, JunitError> {
    for a in e.attributes() {
        let a = a?;
        if a.key.as_ref() == key {
            return Ok(a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)?
                .into_owned());
        }
    }
    Ok(String::new())
}

/// The file of dotted path `dotted` among `files`, and the rest of the path after it (empty,
/// or a class path); a path no file begins is taken as a module path itself.
fn file_of(dotted: &str, files: &[String]) -> (String, String) {
    let best = files
        .iter()
        .map(|f| (f, f.trim_end_matches(".py").replace('/', ".")))
        .filter(|(_, d)| {
            dotted == d
                || dotted
                    .strip_prefix(d.as_str())
                    .is_some_and(|r| r.starts_with('.'))
        })
        .max_by_key(|(_, d)| d.len());
    match best {
        Some((f, d)) => (
            f.clone(),
            dotted[d.len()..].trim_start_matches('.').to_string(),
        ),
        None => (format!("{}.py", dotted.replace('.', "/")), String::new()),
    }
}

/// pytest's id of the test `name` of `classname`.
fn node_id(classname: &str, name: &str, files: &[String]) -> String {
    let (file, rest) = file_of(classname, files);
    match rest.is_empty() {
        true => format!("{file}::{name}"),
        false => format!("{file}::{}::{name}", rest.replace('.', "::")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by pytest 8.3.5 (`python -m pytest -p no:cacheprovider --rootdir=.
    /// --continue-on-collection-errors --junitxml=... tests/test_calc.py tests/test_broken.py`
    /// in `tests/data/tasks/junit-source/`) over a test module with a failing assertion, a
    /// pass, a skip, two parameters, a class, a broken fixture, and a module whose import
    /// fails.
    const REAL: &str = include_str!("../../tests/data/tasks/junit-pytest-8.3.5.xml");

    fn files() -> Vec<String> {
        vec!["tests/test_calc.py".into(), "tests/test_broken.py".into()]
    }

    #[test]
    fn real_pytest_output_reads_into_ids_and_outcomes() {
        let r = Report::parse(REAL, &files()).unwrap();
        let got: Vec<(&str, Outcome)> = r.outcomes().into_iter().collect();
        assert_eq!(
            got,
            [
                (
                    "tests/test_calc.py::TestThings::test_method",
                    Outcome::Failed
                ),
                ("tests/test_calc.py::test_add", Outcome::Failed),
                ("tests/test_calc.py::test_fixture_error", Outcome::Error),
                ("tests/test_calc.py::test_param[1-0]", Outcome::Passed),
                ("tests/test_calc.py::test_param[2-1]", Outcome::Failed),
                ("tests/test_calc.py::test_skipped", Outcome::Skipped),
                ("tests/test_calc.py::test_zero", Outcome::Passed),
            ]
        );
        let add = r.case("tests/test_calc.py::test_add").unwrap();
        assert_eq!(
            add.message,
            "AssertionError: two and two make four\nassert 0 == 4\n +  where 0 = add(2, 2)"
        );
        assert!(
            add.text.contains(">       assert add(2, 2) == 4"),
            "{}",
            add.text
        );
        let method = r
            .case("tests/test_calc.py::TestThings::test_method")
            .unwrap();
        assert_eq!(method.message, "ValueError: bad <value> & \"quoted\"");
        assert!(method
            .text
            .contains("E       ValueError: bad <value> & \"quoted\""));
        assert_eq!(r.file_errors.len(), 1);
        assert_eq!(r.file_errors[0].file, "tests/test_broken.py");
        assert!(r.file_errors[0]
            .text
            .contains("ImportError: cannot import name 'missing_name'"));
    }

    #[test]
    fn the_worse_report_of_a_test_wins_and_non_junit_is_refused() {
        let xml = r#"<testsuites><testsuite name="pytest">
            <testcase classname="t" name="a"/>
            <testcase classname="t" name="a"><error message="teardown"/></testcase>
            <testcase classname="pkg.sub.t" name="b"/>
            </testsuite></testsuites>"#;
        let r = Report::parse(xml, &["t.py".into()]).unwrap();
        assert_eq!(r.outcomes()["t.py::a"], Outcome::Error);
        assert_eq!(r.case("t.py::a").unwrap().message, "teardown");
        assert!(r.outcomes().contains_key("pkg/sub/t.py::b"));
        assert!(matches!(
            Report::parse("<html/>", &[]),
            Err(JunitError::NotJunit)
        ));
        assert!(Report::parse("<testsuite><testcase", &[]).is_err());
    }
}
