//! The command line as a daily user of cargo, git and ripgrep expects it:
//! clap's errors worded like every other error, the version line with the
//! commit, shell completions, the manual pages, `--color` with `NO_COLOR`
//! and `CLICOLOR_FORCE`.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::{code, example_session, musepi_in, musepi_with_env, p, stderr, stdout};

fn run(dir: &Path, args: &[&str]) -> Output {
    musepi_in(dir, dir, args, None)
}

fn run_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    musepi_with_env(dir, dir, args, None, env)
}

#[test]
fn clap_errors_start_with_the_musepi_prefix_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--bogus"][..],
        &["ls", "--bogus"],
        &["context"],
        &["compact", "x.jsonl", "--strategy"],
    ] {
        let o = run(dir.path(), args);
        assert_eq!(code(&o), 2, "{args:?}");
        let err = stderr(&o);
        assert!(
            err.starts_with("musepi: error: "),
            "{args:?}: clap's error without the prefix:\n{err}"
        );
        assert_eq!(stdout(&o), "", "{args:?}");
    }
    // A missing command shows the help (no error message, no prefix), exit 2.
    let o = run(dir.path(), &[]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("Usage: musepi"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("musepi: error"), "{}", stderr(&o));
}

/// `git log -1` of the checkout, as the version line must show it.
fn head_commit() -> Option<(String, String)> {
    let out = std::process::Command::new("git")
        .args(["log", "-1", "--format=%h %cs", "--abbrev=7"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let (h, d) = text.trim().split_once(' ')?;
    Some((h.to_owned(), d.to_owned()))
}

#[test]
fn the_version_line_names_the_commit_and_is_the_same_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let top = run(dir.path(), &["--version"]);
    assert_eq!(code(&top), 0);
    let line = stdout(&top);
    let version = env!("CARGO_PKG_VERSION");
    match head_commit() {
        // Built from a checkout: `musepi 0.1.0 (abc1234 2026-12-05)`. The
        // binary may be a commit behind HEAD when HEAD moved since the
        // build, so the shape is checked, and the hash's length.
        Some(_) => {
            let rest = line
                .strip_prefix(&format!("musepi {version} ("))
                .unwrap_or_else(|| panic!("{line}"));
            let (hash, date) = rest
                .trim_end()
                .trim_end_matches(')')
                .split_once(' ')
                .unwrap();
            assert_eq!(hash.len(), 7, "{line}");
            assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{line}");
            assert_eq!(date.len(), 10, "{line}");
            assert_eq!(&date[4..5], "-", "{line}");
        }
        None => assert_eq!(line, format!("musepi {version}\n")),
    }
    for args in [&["ls", "--version"][..], &["session", "tree", "-V"]] {
        let o = run(dir.path(), args);
        assert_eq!(code(&o), 0, "{args:?}");
        assert_eq!(stdout(&o), line, "{args:?}");
        assert!(!stdout(&o).contains("musepi-"), "{args:?}");
    }
}

#[test]
fn completions_are_printed_for_each_shell_with_every_command() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = run(dir.path(), &["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        for word in ["compact", "snapcompact", "keep-recent", "color"] {
            assert!(
                script.contains(word),
                "{shell}: no {word} in\n{}",
                &script[..script.len().min(2000)]
            );
        }
    }
    let o = run(dir.path(), &["completions", "tcsh"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).starts_with("musepi: error: "), "{}", stderr(&o));
}

fn docs_man() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/man")
}

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn the_manual_pages_in_docs_are_current() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man");
    let o = run(dir.path(), &["man", "--out", p(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let made = listing(&out);
    assert!(made.iter().any(|(n, _)| n == "musepi-compact.1"));
    let kept = listing(&docs_man());
    let names = |l: &[(String, Vec<u8>)]| l.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&kept),
        names(&made),
        "docs/man is not current: run `cargo run -p musepi -- man --out docs/man` (and remove stale pages)"
    );
    for ((name, a), (_, b)) in kept.iter().zip(&made) {
        assert!(
            a == b,
            "docs/man/{name} is not current: run `cargo run -p musepi -- man --out docs/man`"
        );
    }
    // `musepi man` alone prints the top page.
    let o = run(dir.path(), &["man"]);
    assert_eq!(code(&o), 0);
    assert!(
        o.stdout == std::fs::read(out.join("musepi.1")).unwrap(),
        "`musepi man` is not musepi.1"
    );
}

