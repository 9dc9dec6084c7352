//! The view's state: the transcript laid out at the screen's width, the
//! cursor and scroll position, the open folds, the tree pane and the
//! prompt. Keys change it through `keys::update`; nothing
//! here does I/O.

use std::collections::BTreeSet;

use ratatui::layout::Rect;

use super::lines::{FoldKey, Row, layout};
use super::model::{Part, Transcript};
use super::tree_pane::{TreeModel, TreePane, follow, inner_height};

/// Terminal width from which the tree pane sits beside the transcript
/// rather than over it.
pub const SIDE_BY_SIDE: u16 = 100;
/// Columns of the cursor gutter left of the transcript.
pub const GUTTER: u16 = 2;

/// What the view asks the outside world to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Run a pipeline on the session file.
    Run(Job),
    /// Cancel the running job.
    Cancel,
    /// Leave the view.
    Quit,
}

/// A pipeline run on the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// `musepi branch`: go to `target` (`None`: the root), summarizing the
    /// abandoned branch or not.
    Navigate {
        /// The entry id.
        target: Option<String>,
        /// Whether to write a branch summary.
        summarize: bool,
    },
    /// `musepi compact`: compact at the leaf.
    Compact {
        /// The user's focus for the summary.
        instructions: Option<String>,
    },
}

/// A finished job: what to tell the user, and the session as it is now.
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    /// A message for the status line, or the error.
    pub result: Result<String, String>,
    /// The session re-read after the job, when it changed.
    pub reload: Option<(Transcript, TreeModel)>,
}

/// What the view reacts to.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A key press.
    Key(crossterm::event::KeyEvent),
    /// The terminal's new size.
    Resize(u16, u16),
    /// Time passed (the spinner turns).
    Tick,
    /// The running job finished.
    Done(Done),
}

/// What the keys do right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Scrolling the transcript (or moving in the tree pane when it is open).
    Normal,
    /// Typing a search after `/`.
    Search(String),
    /// Typing a command after `:`.
    Command(String),
    /// Asking whether to summarize the branch left for `target`.
    Confirm {
        /// Where navigation goes.
        target: Option<String>,
    },
    /// Asking whether to compact, after `:compact`.
    ConfirmCompact {
        /// The user's focus for the summary.
        instructions: Option<String>,
    },
    /// A job is running.
    Busy {
        /// What it does.
        label: String,
        /// Spinner position.
        tick: usize,
        /// Cancellation was asked for.
        cancelling: bool,
    },
}

/// A line for the user under the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The text.
    pub text: String,
    /// Whether it reports a failure.
    pub error: bool,
}

/// How summaries and compactions will be made, for the prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strategies {
    /// `:compact`: e.g. `snapcompact` or `llm (openai-compatible gpt-4o)`.
    pub compact: String,
    /// `:compact` with instructions (they may ask for an LLM summary).
    pub compact_with_instructions: String,
    /// Branch summaries: e.g. `the snapcompact digest (no model)`.
    pub branch: String,
}

/// The screen's regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Areas {
    /// The title line.
    pub header: Rect,
    /// The transcript, gutter included.
    pub transcript: Rect,
    /// The tree pane, when open.
    pub tree: Option<Rect>,
    /// Messages and prompts.
    pub status: Rect,
    /// Key help.
    pub footer: Rect,
}

/// Splits a `width`×`height` screen; any size works, down to 0×0.
pub fn areas(width: u16, height: u16, tree_open: bool) -> Areas {
    let row = |y: u16, h: u16| Rect::new(0, y, width, h);
    let header_h = u16::from(height >= 3);
    let status_h = u16::from(height >= 2);
    let footer_h = u16::from(height >= 4);
    let main_h = height - header_h - status_h - footer_h;
    let main = row(header_h, main_h);
    let (transcript, tree) = match (tree_open, width >= SIDE_BY_SIDE) {
        (false, _) => (main, None),
        (true, false) => (main, Some(main)),
        (true, true) => {
            // Two fifths, or half up to 60 columns when that is more.
            let tree_w = ((u32::from(width) * 2 / 5) as u16).max((width / 2).min(60));
            let t = Rect::new(0, main.y, width - tree_w, main_h);
            (t, Some(Rect::new(width - tree_w, main.y, tree_w, main_h)))
        }
    };
    Areas {
        header: row(0, header_h),
        transcript,
        tree,
        status: row(header_h + main_h, status_h),
        footer: row(header_h + main_h + status_h, footer_h),
    }
}

