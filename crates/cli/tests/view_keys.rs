//! The view's key and state logic, without a terminal: scrolling stays in
//! bounds, search finds rows and opens folds, folds and panes toggle, and
//! the tree, the prompts and the jobs produce the right effects.

#![allow(clippy::unwrap_used)]

mod view_fixtures;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use musepi_cli::view::keys::update;
use musepi_cli::view::model::Part;
use musepi_cli::view::tree_pane::TreeFilter;
use musepi_cli::view::{App, Done, Effect, Input, Job, Mode, snapshot};
use view_fixtures::{ctrl, enter_line, press, typed};

fn app() -> App {
    view_fixtures::app(&view_fixtures::compacted(), 80, 24)
}

fn cursor_text(app: &App) -> &str {
    &app.rows()[app.cursor()].text
}

/// The cursor is on a row and on screen.
fn in_bounds(app: &App) {
    let rows = app.rows().len();
    assert!(
        app.cursor() < rows.max(1),
        "cursor {} of {rows}",
        app.cursor()
    );
    assert!(
        app.top() <= app.cursor(),
        "top {} after cursor {}",
        app.top(),
        app.cursor()
    );
    assert!(
        app.cursor() < app.top() + app.page(),
        "cursor below the screen"
    );
    assert!(
        app.top() + app.page() <= rows.max(app.page()),
        "scrolled past the end"
    );
}

#[test]
fn opens_at_the_leaf() {
    let app = app();
    assert!(cursor_text(&app).starts_with("assistant"));
    assert_eq!(
        app.rows()[app.cursor()].block,
        app.transcript.blocks.len() - 1
    );
    assert_eq!(app.top() + app.page(), app.rows().len());
    in_bounds(&app);
}

#[test]
fn scrolling_stays_in_bounds() {
    let mut app = app();
    for code in [
        KeyCode::Down,
        KeyCode::PageDown,
        KeyCode::End,
        KeyCode::Char('j'),
    ] {
        press(&mut app, code);
        in_bounds(&app);
    }
    assert_eq!(app.cursor(), app.rows().len() - 1);
    press(&mut app, KeyCode::Home);
    assert_eq!((app.cursor(), app.top()), (0, 0));
    press(&mut app, KeyCode::Up);
    press(&mut app, KeyCode::PageUp);
    assert_eq!((app.cursor(), app.top()), (0, 0));
    press(&mut app, KeyCode::PageDown);
    assert_eq!(app.cursor(), app.page());
    in_bounds(&app);
    press(&mut app, KeyCode::Char('G'));
    assert!(cursor_text(&app).starts_with("assistant"));
    in_bounds(&app);
}

#[test]
fn resizing_keeps_the_cursor_on_its_row() {
    let mut app = app();
    press(&mut app, KeyCode::Home);
    for _ in 0..5 {
        press(&mut app, KeyCode::Down);
    }
    let before = cursor_text(&app).to_owned();
    update(&mut app, Input::Resize(200, 10));
    assert_eq!(cursor_text(&app), before);
    in_bounds(&app);
    for (w, h) in [(0, 0), (1, 1), (5, 3), (20, 5), (80, 24)] {
        update(&mut app, Input::Resize(w, h));
        in_bounds(&app);
    }
}

#[test]
fn search_wraps_and_goes_back() {
    let mut app = app();
    press(&mut app, KeyCode::Char('/'));
    assert_eq!(app.mode, Mode::Search(String::new()));
    typed(&mut app, "SPLIT");
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    assert_eq!(app.mode, Mode::Normal);
    // From the leaf the search wraps around to the first match.
    assert_eq!(app.cursor(), app.match_rows("SPLIT")[0]);
    assert!(
        cursor_text(&app).contains("text.split()"),
        "{}",
        cursor_text(&app)
    );
    let first = app.cursor();
    press(&mut app, KeyCode::Char('n'));
    assert!(app.cursor() > first);
    assert!(cursor_text(&app).to_ascii_lowercase().contains("split"));
    press(&mut app, KeyCode::Char('N'));
    assert_eq!(app.cursor(), first);
    let status = app.status.clone().unwrap();
    assert!(
        status.text.starts_with("/SPLIT: match 1 of "),
        "{}",
        status.text
    );
    assert!(!status.error);
}

