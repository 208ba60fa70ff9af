//! The message line's popups: the command palette and the file picker, drawn just above the
//! message line over the bottom of the transcript. Only reads the App
//! (`crate::tui::app::pickers` decides what they list).

use crate::tui::app::pickers::Entry;
use crate::tui::app::App;
use crate::tui::keymap::{self, Context};
use crate::tui::wrap::truncate;
use crate::tui::KeyScheme;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

/// Most entries a popup shows at once; the list scrolls to keep the chosen one in view.
const POPUP_ROWS: usize = 8;

/// Draw whichever picker is open into the bottom of `above` (the area over the message line).
pub(super) fn draw(frame: &mut Frame<'_>, above: Rect, app: &App) {
    if app.overlay.is_some() || !app.message_line_open() {
        return;
    }
    if app.picker.is_some() {
        paths(frame, above, app);
    } else if app.palette.is_some() {
        palette(frame, above, app);
    }
}

fn palette(frame: &mut Frame<'_>, above: Rect, app: &App) {
    let t = &app.theme;
    let entries = app.palette_entries();
    let selected = app.palette.as_ref().map(|p| p.selected);
    let name_w = entries
        .iter()
        .map(|e| e.name().chars().count() + 1)
        .max()
        .unwrap_or(0)
        .min(24);
    // Beside the name: a command's key in the keys in use, a prompt file's argument hint.
    let asides: Vec<(String, &str)> = entries
        .iter()
        .map(|e| match e {
            Entry::Command(bd) => (key_of(app, bd.action), ""),
            Entry::Prompt(p) => (p.argument_hint.clone().unwrap_or_default(), "prompt · "),
        })
        .collect();
    let aside_w = asides
        .iter()
        .map(|(a, _)| a.chars().count())
        .max()
        .unwrap_or(0)
        .min(16);
    let rows: Vec<Line<'static>> = if entries.is_empty() {
        vec![Line::styled(
            "no command or prompt file of that name: Enter sends the text as a message",
            t.dim(),
        )]
    } else {
        entries
            .iter()
            .zip(asides)
            .map(|(e, (aside, kind))| {
                let name = format!("/{}", e.name());
                vec![
                    Span::styled(format!("{name:<name_w$}  "), t.accent()),
                    Span::styled(format!("{aside:<aside_w$}  "), t.dim()),
                    Span::styled(format!("{kind}{}", e.summary()), t.fg(t.text)),
                ]
                .into()
            })
            .collect()
    };
    let title = format!(" commands ({}) ", entries.len());
    let selected = selected.filter(|_| !entries.is_empty());
    popup(frame, above, app, &title, rows, selected);
}

fn paths(frame: &mut Frame<'_>, above: Rect, app: &App) {
    let t = &app.theme;
    let matches = app.path_matches();
    let selected = app
        .picker
        .as_ref()
        .map(|p| p.selected)
        .filter(|_| !matches.is_empty());
    let rows: Vec<Line<'static>> = match &app.paths.paths {
        None => vec![Line::styled("reading the repository…", t.dim())],
        Some(_) if matches.is_empty() => {
            vec![Line::styled("no file of the repository matches", t.dim())]
        }
        Some(_) => matches
            .iter()
            .map(|p| Line::styled(p.clone(), t.fg(t.text)))
            .collect(),
    };
    popup(frame, above, app, " files ", rows, selected);
}

/// The keys that run `action` in the keys in use (the first binding's), for the palette.
fn key_of(app: &App, action: keymap::Action) -> String {
    let contexts: &[Context] = match app.keys {
        KeyScheme::Chat => &[Context::Chat, Context::Input, Context::Anywhere],
        KeyScheme::Modal => &[
            Context::Transcript,
            Context::Browse,
            Context::Input,
            Context::Anywhere,
        ],
    };
    contexts
        .iter()
        .find_map(|c| {
            keymap::BINDINGS
                .iter()
                .find(|bd| bd.context == *c && bd.action == action)
        })
        .and_then(|bd| bd.keys.first())
        .map(|k| k.label())
        .unwrap_or_default()
}

/// A bordered list at the bottom of `above`, the `selected` row (if any) marked and kept in
/// view.
fn popup(
    frame: &mut Frame<'_>,
    above: Rect,
    app: &App,
    title: &str,
    rows: Vec<Line<'static>>,
    selected: Option<usize>,
) {
    let t = &app.theme;
    let shown = rows.len().clamp(1, POPUP_ROWS);
    let h = (shown as u16 + 2).min(above.height);
    if h < 3 {
        return;
    }
    let area = Rect {
        x: above.x,
        y: above.y + above.height - h,
        width: above.width,
        height: h,
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.fg(t.accent))
        .title(Span::styled(
            title.to_string(),
            t.accent().add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(area);
    let visible = inner.height as usize;
    let top = selected.map_or(0, |s| (s + 1).saturating_sub(visible));
    let width = inner.width as usize;
    let lines: Vec<Line<'static>> = rows
        .into_iter()
        .enumerate()
        .skip(top)
        .take(visible)
        .map(|(i, line)| {
            let mut line = fit(line, width.saturating_sub(2));
            let chosen = selected == Some(i);
            let marker = if chosen { "› " } else { "  " };
            line.spans.insert(0, Span::styled(marker, t.accent()));
            if chosen {
                line = line.patch_style(Style::default().bg(t.selection_bg));
            }
            line
        })
        .collect();
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// `line` cut to `width` columns, each span keeping its colour (the cut one ends in `…`).
fn fit(line: Line<'static>, width: usize) -> Line<'static> {
    let mut left = width;
    let mut spans = Vec::new();
    for span in line.spans {
        if left == 0 {
            break;
        }
        let w = unicode_width::UnicodeWidthStr::width(span.content.as_ref());
        if w <= left {
            left -= w;
            spans.push(span);
        } else {
            spans.push(Span::styled(truncate(&span.content, left), span.style));
            left = 0;
        }
    }
    Line::from(spans)
}
