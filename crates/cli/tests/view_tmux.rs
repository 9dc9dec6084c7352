//! `musepi view` end to end: the built binary runs in a tmux pane of
//! 80×24, keys go in with `tmux send-keys`, the screen comes back with
//! `tmux capture-pane`. The divider shows, ctrl+o expands it, navigating
//! with a summary writes a `branch_summary` entry into the file, `:compact`
//! asks and then writes a compaction and shows its divider, and quitting leaves the
//! terminal as it was.
//!
//! tmux is required: without it the test fails and says how to install it.

#![allow(clippy::unwrap_used)]

mod support;
mod tmux;
mod view_fixtures;

use support::assert_has;
use tmux::Tmux;

#[test]
fn view_in_tmux() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.jsonl");
    let original = view_fixtures::compacted();
    std::fs::write(&file, &original).unwrap();
    // The view writes in place, so the file must not look live.
    support::settle(&file);
    // After the view ends the shell reports its exit status and whether the
    // terminal is back in canonical mode with echo, then waits to be read.
    let command = format!(
        "{} view session.jsonl --branch-strategy snapcompact --keep-recent 10 \
         --now 2025-05-01T10:00:00.000Z --deterministic-ids; \
         s=$?; t=$(stty -a | tr ' ' '\\n' | grep -x -e icanon -e echo | tr '\\n' ' '); \
         echo \"exit=$s tty=[$t] done\"; sleep 600",
        env!("CARGO_BIN_EXE_musepi")
    );
    let tmux = Tmux::start("view", dir.path(), &command);
    let divider = "── 📷 compacted · ctrl+o ──";

    // The transcript opens at the leaf with the divider inline.
    let screen = tmux.wait_for("the transcript", |s| {
        s.contains("The 1 MB benchmark runs in 2.2 ms.")
    });
    assert_has(&screen, divider);
    assert!(!screen.contains("── end of compaction ──"), "{screen}");

    // Search puts the cursor on the divider; ctrl+o expands it.
    tmux.enter_line("/", "compacted");
    tmux.wait_for("the search", |s| s.contains("/compacted: match 1 of 1"));
    tmux.keys(&["C-o"]);
    let screen = tmux.wait_for("the expanded divider", |s| {
        s.contains("── end of compaction ──")
    });
    assert_has(
        &screen,
        "Port the tokenizer to Rust with the same public API.",
    );
    tmux.keys(&["C-o"]);
    tmux.wait_for("the divider folded again", |s| {
        !s.contains("── end of compaction ──")
    });

    // The tree pane: go to b2 on the side branch, with a summary.
    tmux.keys(&["t"]);
    tmux.wait_for("the tree", |s| {
        s.contains("◀ leaf") && s.contains("[python-read]")
    });
    tmux.keys(&["Home"]);
    for _ in 0..6 {
        tmux.keys(&["j"]);
    }
    tmux.wait_for("the cursor on b2", |s| {
        s.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            l.contains("›") && words.windows(2).any(|w| w == ["b2", "assistant"])
        })
    });
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the question", |s| {
        s.contains("summarize the branch you leave? [y/n/Esc]")
    });
    assert_has(&screen, "snapcompact digest");
    tmux.keys(&["y"]);
    let screen = tmux.wait_for("the navigation", |s| s.contains("at b2: branch summary"));
    assert_has(&screen, "branch summary · from b2");
    let entry = support::last_line(&file);
    assert_eq!(entry["type"], "branch_summary", "{entry}");
    assert_eq!(entry["parentId"], "b2");
    assert_eq!(entry["fromId"], "b2");
    assert!(
        entry["summary"].as_str().unwrap().contains("tokenizer"),
        "{entry}"
    );
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with(&original), "earlier lines changed");

    // Typing `compact` in the search only searches.
    let before = std::fs::read_to_string(&file).unwrap();
    tmux.enter_line("/", "compact");
    // (Whether the screen holds the word or not: the status line answers.)
    tmux.wait_for("the search for compact", |s| {
        s.contains("/compact: match") || s.contains("/compact: not found")
    });
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);

    // :compact asks first; n leaves the file alone, y compacts.
    let compact_answering = |answer| {
        tmux.enter_line(":", "compact");
        tmux.wait_for("the question", |s| {
            s.contains("compact at the leaf with snapcompact? [y/n]")
        });
        tmux.keys(&[answer]);
    };
    compact_answering("n");
    tmux.wait_for("the refusal", |s| s.contains("not compacted"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
    compact_answering("y");
    let screen = tmux.wait_for("the compaction", |s| {
        s.contains("compacted with snapcompact")
    });
    // The new entry records how it was made and the context after it,
    // and its divider shows them.
    let entry = support::last_line(&file);
    assert_eq!(entry["method"], "snapcompact", "{entry}");
    assert!(entry["tokensAfter"].is_number(), "{entry}");
    assert_has(&screen, "── 📷 snapcompact · ");
    assert_eq!(entry["type"], "compaction", "{entry}");
    assert!(entry["details"]["snapcompact"].is_object(), "{entry}");

    // q leaves the view; the shell finds the terminal as it was.
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("the shell", |s| s.contains("exit="));
    assert_has(&screen, "exit=0");
    assert!(
        screen.contains("icanon echo"),
        "terminal left in raw mode:\n{screen}"
    );
    assert!(
        !screen.contains(divider),
        "the alternate screen is still shown:\n{screen}"
    );
}
