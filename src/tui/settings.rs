//! The interface's own settings (`[interface]` in the config file; `crate::config` gathers
//! them): how reasoning is shown. Owns the setting's values and their cycle order; does not
//! read files or the environment.

use serde::{Deserialize, Serialize};

/// How the model's reasoning is drawn in the transcript. `r` cycles through the three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningView {
    /// A thought streams as its last lines, then folds to one line (`✻ Thought (n lines)`).
    #[default]
    Collapsed,
    /// Every thought streams in full and stays open.
    Full,
    /// No reasoning in the transcript; the status line still says what the model thinks.
    Hidden,
}

impl ReasoningView {
    /// The next view in the cycle `r` goes through.
    pub fn next(self) -> Self {
        match self {
            ReasoningView::Collapsed => ReasoningView::Full,
            ReasoningView::Full => ReasoningView::Hidden,
            ReasoningView::Hidden => ReasoningView::Collapsed,
        }
    }

    /// The word for it, as the config file spells it.
    pub fn name(self) -> &'static str {
        match self {
            ReasoningView::Collapsed => "collapsed",
            ReasoningView::Full => "full",
            ReasoningView::Hidden => "hidden",
        }
    }
}

/// `[interface]`: settings of the terminal interface.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InterfaceSettings {
    /// `collapsed` (the default), `full` or `hidden`.
    pub reasoning: ReasoningView,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_through_all_three_and_parses_their_names() {
        let mut v = ReasoningView::default();
        let mut seen = vec![];
        for _ in 0..3 {
            seen.push(v.name());
            v = v.next();
        }
        assert_eq!(seen, ["collapsed", "full", "hidden"]);
        assert_eq!(v, ReasoningView::Collapsed);
        let s: InterfaceSettings = toml::from_str("reasoning = \"hidden\"").unwrap();
        assert_eq!(s.reasoning, ReasoningView::Hidden);
        assert!(toml::from_str::<InterfaceSettings>("reasoning = \"loud\"").is_err());
    }
}
