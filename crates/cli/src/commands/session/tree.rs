//! `musepi session tree FILE`: the tree, indented at branch points only,
//! with long linear runs collapsed.

use std::borrow::Cow;
use std::collections::BTreeSet;

use musepi_protocol::session::{SessionTreeDoc, TreeNodeDoc};
use musepi_session_model::{EntryBody, Session, Tree};

use crate::cli::TreeArgs;
use crate::commands::files::{Input, load_or_fail};
use crate::ctx::{CmdResult, Ctx, Exit, OrExit};
use crate::output::{
    Color, Style, column_width, display_width, escape_controls, pad_end, print_json, print_text,
};
use crate::report::entries::{kind_of, preview_of};

/// Entries shown at each end of a collapsed run.
const RUN_ENDS: usize = 2;
/// Hidden entries below which a run is shown whole.
const MIN_HIDDEN: usize = 3;

/// Prints the tree; never writes.
pub(super) fn run(args: &TreeArgs, ctx: &Ctx) -> CmdResult {
    let input = Input::from_arg(&args.file.path()?);
    let loaded = load_or_fail(&input, ctx)?;
    let s = &loaded.session;
    let tree = Tree::new(s);
    if ctx.json() {
        print_json(&to_json(s, &tree)).or_failed()?;
    } else {
        let collapse = !args.all && ctx.verbose() == 0;
        print_text(&render(s, &tree, collapse, ctx.style)).or_failed()?;
    }
    Ok(Exit::Ok)
}

fn on_leaf_path(s: &Session) -> BTreeSet<usize> {
    s.leaf_index()
        .map(|l| s.path_indices(l).into_iter().collect())
        .unwrap_or_default()
}

/// `{leafId, roots, nodes: [{id, parentId, depth, type, role?, preview, label?, children, onLeafPath}]}` in pre-order.
fn to_json(s: &Session, tree: &Tree) -> SessionTreeDoc {
    let path = on_leaf_path(s);
    let nodes = tree
        .walk()
        .iter()
        .map(|n| {
            let e = &s.entries()[n.index];
            TreeNodeDoc {
                id: e.id.to_string(),
                parent_id: e.parent_id.as_ref().map(ToString::to_string),
                depth: n.depth,
                kind: e.type_name().to_owned(),
                role: e.message().map(|m| m.role().to_owned()),
                preview: preview_of(e),
                label: s.label(e.id.as_str()).map(str::to_owned),
                children: n.children,
                on_leaf_path: path.contains(&n.index),
            }
        })
        .collect();
    SessionTreeDoc {
        leaf_id: s.leaf_id().map(ToString::to_string),
        roots: tree.roots().len(),
        nodes,
    }
}

/// A linear run to print: its first node, the prefix of its first line and
/// the prefix of the lines after it.
struct Run {
    start: usize,
    first: String,
    rest: String,
}

/// One line of the tree: its drawing, then an entry or a collapsed run.
struct Row {
    prefix: String,
    item: Item,
}

enum Item {
    Entry(usize),
    Hidden(usize),
}

/// The tree's lines: the drawing, the marker and the id, padded to the
/// widest of them, so that the type, the preview and the marks after them
/// line up across every row however deep the branches go; the type padded
/// to the widest type shown (an entry a collapsed run hides takes no room).
fn render(s: &Session, tree: &Tree, collapse: bool, st: Style) -> String {
    if s.is_empty() {
        return "(no entries)\n".to_owned();
    }
    let path = on_leaf_path(s);
    // Each entry's id and type escaped once, then measured and printed.
    let cells: Vec<(String, Cell<'_>)> = rows(s, tree, collapse)
        .into_iter()
        .map(|Row { prefix, item }| {
            let cell = match item {
                Item::Entry(i) => Cell::Entry(Shown::new(s, i, &prefix)),
                Item::Hidden(n) => Cell::Hidden(n),
            };
            (prefix, cell)
        })
        .collect();
    let entries = || {
        cells.iter().filter_map(|(_, c)| match c {
            Cell::Entry(e) => Some(e),
            Cell::Hidden(_) => None,
        })
    };
    let widths = Widths {
        head: entries().map(|e| e.head).max().unwrap_or(0),
        kind: column_width(entries().map(|e| &e.kind), 0),
    };
    let mut out = String::new();
    for (prefix, cell) in &cells {
        out.push_str(prefix);
        match cell {
            Cell::Entry(e) => out.push_str(&line(s, e, &widths, &path, st)),
            Cell::Hidden(n) => {
                out.push_str(&st.paint(Color::Dim, &format!("⋮ {n} more entries")));
            }
        }
        out.push('\n');
    }
    out
}

/// A row's item as it shows.
enum Cell<'a> {
    Entry(Shown<'a>),
    Hidden(usize),
}

/// An entry's row as it shows: its id and type escaped, and the columns
/// its drawing, marker and id take.
struct Shown<'a> {
    index: usize,
    id: Cow<'a, str>,
    kind: Cow<'a, str>,
    head: usize,
}

