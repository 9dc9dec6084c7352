//! The serialization options: the limits on tool output both archives
//! apply (the text archive's ledger and the PNG printer's transcript), and
//! the printer's switches. The one type the two engines share.

/// Default cap of a tool result body, in UTF-16 units.
const TOOL_RESULT_MAX_CHARS: usize = 2000;
/// Default cap of one tool-call argument, in UTF-16 units.
const TOOL_ARG_MAX_CHARS: usize = 500;
/// Default cap of a whole tool-call argument list, in UTF-16 units.
const TOOL_CALL_MAX_CHARS: usize = 2000;
/// Default share of a cut text kept from its head.
const TRUNCATE_HEAD_RATIO: f64 = 0.6;

/// Budgets and switches of the serialization.
///
/// A cap of `None` disables it (the reference's `Infinity`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SerializeOptions {
    /// Cap of a tool result body (default 2,000).
    pub tool_result_max_chars: Option<usize>,
    /// Cap of each tool-call argument value (default 500).
    pub tool_arg_max_chars: Option<usize>,
    /// Cap of the joined argument list (default 2,000).
    pub tool_call_max_chars: Option<usize>,
    /// Share of a cut text kept from its head, clamped to `0..=1` (default 0.6).
    pub truncate_head_ratio: f64,
    /// Print tool output in dim ink (default true; archive only).
    pub dim_tool_results: bool,
    /// Keep assistant reasoning (default true; the text port always keeps it).
    pub include_thinking: bool,
}

impl Default for SerializeOptions {
    fn default() -> Self {
        Self {
            tool_result_max_chars: Some(TOOL_RESULT_MAX_CHARS),
            tool_arg_max_chars: Some(TOOL_ARG_MAX_CHARS),
            tool_call_max_chars: Some(TOOL_CALL_MAX_CHARS),
            truncate_head_ratio: TRUNCATE_HEAD_RATIO,
            dim_tool_results: true,
            include_thinking: true,
        }
    }
}
