//! `musepi session tree FILE`: the tree, indented at branch points only,
//! with long linear runs collapsed.

use std::collections::BTreeSet;

use musepi_session_model::{EntryBody, Session, Tree};
use serde_json::{Value, json};

use crate::cli::TreeArgs;
use crate::commands::files::{Input, load_or_fail};
use crate::ctx::{CmdResult, Ctx, Exit, OrExit};
use crate::output::{Color, Style, print_json, print_text};
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
        let collapse = !args.full && ctx.verbose() == 0;
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
fn to_json(s: &Session, tree: &Tree) -> Value {
    let path = on_leaf_path(s);
    let nodes: Vec<Value> = tree
        .walk()
        .iter()
        .map(|n| {
            let e = &s.entries()[n.index];
            let mut v = json!({
                "id": e.id.as_str(),
                "parentId": e.parent_id.as_ref().map(musepi_session_model::EntryId::as_str),
                "depth": n.depth,
                "type": e.type_name(),
            });
            if let Some(m) = e.message() {
                v["role"] = m.role().into();
            }
            v["preview"] = preview_of(e).into();
            if let Some(label) = s.label(e.id.as_str()) {
                v["label"] = label.into();
            }
            v["children"] = n.children.into();
            v["onLeafPath"] = path.contains(&n.index).into();
            v
        })
        .collect();
    json!({
        "leafId": s.leaf_id().map(musepi_session_model::EntryId::as_str),
        "roots": tree.roots().len(),
        "nodes": nodes,
    })
}

/// A linear run to print: its first node, the prefix of its first line and
/// the prefix of the lines after it.
struct Run {
    start: usize,
    first: String,
    rest: String,
}

fn render(s: &Session, tree: &Tree, collapse: bool, st: Style) -> String {
    if s.is_empty() {
        return "(no entries)\n".to_owned();
    }
    let path = on_leaf_path(s);
    let width = s
        .entries()
        .iter()
        .map(|e| kind_of(e).len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
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
            if keep[k] {
                out.push_str(prefix);
                out.push_str(&line(s, nodes[k], width, &path, st));
                out.push('\n');
                k += 1;
                continue;
            }
            let hidden = keep[k..].iter().take_while(|kept| !**kept).count();
            if hidden < MIN_HIDDEN {
                for &i in &nodes[k..k + hidden] {
                    out.push_str(prefix);
                    out.push_str(&line(s, i, width, &path, st));
                    out.push('\n');
                }
            } else {
                let text = format!("⋮ {hidden} more entries");
                out.push_str(prefix);
                out.push_str(&st.paint(Color::Dim, &text));
                out.push('\n');
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
    out
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

fn line(s: &Session, i: usize, width: usize, path: &BTreeSet<usize>, st: Style) -> String {
    let e = &s.entries()[i];
    let marker = if path.contains(&i) { "●" } else { "○" };
    let mut text = format!(
        "{} {} {:<width$}  {}",
        marker,
        st.paint(Color::Cyan, e.id.as_str()),
        kind_of(e),
        preview_of(e)
    );
    if let Some(label) = s.label(e.id.as_str()) {
        text.push_str("  ");
        text.push_str(&st.paint(Color::Yellow, &format!("[{label}]")));
    }
    if s.leaf_index() == Some(i) {
        text.push_str("  ");
        text.push_str(&st.paint(Color::Green, "◀ leaf"));
    }
    text.trim_end().to_owned()
}