const ESC: &str = "\x1b[";

#[test]
fn color_follows_the_flag_then_no_color_then_clicolor_force() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let tree = ["session", "tree", p(&file)];
    let coloured = |o: &Output| stdout(o).contains(ESC);
    // Piped: plain, unless forced.
    assert!(!coloured(&run(dir.path(), &tree)));
    assert!(coloured(&run(
        dir.path(),
        &[&tree[..], &["--color", "always"]].concat()
    )));
    assert!(coloured(&run(
        dir.path(),
        &[&tree[..], &["--color=always"]].concat()
    )));
    assert!(coloured(&run_env(
        dir.path(),
        &tree,
        &[("CLICOLOR_FORCE", "1")]
    )));
    assert!(!coloured(&run_env(
        dir.path(),
        &tree,
        &[("CLICOLOR_FORCE", "0")]
    )));
    // NO_COLOR wins over CLICOLOR_FORCE; `--color` wins over both.
    assert!(!coloured(&run_env(
        dir.path(),
        &tree,
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]
    )));
    assert!(coloured(&run_env(
        dir.path(),
        &[&tree[..], &["--color", "always"]].concat(),
        &[("NO_COLOR", "1")]
    )));
    assert!(!coloured(&run_env(
        dir.path(),
        &[&tree[..], &["--color", "never"]].concat(),
        &[("CLICOLOR_FORCE", "1")]
    )));
    // Errors on stderr follow it too, clap's included.
    let o = run(dir.path(), &["--color", "always", "--bogus"]);
    assert!(stderr(&o).contains(ESC), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("musepi: "), "{}", stderr(&o));
    let o = run(dir.path(), &["--color", "sometimes", "ls"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("possible values"), "{}", stderr(&o));
}

