//! Snapshots of `musepi view` screens drawn on ratatui's test backend: the
//! compaction divider collapsed and expanded, a snapcompact archive's
//! pages and frames, the tree pane, an 80×24 and a tiny terminal.

#![allow(clippy::unwrap_used)]

mod view_fixtures;

use crossterm::event::KeyCode;
use musepi_cli::view::keys::update;
use musepi_cli::view::model::Part;
use musepi_cli::view::render::draw;
use musepi_cli::view::{App, Input};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use view_fixtures::{app, ctrl, enter_line, press};

/// The buffer as text: one line per row, trailing spaces dropped, the
/// blank half of a wide character skipped.
fn text(buffer: &Buffer) -> String {
    let area = buffer.area;
    let mut lines = Vec::new();
    for y in 0..area.height {
        let mut line = String::new();
        let mut skip = 0;
        for x in 0..area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let symbol = buffer[(x, y)].symbol();
            line.push_str(symbol);
            skip = ratatui::text::Span::raw(symbol).width().saturating_sub(1);
        }
        lines.push(line.trim_end().to_owned());
    }
    lines.join("\n")
}

fn screen(app: &App) -> String {
    let (w, h) = app.size();
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| draw(f, app)).unwrap();
    text(terminal.backend().buffer())
}

/// Draws `app`, checks that the screen shows each of `parts`, and compares
/// it with the snapshot `name`.
fn assert_screen(name: &str, app: &App, parts: &[&str]) {
    let s = screen(app);
    for part in parts {
        assert!(
            s.contains(part),
            "{name}: {part:?} is not on the screen:\n{s}"
        );
    }
    insta::assert_snapshot!(name, s);
}

/// Moves the cursor up to the nearest compaction divider and opens it.
fn open_divider(app: &mut App) {
    for _ in 0..app.rows().len() {
        if matches!(app.fold_at_cursor(), Some((_, Part::Divider(_)))) {
            ctrl(app, 'o');
            return;
        }
        press(app, KeyCode::Up);
    }
    panic!("no divider above the cursor");
}

#[test]
fn divider_collapsed() {
    let app = app(&view_fixtures::compacted(), 80, 24);
    assert_screen("divider_collapsed", &app, &["── 📷 compacted · ctrl+o ──"]);
}

#[test]
fn a_divider_shows_how_the_compaction_was_made_and_the_context_after_it() {
    let app = app(&view_fixtures::compacted_with_method(), 80, 24);
    let s = screen(&app);
    assert!(
        s.contains("── 📷 snapcompact · 31k → 24k · ctrl+o ──"),
        "{s}"
    );
    // The numbers are in the divider: no "tokens before" beside it.
    assert!(!s.contains("tokens before"), "{s}");
}

#[test]
fn divider_expanded() {
    let mut app = app(&view_fixtures::compacted(), 80, 24);
    open_divider(&mut app);
    assert_screen(
        "divider_expanded",
        &app,
        &[
            "Port the tokenizer to Rust with the same public API.",
            "── end of compaction ──",
        ],
    );
    // ctrl+o again folds it back into one line.
    ctrl(&mut app, 'o');
    assert!(!screen(&app).contains("── end of compaction ──"));
}

#[test]
fn snapcompact_archives_expanded_say_what_they_hold() {
    let cases = [
        (
            "snapcompact_text_pages_expanded",
            view_fixtures::snapcompact_pages(),
            "archive: 4 text pages · 20,000 chars · 1,500 not shown",
        ),
        (
            "snapcompact_frames_expanded",
            view_fixtures::snapcompact_frames(),
            "archive: 3 PNG frames (8x13-bw ×2, 6x13-sent ×1)",
        ),
    ];
    for (name, jsonl, header) in cases {
        let mut app = app(&jsonl, 80, 24);
        open_divider(&mut app);
        assert_screen(name, &app, &[header]);
    }
}

#[test]
fn every_divider_opens_with_ctrl_o_away_from_one() {
    let mut app = app(&view_fixtures::snapcompact_pages(), 100, 60);
    ctrl(&mut app, 'o');
    assert_eq!(app.expanded().len(), 2);
    ctrl(&mut app, 'o');
    assert!(app.expanded().is_empty());
}

#[test]
fn tree_pane() {
    let mut app = app(&view_fixtures::compacted(), 80, 24);
    press(&mut app, KeyCode::Char('t'));
    assert_screen("tree_pane", &app, &["[python-read]", "◀ leaf"]);
}

#[test]
fn tree_pane_beside_the_transcript() {
    let mut app = app(&view_fixtures::compacted(), 120, 30);
    press(&mut app, KeyCode::Tab);
    assert_screen("tree_pane_wide", &app, &[]);
}

/// Keys pressed on a view.
type Keys = fn(&mut App);

/// Leaves the side branch: the tree pane, up to b2 (its end), Enter.
fn leave_the_side_branch(app: &mut App) {
    press(app, KeyCode::Char('t'));
    while app.tree.rows[app.pane.cursor].target.as_deref() != Some("b2") {
        press(app, KeyCode::Up);
    }
    press(app, KeyCode::Enter);
}

#[test]
fn writing_actions_ask_for_confirmation_first() {
    let cases: [(&str, Keys, &str); 2] = [
        (
            "confirm_summary",
            leave_the_side_branch,
            "summarize the branch you leave? [y/n/Esc]",
        ),
        (
            "confirm_compact",
            |app| {
                enter_line(app, ':', "compact");
            },
            "compact at the leaf with snapcompact? [y/n]",
        ),
    ];
    for (name, act, question) in cases {
        let mut app = app(&view_fixtures::compacted(), 80, 24);
        act(&mut app);
        assert_screen(name, &app, &[question]);
    }
}