impl<'a> Shown<'a> {
    fn new(s: &'a Session, index: usize, prefix: &str) -> Self {
        let e = &s.entries()[index];
        let id = escape_controls(e.id.as_str());
        // The marker and its space take two columns.
        let head = display_width(prefix) + 2 + display_width(&id);
        Self {
            index,
            id,
            kind: escape_controls(kind_of(e)),
            head,
        }
    }
}

/// The widths the columns are padded to.
struct Widths {
    /// The drawing, the marker and the id.
    head: usize,
    /// The type or role.
    kind: usize,
}

/// The rows in print order: runs followed to their end, long ones
/// collapsed, children after their parent's run, the last one drawn `└─`.
fn rows(s: &Session, tree: &Tree, collapse: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut stack: Vec<Run> = tree
        .roots()
        .iter()
        .rev()
        .map(|&r| Run {
            start: r,
            first: String::new(),
            rest: String::new(),
        })
        .collect();
    while let Some(run) = stack.pop() {
        // Follow single children to the end of the run.
        let mut nodes = vec![run.start];
        let mut cur = run.start;
        while let [only] = tree.children(cur) {
            nodes.push(*only);
            cur = *only;
        }
        let keep: Vec<bool> = nodes
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                !collapse || k < RUN_ENDS || k + RUN_ENDS >= nodes.len() || is_landmark(s, i)
            })
            .collect();
        let mut k = 0;
        while k < nodes.len() {
            let prefix = if k == 0 { &run.first } else { &run.rest };
            let row = |item| Row {
                prefix: prefix.clone(),
                item,
            };
            if keep[k] {
                rows.push(row(Item::Entry(nodes[k])));
                k += 1;
                continue;
            }
            let hidden = keep[k..].iter().take_while(|kept| !**kept).count();
            if hidden < MIN_HIDDEN {
                rows.extend(nodes[k..k + hidden].iter().map(|&i| row(Item::Entry(i))));
            } else {
                rows.push(row(Item::Hidden(hidden)));
            }
            k += hidden;
        }
        let children = tree.children(cur);
        for (n, &child) in children.iter().enumerate().rev() {
            let last = n + 1 == children.len();
            stack.push(Run {
                start: child,
                first: format!("{}{}", run.rest, if last { "└─ " } else { "├─ " }),
                rest: format!("{}{}", run.rest, if last { "   " } else { "│  " }),
            });
        }
    }
    rows
}

/// Entries a collapsed run still shows.
fn is_landmark(s: &Session, i: usize) -> bool {
    let e = &s.entries()[i];
    s.leaf_index() == Some(i)
        || s.label(e.id.as_str()).is_some()
        || matches!(
            e.body,
            EntryBody::Compaction(_) | EntryBody::BranchSummary(_) | EntryBody::SessionInfo { .. }
        )
}

fn line(
    s: &Session,
    shown: &Shown<'_>,
    widths: &Widths,
    path: &BTreeSet<usize>,
    st: Style,
) -> String {
    let i = shown.index;
    let e = &s.entries()[i];
    let marker = if path.contains(&i) { "●" } else { "○" };
    let pad = widths.head - shown.head;
    let mut text = format!(
        "{} {}{:pad$} {}  {}",
        marker,
        st.paint(Color::Cyan, &shown.id),
        "",
        pad_end(&shown.kind, widths.kind),
        escape_controls(&preview_of(e))
    );
    if let Some(label) = s.label(e.id.as_str()) {
        text.push_str("  ");
        text.push_str(&st.paint(Color::Yellow, &format!("[{}]", escape_controls(label))));
    }
    if s.leaf_index() == Some(i) {
        text.push_str("  ");
        text.push_str(&st.paint(Color::Green, "◀ leaf"));
    }
    text.trim_end().to_owned()
}
