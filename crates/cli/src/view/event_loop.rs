//! The loop: draw, wait for a key, a resize or a finished job, update the
//! state, run what it asks for. Jobs run on their own thread so the
//! spinner turns and Esc can cancel them.

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio_util::sync::CancellationToken;

use super::app::{App, Done, Effect, Input, Job};
use super::keys::update;
use super::render::draw;
use crate::output::is_unsafe_char;

/// How often the screen is refreshed while nothing happens.
const TICK: Duration = Duration::from_millis(100);

/// Runs the jobs the view asks for: the pipelines on the session file.
pub trait Worker: Sync {
    /// Runs `job` to its end (or until `cancel` fires) and reports it.
    fn run(&self, job: &Job, cancel: &CancellationToken) -> Done;
}

/// Runs the view on `terminal` until the user quits.
pub fn run<B>(terminal: &mut Terminal<B>, app: &mut App, worker: &dyn Worker) -> io::Result<()>
where
    B: Backend,
    B::Error: Into<io::Error>,
{
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<Option<Done>>();
        let mut running = CancelOnDrop(None);
        let mut quitting = false;
        loop {
            let size = terminal.size().map_err(Into::into)?;
            update(app, Input::Resize(size.width, size.height));
            terminal.draw(|f| draw(f, app)).map_err(Into::into)?;
            while let Ok(message) = rx.try_recv() {
                running.0 = None;
                let Some(done) = message else {
                    return Err(io::Error::other("a view job panicked"));
                };
                update(app, Input::Done(done));
                if quitting {
                    return Ok(());
                }
            }
            let effect = if event::poll(TICK)? {
                match event::read()? {
                    Event::Key(key) => update(app, Input::Key(key)),
                    Event::Resize(w, h) => update(app, Input::Resize(w, h)),
                    Event::Paste(text) => paste(app, &text),
                    _ => None,
                }
            } else {
                update(app, Input::Tick)
            };
            match effect {
                None => {}
                Some(Effect::Quit) => match &running.0 {
                    Some(token) => {
                        token.cancel();
                        quitting = true;
                    }
                    None => return Ok(()),
                },
                Some(Effect::Cancel) => {
                    if let Some(token) = &running.0 {
                        token.cancel();
                    }
                }
                Some(Effect::Run(job)) => {
                    let token = CancellationToken::new();
                    running.0 = Some(token.clone());
                    let tx = tx.clone();
                    scope.spawn(move || {
                        let done = catch_unwind(AssertUnwindSafe(|| worker.run(&job, &token)));
                        let _ = tx.send(done.ok());
                    });
                }
            }
        }
    })
}

/// The running job's token: leaving the loop for any reason cancels the
/// job, so the scope that joins its thread does not wait long.
struct CancelOnDrop(Option<CancellationToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = &self.0 {
            token.cancel();
        }
    }
}

/// Pasted text goes into a prompt as typed characters, without what
/// [`is_unsafe_char`] names: line breaks, tabs and other control
/// characters, bidirectional controls and invisible format characters are
/// dropped, so a paste can neither reorder the prompt line nor hide in it.
fn paste(app: &mut App, text: &str) -> Option<Effect> {
    let mut effect = None;
    for c in text.chars().filter(|&c| !is_unsafe_char(c)) {
        let key = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        if matches!(
            app.mode,
            super::app::Mode::Search(_) | super::app::Mode::Command(_)
        ) {
            effect = effect.or(update(app, Input::Key(key)));
        }
    }
    effect
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use musepi_session_model::{SequentialIds, load_bytes};

    use super::*;
    use crate::view::app::{Mode, Strategies};

    /// A view of a session holding only its header, in `mode`.
    fn app(mode: Mode) -> App {
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
        let session = load_bytes(
            Path::new("s.jsonl"),
            header.as_bytes(),
            &mut SequentialIds::new(),
        )
        .unwrap();
        let strategies = Strategies {
            compact: "snapcompact".to_owned(),
            compact_with_instructions: "snapcompact".to_owned(),
            branch: "the snapcompact digest (no model)".to_owned(),
        };
        let mut app = App::new(
            "s.jsonl".to_owned(),
            crate::view::snapshot(&session),
            strategies,
            (80, 24),
        );
        app.mode = mode;
        app
    }

    #[test]
    fn a_paste_types_only_safe_characters_into_a_prompt() {
        // (what is pasted, what the prompt then holds)
        let cases = [
            ("plain, 日本語 e\u{301}", "plain, 日本語 e\u{301}"),
            ("one\r\ntwo\tthree\x1b[2J", "onetwothree[2J"),
            ("abc \u{202e}fed\u{202c} \u{2066}x\u{2069}", "abc fed x"),
            ("a\u{200b}b\u{feff}c\u{e0041}d\u{7}", "abcd"),
            (
                "👨\u{200d}👩\u{200d}👧 می\u{200c}خواهم",
                "👨\u{200d}👩\u{200d}👧 می\u{200c}خواهم",
            ),
        ];
        for (pasted, typed) in cases {
            for mode in [Mode::Search(String::new()), Mode::Command(String::new())] {
                let mut app = app(mode.clone());
                let _ = paste(&mut app, pasted);
                let prompt = match &app.mode {
                    Mode::Search(t) | Mode::Command(t) => t.clone(),
                    other => panic!("{pasted:?} left the prompt for {other:?}"),
                };
                assert_eq!(prompt, typed, "{pasted:?} into {mode:?}");
            }
        }
    }
}
