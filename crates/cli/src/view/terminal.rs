//! Taking over the terminal and giving it back: raw mode and the alternate
//! screen on entry; on every way out (return, error, panic) the screen,
//! the cursor and the line discipline are restored.

use std::io::{self, Stdout, Write};
use std::panic::{self, PanicHookInfo};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::Show;
use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

type PanicHook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Whether the terminal is ours now (so a restore runs once).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back as it was; does nothing when it already is.
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let mut out = io::stdout();
        let _ = execute!(out, DisableBracketedPaste, LeaveAlternateScreen, Show);
        let _ = disable_raw_mode();
        let _ = out.flush();
    }
}

/// The terminal while the view runs; dropping it restores the terminal
/// and the previous panic hook.
pub struct TerminalGuard {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    previous_hook: Arc<PanicHook>,
}

impl TerminalGuard {
    /// Enters raw mode and the alternate screen, and installs a panic hook
    /// that restores the terminal before the panic message is printed.
    pub fn enter() -> io::Result<Self> {
        let previous_hook: Arc<PanicHook> = Arc::new(panic::take_hook());
        let chained = Arc::clone(&previous_hook);
        panic::set_hook(Box::new(move |info| {
            restore();
            chained(info);
        }));
        ACTIVE.store(true, Ordering::SeqCst);
        let setup = (|| {
            enable_raw_mode()?;
            execute!(io::stdout(), EnterAlternateScreen, EnableBracketedPaste)?;
            Terminal::new(CrosstermBackend::new(io::stdout()))
        })();
        match setup {
            Ok(terminal) => Ok(Self {
                terminal,
                previous_hook,
            }),
            Err(e) => {
                restore();
                reinstall(&previous_hook);
                Err(e)
            }
        }
    }

    /// The terminal to draw on.
    pub fn terminal(&mut self) -> &mut Terminal<CrosstermBackend<Stdout>> {
        &mut self.terminal
    }
}

/// Puts the hook that was there before ours back in place.
fn reinstall(previous: &Arc<PanicHook>) {
    let previous = Arc::clone(previous);
    // Dropping ours; the previous one runs as before.
    let _ours = panic::take_hook();
    panic::set_hook(Box::new(move |info| previous(info)));
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = self.terminal.show_cursor();
        restore();
        if !std::thread::panicking() {
            reinstall(&self.previous_hook);
        }
    }
}
