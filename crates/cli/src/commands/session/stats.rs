//! `musepi session stats FILE`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use musepi_protocol::session::{LabelDoc, StatsDoc};
use musepi_session_model::Session;

use super::{problem_doc, problem_line};
use crate::cli::StatsArgs;
use crate::commands::files::{Input, keep_until_exit, load_or_fail};
use crate::ctx::{CmdResult, Ctx, Exit, OrExit};
use crate::output::{Color, aligned, escape_controls, print_json, print_text};

/// What `stats` reports.
struct Stats<'a> {
    session: &'a Session,
    by_type: BTreeMap<&'a str, usize>,
    by_role: BTreeMap<&'a str, usize>,
    path_length: usize,
}

impl<'a> Stats<'a> {
    fn of(session: &'a Session) -> Self {
        let mut by_type = BTreeMap::new();
        let mut by_role = BTreeMap::new();
        for e in session.entries() {
            *by_type.entry(e.type_name()).or_default() += 1;
            if let Some(m) = e.message() {
                *by_role.entry(m.role()).or_default() += 1;
            }
        }
        let path_length = session
            .leaf_index()
            .map_or(0, |i| session.path_indices(i).len());
        Self {
            session,
            by_type,
            by_role,
            path_length,
        }
    }

    fn to_doc(&self, file: &str) -> StatsDoc {
        let s = self.session;
        let counts = |m: &BTreeMap<&str, usize>| -> BTreeMap<String, usize> {
            m.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
        };
        StatsDoc {
            file: file.to_owned(),
            session_id: s.header().id.clone(),
            version: s.original_version(),
            entry_count: s.len(),
            by_type: counts(&self.by_type),
            by_role: counts(&self.by_role),
            leaf_id: s.leaf_id().map(ToString::to_string),
            path_length: self.path_length,
            labels: s
                .labels()
                .iter()
                .map(|(k, v)| LabelDoc {
                    target_id: k.to_string(),
                    label: v.clone(),
                })
                .collect(),
            session_name: s.session_name().map(str::to_owned),
            problems: s.problems().iter().map(problem_doc).collect(),
        }
    }

    /// The human view: every name read from the session or the command
    /// line is printed through [`escape_controls`].
    fn render(&self, file: &str, ctx: &Ctx) -> String {
        let s = self.session;
        let st = ctx.style;
        let mut rows: Vec<(String, String)> = Vec::new();
        let version = if s.was_migrated() {
            format!(
                "{} (read as v{} in memory)",
                s.original_version(),
                musepi_session_model::CURRENT_VERSION
            )
        } else {
            s.original_version().to_string()
        };
        rows.push(("file".into(), escape_controls(file).into_owned()));
        rows.push(("version".into(), version));
        rows.push(("entries".into(), s.len().to_string()));
        for (t, n) in &self.by_type {
            rows.push((format!("  {}", escape_controls(t)), n.to_string()));
        }
        if !self.by_role.is_empty() {
            rows.push(("roles".into(), String::new()));
            for (r, n) in &self.by_role {
                rows.push((format!("  {}", escape_controls(r)), n.to_string()));
            }
        }
        rows.push((
            "leaf".into(),
            s.leaf_id().map_or_else(
                || "none".into(),
                |l| st.paint(Color::Cyan, &escape_controls(l.as_str())),
            ),
        ));
        rows.push(("path length".into(), self.path_length.to_string()));
        rows.push((
            "session name".into(),
            escape_controls(s.session_name().unwrap_or("none")).into_owned(),
        ));
        if s.labels().is_empty() {
            rows.push(("labels".into(), "none".into()));
        } else {
            rows.push(("labels".into(), s.labels().len().to_string()));
            for (target, label) in s.labels() {
                rows.push((
                    format!(
                        "  {}",
                        st.paint(Color::Cyan, &escape_controls(target.as_str()))
                    ),
                    st.paint(Color::Yellow, &escape_controls(label)),
                ));
            }
        }
        let problems = s.problems();
        rows.push((
            "problems".into(),
            if problems.is_empty() {
                "none".into()
            } else {
                st.paint(Color::Yellow, &problems.len().to_string())
            },
        ));
        let mut out = aligned(&rows);
        for p in problems
            .iter()
            .take(if ctx.verbose() > 0 { usize::MAX } else { 10 })
        {
            let _ = writeln!(out, "  {}", problem_line(file, p));
        }
        if problems.len() > 10 && ctx.verbose() == 0 {
            let _ = writeln!(
                out,
                "  … {} more (see `musepi session check`)",
                problems.len() - 10
            );
        }
        out
    }
}

/// Prints the statistics of the session; never writes.
pub(super) fn run(args: &StatsArgs, ctx: &Ctx) -> CmdResult {
    let input = Input::from_arg(&args.file.path()?);
    let loaded = load_or_fail(&input, ctx)?;
    let stats = Stats::of(&loaded.session);
    let name = input.name();
    if ctx.json() {
        print_json(&stats.to_doc(&name)).or_failed()?;
    } else {
        print_text(&stats.render(&name, ctx)).or_failed()?;
    }
    keep_until_exit(loaded);
    Ok(Exit::Ok)
}