#[test]
fn search_opens_the_fold_that_hides_the_match() {
    let mut app = app();
    assert!(app.expanded().is_empty());
    enter_line(&mut app, '/', "before writing any rust");
    assert_eq!(app.expanded().len(), 1);
    assert!(cursor_text(&app).contains("Read it before writing any Rust."));
    in_bounds(&app);
}

#[test]
fn search_reports_a_miss() {
    let mut app = app();
    let at = app.cursor();
    enter_line(&mut app, '/', "no such words");
    assert_eq!(app.cursor(), at);
    assert!(app.status.clone().unwrap().error);
    // n without a search says so.
    let mut fresh = self::app();
    press(&mut fresh, KeyCode::Char('n'));
    assert!(fresh.status.clone().unwrap().text.contains("no search yet"));
}

#[test]
fn prompts_edit_and_cancel() {
    let mut app = app();
    press(&mut app, KeyCode::Char('/'));
    typed(&mut app, "ab");
    press(&mut app, KeyCode::Backspace);
    assert_eq!(app.mode, Mode::Search("a".to_owned()));
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.mode, Mode::Normal);
    press(&mut app, KeyCode::Char(':'));
    press(&mut app, KeyCode::Backspace);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(enter_line(&mut app, ':', "frobnicate"), None);
    assert!(
        app.status
            .clone()
            .unwrap()
            .text
            .contains("unknown command `frobnicate`")
    );
}

#[test]
fn enter_folds_and_unfolds() {
    let mut app = app();
    // The bash call of e8 is folded; its arguments show when opened.
    while !cursor_text(&app).contains("→ bash(") {
        press(&mut app, KeyCode::Up);
    }
    let rows = app.rows().len();
    press(&mut app, KeyCode::Enter);
    assert!(cursor_text(&app).contains("▾ → bash("));
    assert!(app.rows().len() > rows);
    assert!(
        app.rows()
            .iter()
            .any(|r| r.text.contains("\"command\": \"cargo bench tokenize_1mb\""))
    );
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.rows().len(), rows);
    // On plain text there is nothing to fold.
    press(&mut app, KeyCode::Char('G'));
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.status.clone().unwrap().text, "nothing to fold here");
}

#[test]
fn ctrl_o_toggles_the_divider_under_the_cursor_or_all() {
    let mut app = view_fixtures::app(&view_fixtures::snapcompact_pages(), 80, 24);
    // Away from a divider: all open, then all closed.
    ctrl(&mut app, 'o');
    assert_eq!(app.expanded().len(), 2);
    ctrl(&mut app, 'o');
    assert!(app.expanded().is_empty());
    // On a divider: only that one, and it scrolls to the top.
    while !matches!(app.fold_at_cursor(), Some((_, Part::Divider(_)))) {
        press(&mut app, KeyCode::Up);
    }
    ctrl(&mut app, 'o');
    assert_eq!(app.expanded().len(), 1);
    assert_eq!(app.top(), app.cursor());
    assert!(app.rows().iter().any(|r| r.text.contains("page 4/4 · ")));
    ctrl(&mut app, 'o');
    assert!(app.expanded().is_empty());
    in_bounds(&app);
}

#[test]
fn quitting() {
    for (code, modifiers) in [
        (KeyCode::Char('q'), KeyModifiers::NONE),
        (KeyCode::Esc, KeyModifiers::NONE),
        (KeyCode::Char('c'), KeyModifiers::CONTROL),
    ] {
        let mut app = app();
        let effect = update(&mut app, Input::Key(KeyEvent::new(code, modifiers)));
        assert_eq!(effect, Some(Effect::Quit));
    }
}

