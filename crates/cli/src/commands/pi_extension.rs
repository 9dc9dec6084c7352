//! `musepi pi install | remove`: the pi extension of this musepi, installed
//! where pi finds extensions by itself (`~/.pi/agent/extensions/musepi/`,
//! or `.pi/extensions/musepi/` of the project), so it survives moving or
//! deleting the checkout it came from, and is always the extension of the
//! musepi that runs it.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use musepi_protocol::setup::{PiInstallDoc, PiMarker, PiRemoveDoc};
use serde_json::Value;

use crate::cli::{PiCommand, PiExtensionArgs};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{aligned, escape_controls, note, print_json, print_text};

/// The extension's sources, as this musepi was built with them.
const FILES: [(&str, &str); 4] = [
    (
        "index.ts",
        include_str!("../../../../integrations/pi/src/index.ts"),
    ),
    (
        "musepi.ts",
        include_str!("../../../../integrations/pi/src/musepi.ts"),
    ),
    (
        "bridge.ts",
        include_str!("../../../../integrations/pi/src/bridge.ts"),
    ),
    (
        "recall.ts",
        include_str!("../../../../integrations/pi/src/recall.ts"),
    ),
];

/// The file that marks a folder as this command's: it names the version.
const MARKER: &str = "musepi-extension.json";

/// The version of musepi, which is the extension's.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Runs the command.
pub fn run(cmd: &PiCommand, ctx: &Ctx) -> CmdResult {
    match cmd {
        PiCommand::Install(args) => install(args, ctx),
        PiCommand::Remove(args) => remove(args, ctx),
    }
}

/// pi's agent folder: `PI_CODING_AGENT_DIR` (a leading `~` is the home
/// folder), else `~/.pi/agent`.
fn agent_dir() -> Result<PathBuf, Failure> {
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                Failure::bad_input(anyhow::anyhow!(
                    "HOME is not set, so pi's folder is unknown; set PI_CODING_AGENT_DIR"
                ))
            })
    };
    match std::env::var("PI_CODING_AGENT_DIR") {
        Ok(dir) if dir == "~" => home(),
        Ok(dir) if dir.starts_with("~/") => Ok(home()?.join(&dir[2..])),
        Ok(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => Ok(home()?.join(".pi").join("agent")),
    }
}

/// The folder the extension goes in, and the settings files of pi that
/// may load another copy.
fn places(args: &PiExtensionArgs) -> Result<(PathBuf, Vec<PathBuf>), Failure> {
    let agent = agent_dir()?;
    let cwd = std::env::current_dir().or_failed()?;
    let settings = vec![
        agent.join("settings.json"),
        cwd.join(".pi").join("settings.json"),
    ];
    let folder = if args.project {
        cwd.join(".pi").join("extensions").join("musepi")
    } else {
        agent.join("extensions").join("musepi")
    };
    Ok((folder, settings))
}

