//! A tmux server of its own for end-to-end terminal tests: the built
//! binary runs in a pane of 80×24, keys go in with `tmux send-keys`, the
//! screen comes back with `tmux capture-pane`.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long a screen may take to show what a step expects, on the busiest
/// machine (it shows it at once on an idle one).
const PATIENCE: Duration = Duration::from_mins(3);

/// A tmux server of its own, killed when the test ends.
pub(crate) struct Tmux {
    socket: String,
    home: PathBuf,
}

impl Tmux {
    /// A session running `command` in `dir` on an 80×24 terminal; `name`
    /// keeps the servers of different tests apart.
    pub(crate) fn start(name: &str, dir: &Path, command: &str) -> Self {
        Self::start_sized(name, dir, command, 80, 24)
    }

    /// [`Tmux::start`] on a terminal of `columns`×`rows`.
    pub(crate) fn start_sized(
        name: &str,
        dir: &Path,
        command: &str,
        columns: u16,
        rows: u16,
    ) -> Self {
        let version = Command::new("tmux").arg("-V").output();
        match version {
            Ok(out) if out.status.success() => {}
            _ => panic!(
                "tmux is not installed: the end-to-end terminal tests need it \
                 (apt-get install -y tmux); it does not pass without it"
            ),
        }
        let tmux = Self {
            socket: format!("musepi-{name}-{}", std::process::id()),
            home: dir.to_owned(),
        };
        let out = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "view",
            "-x",
            &columns.to_string(),
            "-y",
            &rows.to_string(),
            "-c",
            dir.to_str().unwrap(),
            command,
        ]);
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-u", "-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .env("LC_ALL", "C.UTF-8")
            .env_remove("TMUX")
            .env_remove("NO_COLOR")
            .output()
            .unwrap()
    }

    /// From now on, every byte the pane's program writes goes to `log` as
    /// well (`tmux pipe-pane`): what was drawn and cleared again, such as
    /// a spinner, which the screen no longer shows.
    pub(crate) fn record(&self, log: &Path) {
        let command = format!("cat >> '{}'", log.display());
        assert!(
            self.run(&["pipe-pane", "-t", "view", "-o", &command])
                .status
                .success()
        );
    }

    /// Sends tmux key names (`C-o`, `Enter`, `j`).
    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "view"];
        args.extend_from_slice(keys);
        assert!(self.run(&args).status.success());
    }

    /// Types text literally.
    pub(crate) fn type_text(&self, text: &str) {
        assert!(
            self.run(&["send-keys", "-t", "view", "-l", text])
                .status
                .success()
        );
    }

    /// Opens the search (`/`) or the command line (`:`) with `key`, types
    /// `text` and enters it.
    pub(crate) fn enter_line(&self, key: &str, text: &str) {
        self.keys(&[key]);
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    pub(crate) fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "view"]).stdout)
            .into_owned()
    }

    /// The screen and the scrollback, each line as the program wrote it
    /// (lines the pane wrapped joined again: `capture-pane -J`).
    pub(crate) fn lines_written(&self) -> String {
        String::from_utf8_lossy(
            &self
                .run(&["capture-pane", "-p", "-J", "-S", "-", "-t", "view"])
                .stdout,
        )
        .into_owned()
    }

    /// The screen with its colours, as the escape sequences that set them
    /// (`capture-pane -e`).
    pub(crate) fn screen_with_colours(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-e", "-t", "view"]).stdout)
            .into_owned()
    }

    /// Waits until the screen satisfies `ok`; fails with the screen.
    pub(crate) fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "waited for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}
