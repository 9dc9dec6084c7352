//! The shape of the workspace's top, as part of `cargo xtask deps`: how
//! much of the code the command line holds, how many of its JSON
//! documents are built without a type, how many workspace crates it
//! uses directly, and how often the crates' code repeats itself
//! ([`crate::repeats`]). Each figure has a ceiling here that the step fails
//! above; the ceilings only ever go down, as the command line gets one
//! layer under it and typed documents.

use std::fs;
use std::path::Path;

use anyhow::bail;

/// Ceiling of the cli's share of the code lines of `crates/`, in tenths
/// of a percent.
const CLI_SHARE_PERMILLE: u64 = 340;
/// Ceiling of `json!` literals in the cli's code outside tests.
const CLI_JSON_LITERALS: usize = 3;
/// Ceiling of workspace crates the cli depends on (normal dependencies).
const CLI_WORKSPACE_DEPS: usize = 4;
/// Ceiling of repeated runs of code lines in the crates
/// ([`crate::repeats`]). The five left are two clap argument blocks whose
/// help differs, two trait impls' accessors, the protocol's copy of a
/// runtime event (the wire's mapping layer), and two matches that take a
/// tool result apart.
const REPEATS: usize = 5;

/// The figures, measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    pub cli_lines: u64,
    pub all_lines: u64,
    pub cli_json: usize,
    /// Of those, the ones without a `// A literal: why` comment right
    /// above: must be none.
    pub cli_json_unexplained: usize,
    pub cli_deps: usize,
    /// Places in the crates' code where a run of lines stands again
    /// ([`crate::repeats`]).
    pub repeats: Vec<crate::repeats::Pair>,
}

/// Measures the tree at `root`; `cli_deps` comes from `cargo metadata`.
pub(crate) fn measure(root: &Path, cli_deps: usize) -> Shape {
    let (mut cli_lines, mut all_lines, mut cli_json, mut cli_json_unexplained) = (0, 0, 0, 0);
    let crates = root.join("crates");
    let mut names: Vec<_> = fs::read_dir(&crates)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let mut files = Vec::new();
        crate::tidy::rs_files(&crates.join(&name).join("src"), &mut files);
        for file in files {
            let text = fs::read_to_string(&file).unwrap_or_default();
            let code = crate::tidy::non_test_code(&text);
            let lines = code_lines(&code);
            all_lines += lines;
            if name == "cli" {
                cli_lines += lines;
                cli_json += code
                    .iter()
                    .map(|(_, l)| l.matches("json!(").count())
                    .sum::<usize>();
                cli_json_unexplained += unexplained_json(&code);
            }
        }
    }
    Shape {
        cli_lines,
        all_lines,
        cli_json,
        cli_json_unexplained,
        cli_deps,
        repeats: crate::repeats::measure(root),
    }
}

/// `json!` literals without a `// A literal` comment saying why no type
/// fits, in the comment lines right above them (at most three).
fn unexplained_json(code: &[(usize, &str)]) -> usize {
    code.iter()
        .enumerate()
        .filter(|(_, (_, line))| line.contains("json!("))
        .filter(|(k, _)| {
            !code[..*k]
                .iter()
                .rev()
                .take(3)
                .take_while(|(_, l)| l.trim_start().starts_with("//"))
                .any(|(_, l)| l.trim_start().starts_with("// A literal"))
        })
        .map(|(_, (_, line))| line.matches("json!(").count())
        .sum()
}

impl Shape {
    /// The cli's share of the code lines, in tenths of a percent.
    fn cli_permille(&self) -> u64 {
        (self.cli_lines * 1000)
            .checked_div(self.all_lines)
            .unwrap_or(0)
    }

    /// Prints the table; an error naming each figure above its ceiling.
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        let share = self.cli_permille();
        let rows = [
            (
                "cli's share of the code lines",
                format!(
                    "{}.{}% ({} of {})",
                    share / 10,
                    share % 10,
                    self.cli_lines,
                    self.all_lines
                ),
                format!("{}.{}%", CLI_SHARE_PERMILLE / 10, CLI_SHARE_PERMILLE % 10),
                share <= CLI_SHARE_PERMILLE,
            ),
            (
                "json! literals in cli outside tests",
                self.cli_json.to_string(),
                CLI_JSON_LITERALS.to_string(),
                self.cli_json <= CLI_JSON_LITERALS,
            ),
            (
                "json! in cli without a reason",
                self.cli_json_unexplained.to_string(),
                "0".to_owned(),
                self.cli_json_unexplained == 0,
            ),
            (
                "workspace crates cli depends on",
                self.cli_deps.to_string(),
                CLI_WORKSPACE_DEPS.to_string(),
                self.cli_deps <= CLI_WORKSPACE_DEPS,
            ),
            (
                "repeated runs of 6+ code lines",
                self.repeats.len().to_string(),
                REPEATS.to_string(),
                self.repeats.len() <= REPEATS,
            ),
        ];
        println!("the shape of the command line (figure, ceiling):");
        let mut over = Vec::new();
        for (what, figure, ceiling, ok) in &rows {
            let mark = if *ok { "ok" } else { "ABOVE" };
            println!("  {what:<36} {figure:<24} {ceiling:<6} {mark}");
            if !ok {
                over.push(format!("{what}: {figure}, above the ceiling of {ceiling}"));
            }
        }
        if self.repeats.len() > REPEATS {
            println!("repeated runs (share one piece of code between the two places):");
            for pair in &self.repeats {
                println!("  {pair}");
            }
        }
        if !over.is_empty() {
            bail!(
                "{}: the code grows where it should shrink (ceilings in xtask/src/shape.rs)",
                over.join("; ")
            );
        }
        Ok(())
    }
}

/// Lines that hold code: not blank, not only a comment.
fn code_lines(lines: &[(usize, &str)]) -> u64 {
    lines
        .iter()
        .filter(|(_, l)| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with("//")
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_comments_and_blank_lines_are_not_code() {
        let text = "//! doc\nfn a() {}\n\n    // note\nlet x = json!({});\n#[cfg(test)]\nmod tests { json!(1); }\n";
        let code = crate::tidy::non_test_code(text);
        assert_eq!(code_lines(&code), 2);
        let json: usize = code.iter().map(|(_, l)| l.matches("json!(").count()).sum();
        assert_eq!(json, 1);
        // A test-only item before other code leaves that code counted.
        let code = crate::tidy::non_test_code("#[cfg(test)]\nuse x::y;\nfn a() {}\n");
        assert_eq!(code_lines(&code), 1);
    }

    #[test]
    fn a_json_literal_needs_a_reason_just_above_it() {
        let text = "fn a() {\n    // A literal: any JSON a tool takes.\n    call(json!({}));\n    let b = json!(1);\n}\n";
        let code = crate::tidy::non_test_code(text);
        assert_eq!(unexplained_json(&code), 1);
        let text = "// A literal: far above.\n\n\n\nlet b = json!(1);\n";
        assert_eq!(unexplained_json(&crate::tidy::non_test_code(text)), 1);
    }

    #[test]
    fn a_figure_above_its_ceiling_fails() {
        let shape = |cli_json| Shape {
            cli_lines: 10,
            all_lines: 100,
            cli_json,
            cli_json_unexplained: 0,
            cli_deps: 2,
            repeats: Vec::new(),
        };
        assert!(shape(CLI_JSON_LITERALS).check().is_ok());
        let err = shape(CLI_JSON_LITERALS + 1)
            .check()
            .unwrap_err()
            .to_string();
        assert!(err.contains("json! literals in cli outside tests"), "{err}");
    }
}
