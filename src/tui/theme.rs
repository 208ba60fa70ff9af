//! Colours by role, read from a theme file (`themes/dark.toml`, `themes/light.toml` are built
//! in; any other file with the same keys works). The rest of the interface asks for roles
//! (`theme.added`, `theme.dim`), never for colours, and the syntax theme for code follows the
//! chosen theme.

use crate::diff::{Highlighter, Rgb};
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use std::path::{Path, PathBuf};

const DARK: &str = include_str!("../../themes/dark.toml");
const LIGHT: &str = include_str!("../../themes/light.toml");

/// Why a theme could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    #[error("cannot read theme {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("theme {name} is not valid: {source}")]
    Parse {
        name: String,
        source: toml::de::Error,
    },
    #[error("theme {name}: colour {role} = {value:?} is not \"#rrggbb\" or \"reset\"")]
    Colour {
        name: String,
        role: &'static str,
        value: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    syntax: String,
    colors: Colours,
}

macro_rules! roles {
    ($($role:ident),* $(,)?) => {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Colours { $($role: String),* }

        /// The interface's colours by role.
        #[derive(Debug, Clone)]
        pub struct Theme {
            pub name: String,
            /// The syntect theme for code.
            pub syntax: String,
            $(pub $role: Color),*
        }

        impl Theme {
            fn from_file(f: ThemeFile) -> Result<Self, ThemeError> {
                Ok(Self {
                    $($role: colour(&f.name, stringify!($role), &f.colors.$role)?,)*
                    name: f.name,
                    syntax: f.syntax,
                })
            }
        }
    };
}

roles!(
    text,
    dim,
    accent,
    heading,
    code,
    added,
    removed,
    added_bg,
    removed_bg,
    added_emph_bg,
    removed_emph_bg,
    line_number,
    hunk_header,
    warning,
    error,
    border,
    selection_bg,
    status_fg,
    status_bg,
);

fn colour(name: &str, role: &'static str, value: &str) -> Result<Color, ThemeError> {
    let bad = || ThemeError::Colour {
        name: name.to_string(),
        role,
        value: value.to_string(),
    };
    if value.eq_ignore_ascii_case("reset") {
        return Ok(Color::Reset);
    }
    let hex = value.strip_prefix('#').ok_or_else(bad)?;
    if hex.len() != 6 {
        return Err(bad());
    }
    let n = u32::from_str_radix(hex, 16).map_err(|_| bad())?;
    Ok(Color::Rgb((n >> 16) as u8, (n >> 8) as u8, n as u8))
}

impl Theme {
    /// A built-in theme (`dark`, `light`) or a theme file path.
    pub fn load(name_or_path: &str) -> Result<Self, ThemeError> {
        let text = match name_or_path {
            "dark" => DARK.to_string(),
            "light" => LIGHT.to_string(),
            path => {
                std::fs::read_to_string(Path::new(path)).map_err(|source| ThemeError::Read {
                    path: PathBuf::from(path),
                    source,
                })?
            }
        };
        Self::parse(name_or_path, &text)
    }

    /// A theme from TOML text.
    pub fn parse(name: &str, text: &str) -> Result<Self, ThemeError> {
        let file: ThemeFile = toml::from_str(text).map_err(|source| ThemeError::Parse {
            name: name.to_string(),
            source,
        })?;
        Self::from_file(file)
    }

    /// The built-in dark theme.
    pub fn dark() -> Self {
        // Invariant: the built-in theme is checked by the tests below.
        Self::parse("dark", DARK).unwrap_or_else(|_| Self::fallback())
    }

    /// The built-in light theme.
    pub fn light() -> Self {
        Self::parse("light", LIGHT).unwrap_or_else(|_| Self::fallback())
    }

    fn fallback() -> Self {
        Self {
            name: "fallback".into(),
            syntax: crate::diff::highlight::DEFAULT_THEME.into(),
            text: Color::Reset,
            dim: Color::DarkGray,
            accent: Color::Cyan,
            heading: Color::Cyan,
            code: Color::Yellow,
            added: Color::Green,
            removed: Color::Red,
            added_bg: Color::Reset,
            removed_bg: Color::Reset,
            added_emph_bg: Color::DarkGray,
            removed_emph_bg: Color::DarkGray,
            line_number: Color::DarkGray,
            hunk_header: Color::Magenta,
            warning: Color::Yellow,
            error: Color::Red,
            border: Color::DarkGray,
            selection_bg: Color::DarkGray,
            status_fg: Color::White,
            status_bg: Color::Reset,
        }
    }

    /// The code highlighter that goes with this theme.
    pub fn highlighter(&self) -> Highlighter {
        Highlighter::new(&self.syntax)
    }

    pub fn fg(&self, c: Color) -> Style {
        Style::default().fg(c)
    }

    pub fn dim(&self) -> Style {
        Style::default().fg(self.dim)
    }

    pub fn accent(&self) -> Style {
        Style::default().fg(self.accent)
    }

    pub fn bold(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    pub fn status(&self) -> Style {
        Style::default().fg(self.status_fg).bg(self.status_bg)
    }
}

/// A syntax colour as a terminal colour.
pub fn rgb(c: Rgb) -> Color {
    Color::Rgb(c.0, c.1, c.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_themes_parse() {
        for name in ["dark", "light"] {
            let t = Theme::load(name).expect(name);
            assert_eq!(t.name, name);
            assert!(crate::diff::highlight::theme_names().contains(&t.syntax));
        }
    }

    #[test]
    fn bad_colours_are_named() {
        let bad = DARK.replace("\"#87d787\"", "\"green\"");
        let err = Theme::parse("x", &bad).unwrap_err().to_string();
        assert!(err.contains("added"), "{err}");
    }
}