#[test]
fn chart_and_render_refuse_to_replace_an_earlier_output_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let compacted = dir.path().join("c.jsonl");
    assert_eq!(
        code(&run(
            dir.path(),
            &["compact", p(&file), "-o", p(&compacted)]
        )),
        0
    );
    // The chart: an existing SVG file is kept unless --force.
    let svg = dir.path().join("chart.svg");
    std::fs::write(&svg, "mine").unwrap();
    let chart = ["context", p(&compacted), "--chart", "--out", p(&svg)];
    let o = run(dir.path(), &[&chart[..], &["--json"]].concat());
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["error"]["code"], "file-exists");
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), "mine");
    let o = run(dir.path(), &[&chart[..], &["--force"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // The render: a folder with an earlier render is kept unless --force;
    // a folder with other files only is written into.
    let frames = dir.path().join("frames");
    std::fs::create_dir(&frames).unwrap();
    std::fs::write(frames.join("notes.md"), "mine").unwrap();
    let render = ["snapcompact", "render", p(&compacted), "--out", p(&frames)];
    assert_eq!(code(&run(dir.path(), &render)), 0);
    let listing = || {
        let mut names: Vec<String> = std::fs::read_dir(&frames)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let first = listing();
    let o = run(dir.path(), &render);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains(
            "the folder holds an earlier render (archive.json); pass --force to replace it"
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(listing(), first);
    let o = run(dir.path(), &[&render[..], &["--force"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(listing(), first);
    assert_eq!(
        std::fs::read_to_string(frames.join("notes.md")).unwrap(),
        "mine"
    );
}

#[test]
fn instructions_add_a_focus_everywhere_and_replace_the_prompt_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let prompt = |extra: &[&str]| {
        let args = [
            &[
                "branch",
                p(&file),
                "--to",
                "00000010",
                "--summarize",
                "--strategy",
                "llm",
                "--provider",
                "openai-compatible",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--instructions",
                "FOCUS-X",
                "--dry-run",
                "--json",
            ][..],
            extra,
        ]
        .concat();
        let o = run_env(dir.path(), &args, &[("MUSEPI_API_KEY", "k")]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        doc["request"]["prompt"].as_str().unwrap().to_owned()
    };
    // As for compact and handoff: the default prompt, then the focus.
    let focus = prompt(&[]);
    assert!(
        focus.ends_with("Additional focus: FOCUS-X"),
        "{}",
        &focus[focus.len() - 200..]
    );
    assert!(focus.contains("Write only the summary."));
    // The old flag that asked for this still works, and changes nothing.
    assert_eq!(prompt(&["--append-instructions"]), focus);
    // --replace-instructions: the instructions are the prompt's request.
    let replaced = prompt(&["--replace-instructions"]);
    assert!(!replaced.contains("Additional focus"), "{replaced}");
    assert!(replaced.contains("FOCUS-X"));
    assert!(!replaced.contains("Write only the summary."));
}

#[test]
fn tree_shows_every_entry_with_all_and_the_old_full_still_works() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let all = run(dir.path(), &["session", "tree", p(&file), "--all"]);
    assert_eq!(code(&all), 0, "{}", stderr(&all));
    assert!(!stdout(&all).contains("more entries"));
    let full = run(dir.path(), &["session", "tree", p(&file), "--full"]);
    assert_eq!(stdout(&full), stdout(&all));
    let collapsed = run(dir.path(), &["session", "tree", p(&file)]);
    assert!(stdout(&collapsed).contains("more entries"));
    // --help names --all; --full is left to context, where it means whole
    // messages, and hooks test's --config to the global --settings.
    let help = stdout(&run(dir.path(), &["session", "tree", "--help"]));
    assert!(help.contains("--all"), "{help}");
    assert!(!help.contains("--full"), "{help}");
    let help = stdout(&run(dir.path(), &["hooks", "test", "--help"]));
    assert!(!help.contains("--config"), "{help}");
    let help = stdout(&run(dir.path(), &["branch", "--help"]));
    assert!(help.contains("--replace-instructions"), "{help}");
    assert!(!help.contains("--append-instructions"), "{help}");
}

/// The heading of each command in docs/cli.md names every flag of its
/// own (`--latest` and `--session-dir`, which every FILE takes, are said
/// once for all; hidden aliases and global flags are not repeated).
#[test]
fn every_command_heading_in_cli_md_names_its_flags() {
    use clap::CommandFactory as _;
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, Vec<String>)>) {
        let subs: Vec<&clap::Command> = cmd
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .collect();
        if subs.is_empty() {
            // A flag is named by its long form, or its short one (`-o OUT`).
            let flags = cmd
                .get_arguments()
                .filter(|a| !a.is_hide_set() && !a.is_global_set())
                .filter_map(|a| a.get_long().map(|l| (l, a.get_short())))
                .filter(|(l, _)| !["help", "version", "latest", "session-dir"].contains(l))
                .map(|(l, short)| match short {
                    Some(c) => format!("--{l}|-{c}"),
                    None => format!("--{l}"),
                })
                .collect();
            out.push((path.to_owned(), flags));
        }
        for sub in subs {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md"))
            .unwrap();
    let headings: Vec<&str> = doc
        .lines()
        .filter(|l| l.starts_with("### `musepi "))
        .collect();
    let mut cmd = musepi_cli::cli::Cli::command();
    cmd.build();
    let mut commands = Vec::new();
    walk(&cmd, "musepi", &mut commands);
    let mut missing = Vec::new();
    for (path, flags) in &commands {
        let Some(heading) = headings
            .iter()
            .find(|h| h.contains(&format!("`{path} ")) || h.contains(&format!("`{path}`")))
        else {
            missing.push(format!("{path}: no heading"));
            continue;
        };
        for flag in flags {
            let named = heading
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .any(|w| flag.split('|').any(|f| w == f));
            if !named {
                missing.push(format!("{path}: {flag}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/cli.md headings lack:\n{}",
        missing.join("\n")
    );
}
