//! Keys: what each key does in each mode, as one pure function of the
//! state and the input that returns the effect to run.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::app::{App, Done, Effect, Input, Job, Mode};

/// Spinner frames of a running job.
pub const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Applies `input` to `app`; returns what the caller must do.
pub fn update(app: &mut App, input: Input) -> Option<Effect> {
    match input {
        Input::Resize(w, h) => {
            app.resize(w, h);
            None
        }
        Input::Tick => {
            if let Mode::Busy { tick, .. } = &mut app.mode {
                *tick = tick.wrapping_add(1);
            }
            None
        }
        Input::Done(done) => {
            finish(app, done);
            None
        }
        Input::Key(key) if key.kind == KeyEventKind::Release => None,
        // The key list closes on any key, which does nothing else.
        Input::Key(_) if app.help => {
            app.help = false;
            None
        }
        Input::Key(key) => match app.mode.clone() {
            Mode::Normal if app.pane.open => tree_key(app, key),
            Mode::Normal => normal_key(app, key),
            Mode::Search(text) => prompt_key(app, key, text, true),
            Mode::Command(text) => prompt_key(app, key, text, false),
            Mode::Confirm { target } => confirm_key(app, key, target),
            Mode::ConfirmCompact { instructions } => confirm_compact_key(app, key, instructions),
            Mode::Busy { .. } => busy_key(app, key),
        },
    }
}

fn ctrl(key: KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char(c)
}

fn normal_key(app: &mut App, key: KeyEvent) -> Option<Effect> {
    if ctrl(key, 'c') {
        return Some(Effect::Quit);
    }
    if ctrl(key, 'o') {
        app.toggle_divider();
        return None;
    }
    if ctrl(key, 'f') || ctrl(key, 'd') {
        app.page_by(1);
        return None;
    }
    if ctrl(key, 'b') || ctrl(key, 'u') {
        app.page_by(-1);
        return None;
    }
    match key.code {
        KeyCode::Char('q') | KeyCode::Esc => return Some(Effect::Quit),
        KeyCode::Down | KeyCode::Char('j') => app.move_by(1),
        KeyCode::Up | KeyCode::Char('k') => app.move_by(-1),
        KeyCode::PageDown | KeyCode::Char(' ') => app.page_by(1),
        KeyCode::PageUp => app.page_by(-1),
        KeyCode::Home | KeyCode::Char('g') => app.home(),
        KeyCode::End => app.end(),
        KeyCode::Char('G' | 'l') => app.jump_to_leaf(),
        KeyCode::Enter if !app.toggle_fold() => app.say("nothing to fold here", false),
        KeyCode::Char('/') => app.mode = Mode::Search(String::new()),
        KeyCode::Char(':') => app.mode = Mode::Command(String::new()),
        KeyCode::Char('n') => repeat_search(app, true),
        KeyCode::Char('N') => repeat_search(app, false),
        KeyCode::Char('t') | KeyCode::Tab => app.toggle_tree(),
        KeyCode::Char('?') => app.help = true,
        _ => {}
    }
    None
}

fn repeat_search(app: &mut App, forward: bool) {
    match app.query.clone() {
        Some(q) => {
            app.search(&q, forward);
        }
        None => app.say("no search yet: / starts one", true),
    }
}

fn tree_key(app: &mut App, key: KeyEvent) -> Option<Effect> {
    if ctrl(key, 'c') {
        return Some(Effect::Quit);
    }
    let len = app.tree.rows.len();
    let page = app.tree_page();
    let step = page as isize;
    match key.code {
        KeyCode::Char('q') => return Some(Effect::Quit),
        KeyCode::Esc | KeyCode::Tab | KeyCode::Char('t') => app.toggle_tree(),
        KeyCode::Down | KeyCode::Char('j') => app.pane.move_by(1, len, page),
        KeyCode::Up | KeyCode::Char('k') => app.pane.move_by(-1, len, page),
        KeyCode::PageDown => app.pane.move_by(step, len, page),
        KeyCode::PageUp => app.pane.move_by(-step, len, page),
        KeyCode::Home | KeyCode::Char('g') => app.pane.move_by(-(len as isize), len, page),
        KeyCode::End | KeyCode::Char('G') => app.pane.move_by(len as isize, len, page),
        KeyCode::Char('l') => {
            app.pane.cursor = app.tree.leaf_row;
            app.pane.follow(page);
        }
        KeyCode::Enter => return choose(app),
        KeyCode::Char('f') => app.cycle_tree_filter(),
        KeyCode::Char('?') => app.help = true,
        _ => {}
    }
    None
}

/// Enter on a tree row: go there, asking first when a branch is left.
fn choose(app: &mut App) -> Option<Effect> {
    let row = app.tree.rows.get(app.pane.cursor)?.clone();
    if row.is_leaf {
        app.say("already at the leaf", false);
        return None;
    }
    if row.below_leaf {
        // Going down from the leaf abandons nothing: no summary to offer.
        return Some(start(
            app,
            Job::Navigate {
                target: row.target,
                summarize: false,
            },
        ));
    }
    app.mode = Mode::Confirm { target: row.target };
    None
}