/// The view's whole state.
#[derive(Debug, Clone)]
pub struct App {
    /// The file shown, for the title.
    pub file: String,
    /// The transcript.
    pub transcript: Transcript,
    /// The tree.
    pub tree: TreeModel,
    /// The tree pane's state.
    pub pane: TreePane,
    /// How jobs will summarize.
    pub strategies: Strategies,
    /// The key mode.
    pub mode: Mode,
    /// The status line.
    pub status: Option<Status>,
    /// The last search.
    pub query: Option<String>,
    /// The context window the header measures the context's tokens against.
    pub context_window: u64,
    /// The key list `?` shows over the transcript, until the next key.
    pub help: bool,
    pub(crate) expanded: BTreeSet<FoldKey>,
    pub(crate) rows: Vec<Row>,
    pub(crate) size: (u16, u16),
    pub(crate) cursor: usize,
    pub(crate) top: usize,
}

impl App {
    /// A view of `transcript` on a `width`×`height` screen, at the leaf.
    pub fn new(
        file: String,
        (transcript, tree): (Transcript, TreeModel),
        strategies: Strategies,
        (width, height): (u16, u16),
    ) -> Self {
        let mut app = Self {
            file,
            transcript,
            tree,
            pane: TreePane::default(),
            strategies,
            mode: Mode::Normal,
            status: None,
            query: None,
            context_window: musepi_runtime::DEFAULT_CONTEXT_WINDOW,
            help: false,
            expanded: BTreeSet::new(),
            rows: Vec::new(),
            size: (width, height),
            cursor: 0,
            top: 0,
        };
        app.relayout();
        app.jump_to_leaf();
        app
    }

    /// How `:compact` will summarize, with or without instructions.
    pub fn compact_strategy(&self, instructions: bool) -> &str {
        if instructions {
            &self.strategies.compact_with_instructions
        } else {
            &self.strategies.compact
        }
    }

    /// The laid-out rows.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The cursor's row.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The first row shown.
    pub fn top(&self) -> usize {
        self.top
    }

    /// The screen size the layout is for.
    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    /// The open folds.
    pub fn expanded(&self) -> &BTreeSet<FoldKey> {
        &self.expanded
    }

    /// The screen's regions now.
    pub fn areas(&self) -> Areas {
        areas(self.size.0, self.size.1, self.pane.open)
    }

    /// Rows of transcript on screen.
    pub fn page(&self) -> usize {
        usize::from(self.areas().transcript.height).max(1)
    }

    /// Rows of the tree pane's inside.
    pub fn tree_page(&self) -> usize {
        self.areas()
            .tree
            .map_or(1, |r| inner_height(r.height))
            .max(1)
    }

    fn text_width(&self) -> usize {
        usize::from(self.areas().transcript.width.saturating_sub(GUTTER)).max(1)
    }

    /// Lays the transcript out again (after a resize, a fold or a reload),
    /// keeping the cursor on the part it was on.
    pub(crate) fn relayout(&mut self) {
        // The anchor: the cursor's block and part, and its row among theirs.
        let anchor = self.rows.get(self.cursor).map(|r| {
            let same = |o: &Row| o.block == r.block && o.part == r.part;
            let nth = self.rows[..self.cursor].iter().filter(|o| same(o)).count();
            (r.block, r.part, nth)
        });
        self.rows = layout(&self.transcript, &self.expanded, self.text_width());
        if let Some((block, part, nth)) = anchor {
            let same: Vec<usize> = (0..self.rows.len())
                .filter(|&i| self.rows[i].block == block && self.rows[i].part == part)
                .collect();
            self.cursor = same
                .get(nth)
                .or(same.last())
                .copied()
                .or_else(|| self.rows.iter().position(|r| r.block == block))
                .unwrap_or(self.cursor);
        }
        self.clamp();
    }

    fn max_top(&self) -> usize {
        self.rows.len().saturating_sub(self.page())
    }

    /// Keeps the cursor on a row and in view.
    pub(crate) fn clamp(&mut self) {
        self.cursor = self.cursor.min(self.rows.len().saturating_sub(1));
        self.top = follow(self.cursor, self.top, self.page()).min(self.max_top());
        let tree_page = self.tree_page();
        self.pane.cursor = self.pane.cursor.min(self.tree.rows.len().saturating_sub(1));
        self.pane.follow(tree_page);
    }

    /// Moves the cursor by `delta` rows.
    pub fn move_by(&mut self, delta: isize) {
        self.cursor = self.cursor.saturating_add_signed(delta);
        self.clamp();
    }

    /// Moves a page down (`1`) or up (`-1`), scrolling with the cursor.
    pub fn page_by(&mut self, pages: isize) {
        let delta = pages.saturating_mul(self.page() as isize);
        self.top = self.top.saturating_add_signed(delta).min(self.max_top());
        self.move_by(delta);
    }