/// Whether `folder` holds an extension this command installed (its
/// version), `None` when it holds none, an error when it holds something
/// else.
fn installed(folder: &Path) -> Result<Option<String>, Failure> {
    if !folder.exists() {
        return Ok(None);
    }
    let marker = fs::read_to_string(folder.join(MARKER)).map_err(|_| {
        Failure::bad_input(anyhow::anyhow!(
            "{} exists and was not written by `musepi pi install`; move it away first",
            folder.display()
        ))
    })?;
    let version = serde_json::from_str::<Value>(&marker)
        .ok()
        .and_then(|v| v["musepi"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned());
    Ok(Some(version))
}

/// The paths pi's settings files name in `packages` or `extensions` that
/// look like this repository's `integrations/pi` (a `pi install` of the
/// checkout), which would load a second copy.
fn other_copies(settings: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for file in settings {
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        for key in ["packages", "extensions"] {
            for entry in value[key].as_array().into_iter().flatten() {
                let source = entry
                    .as_str()
                    .or_else(|| entry["source"].as_str())
                    .unwrap_or_default();
                let trimmed = source.trim_end_matches('/');
                if trimmed.ends_with("integrations/pi") || trimmed.ends_with("integrations/pi/src")
                {
                    found.push(source.to_owned());
                }
            }
        }
    }
    found
}

/// Writes `contents` to `path` through a temporary file in the same folder,
/// synced, then renamed over it.
fn write_atomically(path: &Path, contents: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(contents.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn install(args: &PiExtensionArgs, ctx: &Ctx) -> CmdResult {
    let (folder, settings) = places(args)?;
    let before = installed(&folder)?;
    let copies = other_copies(&settings);
    if !args.dry_run {
        fs::create_dir_all(&folder).map_err(|e| {
            Failure::failed(anyhow::anyhow!("cannot create {}: {e}", folder.display()))
        })?;
        for (name, contents) in FILES {
            write_atomically(&folder.join(name), contents).map_err(|e| {
                Failure::failed(anyhow::anyhow!(
                    "cannot write {}: {e}",
                    folder.join(name).display()
                ))
            })?;
        }
        // The marker last: a folder without it is not a finished install.
        write_atomically(
            &folder.join(MARKER),
            &format!(
                "{}\n",
                serde_json::to_string(&PiMarker { musepi: VERSION }).unwrap_or_default()
            ),
        )
        .map_err(|e| {
            Failure::failed(anyhow::anyhow!(
                "cannot write {}: {e}",
                folder.join(MARKER).display()
            ))
        })?;
    }
    for copy in &copies {
        note(
            ctx.quiet(),
            &format!(
                "musepi: warning: pi also loads the extension from {copy} (an earlier `pi install`); remove it with `pi remove {copy}` so the extension runs once"
            ),
        );
    }
    if ctx.json() {
        print_json(&PiInstallDoc {
            folder: folder.display().to_string(),
            version: VERSION,
            previous_version: before,
            dry_run: args.dry_run,
            files: FILES.iter().map(|(n, _)| *n).chain([MARKER]).collect(),
            also_loaded_from: copies,
        })
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    let mut rows = vec![
        (
            "folder".to_owned(),
            escape_controls(&folder.display().to_string()).into_owned(),
        ),
        ("extension".to_owned(), format!("musepi {VERSION}")),
    ];
    rows.push((
        "before".to_owned(),
        before.map_or_else(|| "not installed".to_owned(), |v| format!("musepi {v}")),
    ));
    let mut text = aligned(&rows);
    text.push_str(if args.dry_run {
        "nothing was written (--dry-run)\n"
    } else {
        "pi loads it at its next start (or after /reload); /musepi shows the plan\n"
    });
    print_text(&text).or_failed()?;
    Ok(Exit::Ok)
}

fn remove(args: &PiExtensionArgs, ctx: &Ctx) -> CmdResult {
    let (folder, _) = places(args)?;
    let Some(version) = installed(&folder)? else {
        if ctx.json() {
            print_json(&PiRemoveDoc {
                folder: folder.display().to_string(),
                removed: false,
                version: None,
            })
            .or_failed()?;
        } else {
            print_text(&format!(
                "no extension installed in {}\n",
                escape_controls(&folder.display().to_string())
            ))
            .or_failed()?;
        }
        return Ok(Exit::Ok);
    };
    if !args.dry_run {
        fs::remove_dir_all(&folder).map_err(|e| {
            Failure::failed(anyhow::anyhow!("cannot remove {}: {e}", folder.display()))
        })?;
    }
    if ctx.json() {
        print_json(&PiRemoveDoc {
            folder: folder.display().to_string(),
            removed: !args.dry_run,
            version: Some(version.clone()),
        })
        .or_failed()?;
    } else {
        print_text(&format!(
            "{} the extension (musepi {version}) from {}\n",
            if args.dry_run {
                "would remove"
            } else {
                "removed"
            },
            escape_controls(&folder.display().to_string())
        ))
        .or_failed()?;
    }
    Ok(Exit::Ok)
}