fn confirm_key(app: &mut App, key: KeyEvent, target: Option<String>) -> Option<Effect> {
    let summarize = match key.code {
        KeyCode::Char('y' | 'Y') => true,
        KeyCode::Char('n' | 'N') => false,
        KeyCode::Esc => {
            app.mode = Mode::Normal;
            app.say("stayed where you were", false);
            return None;
        }
        _ if ctrl(key, 'c') => {
            app.mode = Mode::Normal;
            return None;
        }
        _ => return None,
    };
    Some(start(app, Job::Navigate { target, summarize }))
}

fn confirm_compact_key(
    app: &mut App,
    key: KeyEvent,
    instructions: Option<String>,
) -> Option<Effect> {
    match key.code {
        KeyCode::Char('y' | 'Y') | KeyCode::Enter => {
            Some(start(app, Job::Compact { instructions }))
        }
        KeyCode::Char('n' | 'N') | KeyCode::Esc => {
            app.mode = Mode::Normal;
            app.say("not compacted: the file is unchanged", false);
            None
        }
        _ if ctrl(key, 'c') => {
            app.mode = Mode::Normal;
            None
        }
        _ => None,
    }
}

fn prompt_key(app: &mut App, key: KeyEvent, mut text: String, search: bool) -> Option<Effect> {
    if ctrl(key, 'c') || key.code == KeyCode::Esc {
        app.mode = Mode::Normal;
        return None;
    }
    match key.code {
        KeyCode::Enter => {
            app.mode = Mode::Normal;
            return submit(app, text.trim(), search);
        }
        KeyCode::Backspace => {
            if text.pop().is_none() {
                app.mode = Mode::Normal;
                return None;
            }
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
        _ => return None,
    }
    app.mode = if search {
        Mode::Search(text)
    } else {
        Mode::Command(text)
    };
    None
}

/// Enter in a prompt: the `/` prompt searches for the text, whatever it
/// is; the `:` prompt runs a command (`compact` asks first).
fn submit(app: &mut App, text: &str, search: bool) -> Option<Effect> {
    if search {
        if !text.is_empty() {
            app.query = Some(text.to_owned());
            app.search(text, true);
        }
        return None;
    }
    let command = text.strip_prefix('/').unwrap_or(text);
    let (word, rest) = command
        .split_once(char::is_whitespace)
        .map_or((command, ""), |(w, r)| (w, r.trim()));
    let arg = (!rest.is_empty()).then(|| rest.to_owned());
    match word {
        "" => None,
        "compact" => {
            app.mode = Mode::ConfirmCompact { instructions: arg };
            None
        }
        "q" | "quit" => Some(Effect::Quit),
        "tree" => {
            app.toggle_tree();
            None
        }
        "leaf" => {
            app.jump_to_leaf();
            None
        }
        "find" | "search" if arg.is_some() => {
            app.query.clone_from(&arg);
            app.search(rest, true);
            None
        }
        other => {
            app.say(
                format!("unknown command `{other}`: try compact [instructions], find TEXT, tree, leaf or q"),
                true,
            );
            None
        }
    }
}

/// While a job runs, Esc or ctrl+c cancels it; `q`, which quits
/// everywhere else, does not cancel a compaction or a summary half done
/// by accident: it says how to.
fn busy_key(app: &mut App, key: KeyEvent) -> Option<Effect> {
    if key.code == KeyCode::Char('q') && !key.modifiers.contains(KeyModifiers::CONTROL) {
        app.say(
            "still working: Esc or ctrl+c cancels it (nothing is written), then q quits",
            false,
        );
        return None;
    }
    let stop = ctrl(key, 'c') || key.code == KeyCode::Esc;
    if let (true, Mode::Busy { cancelling, .. }) = (stop, &mut app.mode) {
        *cancelling = true;
        return Some(Effect::Cancel);
    }
    None
}

/// Starts a job: the spinner runs until it is done.
fn start(app: &mut App, job: Job) -> Effect {
    let label = match &job {
        Job::Navigate {
            summarize: true, ..
        } => format!("summarizing the branch with {}", app.strategies.branch),
        Job::Navigate { .. } => "navigating".to_owned(),
        Job::Compact { instructions } => format!(
            "compacting with {}",
            app.compact_strategy(instructions.is_some())
        ),
    };
    app.mode = Mode::Busy {
        label,
        tick: 0,
        cancelling: false,
    };
    app.status = None;
    Effect::Run(job)
}

fn finish(app: &mut App, done: Done) {
    app.mode = Mode::Normal;
    if let Some((transcript, tree)) = done.reload {
        // Back to the transcript, at the new leaf.
        app.pane.open = false;
        app.reload(transcript, tree);
    }
    match done.result {
        Ok(text) => app.say(text, false),
        Err(text) => app.say(text, true),
    }
}
