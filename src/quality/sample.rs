//! The built-in text of `quant-check`: what FrogNano reads and writes in a session, made by
//! Lilypad's own prompt renderer from the benches' scripted agent session (the system prompt
//! with the five tool schemas, the task, forty turns of reasoning and tool calls in the
//! qwen3_coder XML format, and the tool results: file reads, test logs, file lists, edit
//! confirmations). Deterministic; nothing in it is third-party text.

use crate::bench::conversation::Session;
use crate::prompt::PromptError;

/// Scripted turns in the sample (the benches' `agent-turns` session length).
pub const TURNS: usize = 40;

/// The sample: the rendered prompt of the session after [`TURNS`] turns, with the reply that
/// closes it.
pub fn builtin() -> Result<String, PromptError> {
    let mut session = Session::new()?;
    for _ in 0..TURNS {
        session.push_turn();
    }
    let mut text = session.prompt()?;
    text.push_str(
        "The depth counter is now decremented instead of reset, and the whole suite passes.\
         </think>\n\nFixed `parser::tests::nested_lists`: nested lists no longer lose their \
         depth when an inner list closes. All tests pass.<|im_end|>\n",
    );
    Ok(text)
}