    /// The first row.
    pub fn home(&mut self) {
        self.cursor = 0;
        self.top = 0;
    }

    /// The last row.
    pub fn end(&mut self) {
        self.cursor = self.rows.len().saturating_sub(1);
        self.clamp();
    }

    /// The leaf's block at the bottom of the screen, its first row selected.
    pub fn jump_to_leaf(&mut self) {
        let last_block = self.transcript.blocks.len().saturating_sub(1);
        self.cursor = self
            .rows
            .iter()
            .position(|r| r.block == last_block && !r.text.is_empty())
            .or_else(|| self.rows.iter().position(|r| r.block == last_block))
            .unwrap_or(0);
        self.top = self.max_top();
        self.clamp();
    }

    /// The fold under the cursor, if any.
    pub fn fold_at_cursor(&self) -> Option<(FoldKey, &Part)> {
        let row = self.rows.get(self.cursor)?;
        let block = self.transcript.blocks.get(row.block)?;
        let p = row.part?;
        let part = block.parts.get(p)?;
        part.is_foldable().then_some((
            FoldKey {
                entry: block.entry_index,
                part: p,
            },
            part,
        ))
    }

    /// Every compaction divider.
    fn dividers(&self) -> Vec<FoldKey> {
        let mut keys = Vec::new();
        for block in &self.transcript.blocks {
            for (p, part) in block.parts.iter().enumerate() {
                if matches!(part, Part::Divider(_)) {
                    keys.push(FoldKey {
                        entry: block.entry_index,
                        part: p,
                    });
                }
            }
        }
        keys
    }

    /// Opens a closed fold and closes an open one; an opened fold scrolls
    /// up to show as much of itself as fits.
    fn toggle(&mut self, key: FoldKey) {
        if self.expanded.remove(&key) {
            self.relayout();
        } else {
            self.expanded.insert(key);
            self.relayout();
            self.top = self.cursor.min(self.max_top());
        }
    }

    /// Opens or closes the fold under the cursor (Enter).
    pub fn toggle_fold(&mut self) -> bool {
        let Some((key, _)) = self.fold_at_cursor() else {
            return false;
        };
        self.toggle(key);
        true
    }

    /// ctrl+o: the divider under the cursor, or else every divider (all
    /// open when any is closed, all closed otherwise).
    pub fn toggle_divider(&mut self) {
        if let Some((key, Part::Divider(_))) = self.fold_at_cursor() {
            self.toggle(key);
            return;
        }
        let all = self.dividers();
        if all.iter().any(|k| !self.expanded.contains(k)) {
            self.expanded.extend(all);
        } else {
            for k in &all {
                self.expanded.remove(k);
            }
        }
        self.relayout();
    }

    /// Shows or hides the tree pane; opening selects the leaf's row.
    pub fn toggle_tree(&mut self) {
        self.pane.open = !self.pane.open;
        if self.pane.open {
            self.pane.cursor = self.tree.leaf_row;
            self.pane.top = 0;
        }
        self.relayout();
    }

    /// The tree pane's next filter (all, user messages, labelled); the
    /// cursor stays on its entry when the filter shows it, else goes to
    /// the leaf. Says which filter is on.
    pub fn cycle_tree_filter(&mut self) {
        let target = self
            .tree
            .rows
            .get(self.pane.cursor)
            .map(|r| r.target.clone());
        self.tree.set_filter(self.tree.filter.next());
        self.pane.cursor = target
            .and_then(|t| self.tree.row_of(t.as_deref()))
            .unwrap_or(self.tree.leaf_row);
        self.pane.top = 0;
        let page = self.tree_page();
        self.pane.follow(page);
        let shown = self.tree.rows.len() - 1;
        self.say(
            format!(
                "tree: {} ({shown} shown; f for the next filter)",
                self.tree.filter.name()
            ),
            false,
        );
    }

    /// A new screen size.
    pub fn resize(&mut self, width: u16, height: u16) {
        if self.size != (width, height) {
            self.size = (width, height);
            self.relayout();
        }
    }

    /// Sets the status line.
    pub fn say(&mut self, text: impl Into<String>, error: bool) {
        self.status = Some(Status {
            text: text.into(),
            error,
        });
    }

    /// Takes the session as a job left it: new transcript and tree, folds
    /// of entries that still exist kept, the leaf in view.
    pub fn reload(&mut self, transcript: Transcript, mut tree: TreeModel) {
        self.transcript = transcript;
        tree.set_filter(self.tree.filter);
        self.tree = tree;
        self.rows.clear();
        self.relayout();
        self.jump_to_leaf();
        self.pane.cursor = self.tree.leaf_row;
    }
}
