//! The model's Markdown drawn as HTML for the exported page, with the extensions the interface
//! reads (tables, strikethrough). The text is the model's, so the page does not trust it: raw
//! HTML in it is shown as text, links keep only web and mail addresses, and images become
//! their alt text (the page loads nothing from outside).
//!
//! Does not own: the page around it (`super::html`).

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};

/// `text` (CommonMark) as an HTML fragment.
pub(super) fn markdown_html(text: &str) -> String {
    let opts = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    let events = Parser::new_ext(text, opts).filter_map(|e| match e {
        Event::Html(h) | Event::InlineHtml(h) => Some(Event::Text(h)),
        Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Some(Event::Start(Tag::Link {
            link_type,
            dest_url: if safe_url(&dest_url) {
                dest_url
            } else {
                CowStr::Borrowed("")
            },
            title,
            id,
        })),
        e => Some(e),
    });
    let mut out = String::with_capacity(text.len() * 2);
    html::push_html(&mut out, events);
    out
}

/// Web and mail addresses, and addresses within the page or relative to it; not scripts or
/// data.
fn safe_url(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    match lower.find(':') {
        Some(colon) if !lower[..colon].contains('/') => {
            ["http", "https", "mailto"].contains(&&lower[..colon])
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::markdown_html;

    #[test]
    fn emphasis_and_code_are_drawn() {
        assert_eq!(
            markdown_html("The docstring says **at most** `threshold`."),
            "<p>The docstring says <strong>at most</strong> <code>threshold</code>.</p>\n"
        );
        let list = markdown_html("- one\n- two\n\n```py\nx = 1 < 2\n```\n");
        assert!(list.contains("<li>one</li>"), "{list}");
        assert!(
            list.contains("<pre><code class=\"language-py\">x = 1 &lt; 2\n</code></pre>"),
            "{list}"
        );
    }

    #[test]
    fn raw_html_scripts_and_images_do_not_reach_the_page() {
        let page = markdown_html(
            "<script>alert(1)</script>\n\nsee <b>this</b> [x](javascript:alert(1)) [y](https://example.com/a) ![pic](https://example.com/p.png)",
        );
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;"), "{page}");
        assert!(page.contains("&lt;b&gt;this&lt;/b&gt;"), "{page}");
        assert!(!page.contains("javascript:"), "{page}");
        assert!(page.contains("href=\"https://example.com/a\""), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(page.contains("pic"), "{page}");
    }
}