#[test]
fn the_tree_pane_takes_the_keys_and_esc_closes_it() {
    let mut app = app();
    press(&mut app, KeyCode::Char('t'));
    assert!(app.pane.open);
    assert_eq!(app.pane.cursor, app.tree.leaf_row);
    assert!(app.tree.rows[app.pane.cursor].is_leaf);
    press(&mut app, KeyCode::Home);
    assert_eq!(app.pane.cursor, 0);
    assert_eq!(app.tree.rows[0].target, None);
    press(&mut app, KeyCode::Up);
    assert_eq!(app.pane.cursor, 0);
    press(&mut app, KeyCode::End);
    assert_eq!(app.pane.cursor, app.tree.rows.len() - 1);
    press(&mut app, KeyCode::Char('l'));
    assert_eq!(app.pane.cursor, app.tree.leaf_row);
    // Enter on the leaf does nothing.
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    assert_eq!(app.status.clone().unwrap().text, "already at the leaf");
    assert_eq!(press(&mut app, KeyCode::Esc), None);
    assert!(!app.pane.open);
    press(&mut app, KeyCode::Tab);
    assert!(app.pane.open);
    assert_eq!(press(&mut app, KeyCode::Char('q')), Some(Effect::Quit));
}

fn to_row(app: &mut App, id: &str) {
    press(app, KeyCode::Char('t'));
    press(app, KeyCode::Home);
    while app.tree.rows[app.pane.cursor].target.as_deref() != Some(id) {
        press(app, KeyCode::Down);
    }
}

#[test]
fn leaving_a_branch_asks_first() {
    for (key, summarize) in [('y', true), ('n', false)] {
        let mut app = app();
        to_row(&mut app, "b2");
        assert!(!app.tree.rows[app.pane.cursor].below_leaf);
        assert_eq!(press(&mut app, KeyCode::Enter), None);
        assert_eq!(
            app.mode,
            Mode::Confirm {
                target: Some("b2".to_owned())
            }
        );
        // Other keys wait for an answer.
        assert_eq!(press(&mut app, KeyCode::Char('x')), None);
        let effect = press(&mut app, KeyCode::Char(key));
        let job = Job::Navigate {
            target: Some("b2".to_owned()),
            summarize,
        };
        assert_eq!(effect, Some(Effect::Run(job)));
        assert!(matches!(app.mode, Mode::Busy { .. }));
    }
    let mut app = app();
    to_row(&mut app, "b2");
    press(&mut app, KeyCode::Enter);
    assert_eq!(press(&mut app, KeyCode::Esc), None);
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.pane.open);
}

#[test]
fn search_only_searches_even_for_compact() {
    let mut app = app();
    let before = app.rows().len();
    assert_eq!(
        enter_line(&mut app, '/', "compact keep the benchmark numbers"),
        None
    );
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(
        app.query.as_deref(),
        Some("compact keep the benchmark numbers")
    );
    assert!(app.status.clone().unwrap().text.ends_with("not found"));
    // `/compact` is a search for the word: it finds the divider.
    assert_eq!(enter_line(&mut app, '/', "compact"), None);
    assert_eq!(app.mode, Mode::Normal);
    assert!(
        cursor_text(&app).contains("compact"),
        "{}",
        cursor_text(&app)
    );
    assert!(app.rows().len() >= before);
}

#[test]
fn colon_compact_asks_before_it_runs() {
    // y and Enter run it, with or without instructions.
    for (typed_text, answer, instructions) in [
        ("compact", KeyCode::Char('y'), None),
        (
            "compact keep the benchmark numbers",
            KeyCode::Enter,
            Some("keep the benchmark numbers"),
        ),
        ("/compact", KeyCode::Char('Y'), None),
    ] {
        let mut app = app();
        assert_eq!(enter_line(&mut app, ':', typed_text), None, "{typed_text}");
        let instructions = instructions.map(str::to_owned);
        assert_eq!(
            app.mode,
            Mode::ConfirmCompact {
                instructions: instructions.clone()
            }
        );
        // Other keys wait for an answer.
        assert_eq!(press(&mut app, KeyCode::Char('j')), None);
        let effect = press(&mut app, answer);
        let label = if instructions.is_some() {
            "compacting with llm (no provider configured)"
        } else {
            "compacting with snapcompact"
        };
        assert_eq!(effect, Some(Effect::Run(Job::Compact { instructions })));
        match &app.mode {
            Mode::Busy { label: l, .. } => assert_eq!(l, label),
            other => panic!("{other:?}"),
        }
    }
    // n and Esc leave the file alone.
    for answer in [KeyCode::Char('n'), KeyCode::Esc] {
        let mut app = app();
        enter_line(&mut app, ':', "compact");
        assert_eq!(press(&mut app, answer), None);
        assert_eq!(app.mode, Mode::Normal);
        assert_eq!(
            app.status.clone().unwrap().text,
            "not compacted: the file is unchanged"
        );
    }
}