#[test]
fn search_highlights_and_reports() {
    let mut app = app(&view_fixtures::compacted(), 80, 24);
    enter_line(&mut app, '/', "benchmark");
    assert_screen("search", &app, &[]);
}

#[test]
fn tiny_terminal() {
    let mut app = app(&view_fixtures::compacted(), 20, 5);
    open_divider(&mut app);
    assert_screen("tiny_20x5", &app, &[]);
}

#[test]
fn no_size_panics() {
    let fixtures = [
        view_fixtures::compacted(),
        view_fixtures::snapcompact_pages(),
        view_fixtures::snapcompact_frames(),
    ];
    for jsonl in &fixtures {
        let mut app = app(jsonl, 80, 24);
        ctrl(&mut app, 'o');
        for tree in [false, true] {
            if tree {
                press(&mut app, KeyCode::Char('t'));
            }
            for w in (0..=42).chain([99, 100, 101, 160]) {
                for h in 0..=12 {
                    update(&mut app, Input::Resize(w, h));
                    for code in [KeyCode::PageDown, KeyCode::End, KeyCode::Up, KeyCode::Home] {
                        press(&mut app, code);
                    }
                    screen(&app);
                }
            }
            press(&mut app, KeyCode::Esc);
        }
    }
}

#[test]
fn the_header_shows_the_context_tokens_against_the_window() {
    let jsonl = view_fixtures::compacted();
    let mut app = app(&jsonl, 80, 24);
    // The same total as `musepi context`.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, &jsonl).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_musepi"))
        .args(["context", file.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["tokens"], app.transcript.context_tokens);
    assert_eq!(app.transcript.context_tokens, 197);
    app.context_window = 400;
    let s = screen(&app);
    let header = s.lines().next().unwrap();
    // What does not fit is left out whole, from the end.
    assert_eq!(
        header,
        " musepi view · context 197 / 400 tokens (49%) · session.jsonl · leaf e10"
    );
    // The scroll position is on the status line, not in the header.
    let status = s.lines().nth(22).unwrap();
    assert!(status.ends_with("rows 9–29 of 29"), "{status}");
    press(&mut app, KeyCode::Home);
    let status = screen(&app).lines().nth(22).unwrap().to_owned();
    assert!(status.ends_with("rows 1–21 of 29"), "{status}");
}

#[test]
fn tree_pane_filtered_to_user_messages() {
    let mut app = app(&view_fixtures::compacted(), 80, 24);
    press(&mut app, KeyCode::Char('t'));
    press(&mut app, KeyCode::Char('f'));
    let s = screen(&app);
    assert!(!s.contains("e2 assistant"), "{s}");
    assert_screen(
        "tree_pane_user_messages",
        &app,
        &["tree · user messages · f: filter"],
    );
}

/// `?` lists every key over the transcript; the next key closes the list
/// and does nothing else.
#[test]
fn question_mark_lists_every_key_until_the_next_key() {
    let mut app = app(&view_fixtures::compacted(), 80, 24);
    let before = screen(&app);
    let cursor = app.cursor();
    press(&mut app, KeyCode::Char('?'));
    let s = screen(&app);
    for part in [
        " keys (any key closes this list)",
        "Enter",
        "open or close the fold under the cursor",
        "a command: compact [instructions], find TEXT, tree, leaf, q",
        "f filter, l the leaf's row, Esc/t/Tab close",
        "quit",
    ] {
        assert!(s.contains(part), "{part:?} is not listed:\n{s}");
    }
    // The title and the footer stay.
    assert_eq!(s.lines().next(), before.lines().next());
    // `q` closes the list and does not quit; the cursor did not move.
    assert!(press(&mut app, KeyCode::Char('q')).is_none());
    assert_eq!(screen(&app), before);
    assert_eq!(app.cursor(), cursor);
    // In the tree pane too.
    press(&mut app, KeyCode::Char('t'));
    press(&mut app, KeyCode::Char('?'));
    assert!(screen(&app).contains(" keys (any key closes this list)"));
    press(&mut app, KeyCode::Esc);
    assert!(!screen(&app).contains(" keys (any key closes this list)"));
}

/// The title counts the entries the transcript shows, which are not all
/// messages.
#[test]
fn the_title_counts_entries() {
    let app = app(&view_fixtures::compacted(), 160, 24);
    let title = screen(&app).lines().next().unwrap().to_owned();
    assert!(
        title.ends_with(&format!("· {} entries", app.transcript.blocks.len())),
        "{title}"
    );
    assert!(!title.contains("messages"), "{title}");
}

/// A status message too long for the line keeps its last clause, the hint
/// of what to do, and cuts what comes before it.
#[test]
fn a_long_status_error_keeps_its_hint() {
    let mut app = app(&view_fixtures::compacted(), 60, 24);
    app.say(
        "session.jsonl looks live: another process wrote it 2 s ago and may still be appending to it; pass --force",
        true,
    );
    let s = screen(&app);
    let status = s.lines().nth(22).unwrap();
    assert!(status.ends_with("…; pass --force"), "{status}");
    assert!(status.starts_with("session.jsonl looks live"), "{status}");
    assert!(status.chars().count() <= 60, "{status}");
}