#[test]
fn the_tree_filter_cycles_through_user_messages_labelled_and_all() {
    let mut app = app();
    press(&mut app, KeyCode::Char('t'));
    let all: Vec<Option<String>> = app.tree.rows.iter().map(|r| r.target.clone()).collect();
    let ids = |app: &App| -> Vec<String> {
        app.tree
            .rows
            .iter()
            .map(|r| format!("{}{}", r.prefix, r.target.as_deref().unwrap_or("root")))
            .collect()
    };
    press(&mut app, KeyCode::Char('f'));
    assert_eq!(app.tree.filter, TreeFilter::User);
    // The user messages under their nearest shown ancestor, the leaf kept.
    assert_eq!(
        ids(&app),
        ["root", "e1", "├─ b1", "└─ e5", "   e7", "   e10"]
    );
    assert!(app.tree.rows[app.tree.leaf_row].is_leaf);
    assert_eq!(app.pane.cursor, app.tree.leaf_row);
    assert!(
        app.status
            .clone()
            .unwrap()
            .text
            .starts_with("tree: user messages")
    );
    press(&mut app, KeyCode::Char('f'));
    assert_eq!(app.tree.filter, TreeFilter::Labelled);
    assert_eq!(ids(&app), ["root", "e4", "e10"]);
    assert_eq!(app.tree.rows[1].label.as_deref(), Some("python-read"));
    // Enter on a filtered row navigates to that entry.
    press(&mut app, KeyCode::Up);
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    assert_eq!(
        app.mode,
        Mode::Confirm {
            target: Some("e4".to_owned())
        }
    );
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('f'));
    assert_eq!(app.tree.filter, TreeFilter::All);
    let back: Vec<Option<String>> = app.tree.rows.iter().map(|r| r.target.clone()).collect();
    assert_eq!(back, all);
    // The cursor stayed on e4, which every filter showed.
    assert_eq!(app.tree.rows[app.pane.cursor].target.as_deref(), Some("e4"));
    in_bounds(&app);
}

#[test]
fn a_running_job_spins_cancels_and_reloads() {
    let mut app = app();
    enter_line(&mut app, ':', "compact");
    press(&mut app, KeyCode::Char('y'));
    update(&mut app, Input::Tick);
    assert!(matches!(
        app.mode,
        Mode::Busy {
            tick: 1,
            cancelling: false,
            ..
        }
    ));
    // Keys other than cancel are ignored; `q` neither quits nor cancels
    // (it says how to); Esc asks the job to stop.
    assert_eq!(press(&mut app, KeyCode::Char('j')), None);
    assert_eq!(press(&mut app, KeyCode::Char('q')), None);
    assert!(matches!(
        app.mode,
        Mode::Busy {
            cancelling: false,
            ..
        }
    ));
    assert!(
        app.status
            .clone()
            .unwrap()
            .text
            .contains("Esc or ctrl+c cancels it")
    );
    assert_eq!(press(&mut app, KeyCode::Esc), Some(Effect::Cancel));
    assert!(matches!(
        app.mode,
        Mode::Busy {
            cancelling: true,
            ..
        }
    ));
    // The job reports; the session as re-read replaces the old one.
    let session = view_fixtures::session(&view_fixtures::snapcompact_frames());
    let done = Done {
        result: Ok("compacted".to_owned()),
        reload: Some(snapshot(&session)),
    };
    update(&mut app, Input::Done(done));
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.status.clone().unwrap().text, "compacted");
    assert!(app.rows().iter().any(|r| r.text.contains("3 PNG frames")));
    in_bounds(&app);
    let failed = Done {
        result: Err("Compaction cancelled".to_owned()),
        reload: None,
    };
    update(&mut app, Input::Done(failed));
    assert!(app.status.clone().unwrap().error);
}
