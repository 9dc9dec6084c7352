//! `musepi trust [FILE] [--dry-run | --revoke] | --list`: approve a project
//! settings file's exact content, so its hooks, providers and key variables
//! take effect ([`crate::trust`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use musepi_protocol::setup::{EnableDoc, LinkDoc, TrustDoc, TrustListDoc, TrustedFileDoc};
use musepi_session_model::time::format_iso;
use serde_json::Value;

use crate::cli::TrustArgs;
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{Color, aligned, print_json, print_text};
use crate::trust::{
    TrustError, TrustStore, Trusted, Verdict, home, key_for, link_of, read_regular, sha256_hex,
    store_path,
};

/// Runs the command.
pub fn run(args: &TrustArgs, ctx: &Ctx) -> CmdResult {
    let store = store_path(home().as_deref())
        .ok_or(TrustError::NoHome)
        .or_failed()?;
    if args.list {
        return list(&store, ctx);
    }
    let file = settings_file(args.file.as_deref()).or_bad_input()?;
    let bytes = read_regular(&file).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            // Said plainly: there is nothing here to trust.
            return Failure::new(
                Exit::BadInput,
                "unreadable-file",
                anyhow::anyhow!(
                    "{}: there is no settings file here, so there is nothing to trust \
                     (`musepi trust` approves a project's .musepi/settings.json: run it in the \
                     project's folder, or name the file or folder)",
                    file.display()
                ),
            );
        }
        Failure::bad_input(anyhow::Error::new(e).context(file.display().to_string()))
    })?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        Failure::new(
            Exit::BadInput,
            "bad-settings",
            anyhow::anyhow!(
                "{}: not valid JSON ({e}); nothing was recorded",
                file.display()
            ),
        )
    })?;
    let key = key_for(&file).or_bad_input()?;
    let sha256 = sha256_hex(&bytes);
    let before = TrustStore::load(&store)
        .or_bad_input()?
        .verdict(&key, &sha256);
    let (after, recorded) = if args.dry_run {
        (before, false)
    } else if args.revoke {
        let (_, changed) = TrustStore::update(&store, &key, None).or_failed()?;
        (Verdict::Unknown, changed)
    } else {
        let approval = Trusted {
            sha256: sha256.clone(),
            trusted_at: format_iso(ctx.now_ms()),
        };
        let (_, changed) = TrustStore::update(&store, &key, Some(approval)).or_failed()?;
        (Verdict::Trusted, changed)
    };
    let enables = enables(&value);
    let link = link_of(&key);
    if ctx.json() {
        print_json(&TrustDoc {
            file: key.display().to_string(),
            link: link.as_ref().map(|(path, target)| LinkDoc {
                path: path.display().to_string(),
                target: target.display().to_string(),
            }),
            sha256,
            before: before.name(),
            status: after.name(),
            recorded,
            enables: enables
                .iter()
                .map(|(k, v)| EnableDoc {
                    key: k.clone(),
                    what: v.clone(),
                })
                .collect(),
        })
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    let st = ctx.style;
    let mut rows = vec![
        ("file".to_owned(), key.display().to_string()),
        ("sha256".to_owned(), sha256),
    ];
    if let Some((path, target)) = &link {
        rows.push((
            "link".to_owned(),
            format!(
                "{} → {} (an approval is for this path only, not for the file it leads to)",
                path.display(),
                target.display()
            ),
        ));
    }
    rows.extend([("was".to_owned(), describe(before).to_owned())]);
    if enables.is_empty() {
        rows.push((
            "enables".to_owned(),
            "nothing that needs trust: its settings apply without it".to_owned(),
        ));
    }
    for (i, (k, v)) in enables.iter().enumerate() {
        let label = if i == 0 { "enables" } else { "" };
        rows.push((label.to_owned(), format!("{k}: {v}")));
    }
    let mut out = aligned(&rows);
    let verdict = if args.dry_run {
        st.paint(Color::Dim, "nothing recorded (--dry-run)")
    } else if args.revoke && recorded {
        "revoked: its hooks, providers and key variables are ignored from now on".to_owned()
    } else if args.revoke {
        "it was not trusted: nothing to revoke".to_owned()
    } else {
        st.paint(
            Color::Green,
            "trusted: its hooks, providers and key variables take effect; any change to the file needs `musepi trust` again",
        )
    };
    let _ = writeln!(out, "{verdict}");
    print_text(&out).or_failed()?;
    Ok(Exit::Ok)
}

/// `FILE`, a folder's `.musepi/settings.json`, or the working directory's.
fn settings_file(arg: Option<&Path>) -> std::io::Result<PathBuf> {
    let in_folder = |dir: &Path| dir.join(".musepi").join("settings.json");
    Ok(match arg {
        None => in_folder(&std::env::current_dir()?),
        Some(p) if p.is_dir() => in_folder(p),
        Some(p) => p.to_owned(),
    })
}

fn describe(v: Verdict) -> &'static str {
    match v {
        Verdict::Trusted => "trusted with this content",
        Verdict::Changed => "trusted with other content (the file changed since)",
        Verdict::Unknown => "not trusted",
    }
}

/// `--list`: every approved file and whether it still holds that content.
fn list(store: &Path, ctx: &Ctx) -> CmdResult {
    let store = TrustStore::load(store).or_bad_input()?;
    let files: Vec<(String, &Trusted, &str)> = store
        .entries()
        .iter()
        .map(|(path, t)| {
            let status = match read_regular(path) {
                Ok(bytes) if sha256_hex(&bytes) == t.sha256 => "trusted",
                Ok(_) => "changed",
                Err(_) => "missing",
            };
            (path.display().to_string(), t, status)
        })
        .collect();
    if ctx.json() {
        print_json(&TrustListDoc {
            store: store.path().display().to_string(),
            files: files
                .iter()
                .map(|(f, t, s)| TrustedFileDoc {
                    file: f.clone(),
                    sha256: t.sha256.clone(),
                    trusted_at: t.trusted_at.clone(),
                    status: s,
                })
                .collect(),
        })
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    if files.is_empty() {
        print_text(&format!(
            "no trusted settings files ({})\n",
            store.path().display()
        ))
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    let rows: Vec<(String, String)> = files
        .iter()
        .map(|(f, t, s)| {
            let color = if *s == "trusted" {
                Color::Green
            } else {
                Color::Yellow
            };
            (
                ctx.style.paint(color, s),
                format!(
                    "{f}  {}  {}",
                    t.trusted_at,
                    &t.sha256[..12.min(t.sha256.len())]
                ),
            )
        })
        .collect();
    print_text(&aligned(&rows)).or_failed()?;
    Ok(Exit::Ok)
}

/// What a settings document enables that needs trust, key by key.
pub fn enables(value: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let str_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    if let Some(Value::Object(events)) = value.get("hooks") {
        for (event, commands) in events {
            for (i, c) in commands.as_array().into_iter().flatten().enumerate() {
                let argv: Vec<String> = c
                    .get("command")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|a| match a.as_str() {
                        Some(s) if !s.is_empty() && !s.contains(char::is_whitespace) => {
                            s.to_owned()
                        }
                        Some(s) => format!("{s:?}"),
                        None => a.to_string(),
                    })
                    .collect();
                let mut what = format!("runs `{}`", argv.join(" "));
                let env: Vec<&str> = c
                    .get("env")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if !env.is_empty() {
                    let _ = write!(what, ", passing it {}", env.join(", "));
                }
                out.push((format!("hooks.{event}[{i}]"), what));
            }
        }
    }
    if let Some(Value::Object(providers)) = value.get("providers") {
        for (name, p) in providers {
            let kind = str_of(p, "kind").unwrap_or_else(|| "(no kind)".to_owned());
            let url = str_of(p, "baseUrl").unwrap_or_else(|| "its official URL".to_owned());
            let mut what = format!("sends the conversation to {kind} at {url}");
            if let Some(model) = str_of(p, "model") {
                let _ = write!(what, " (model {model})");
            }
            if let Some(var) = str_of(p, "apiKeyEnv") {
                let _ = write!(what, " with the key in {var}");
            }
            out.push((format!("providers.{name}"), what));
        }
    }
    if let Some(url) = value
        .pointer("/compaction/remoteEndpoint")
        .and_then(Value::as_str)
    {
        out.push((
            "compaction.remoteEndpoint".to_owned(),
            format!("sends the conversation to {url}"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn what_a_file_enables_is_spelled_out() {
        let value = json!({
            "compaction": {"reserveTokens": 1, "remoteEndpoint": "https://sum.example/v1"},
            "hooks": {"session_before_compact": [
                {"command": ["./hold.sh", "--why", "a b"], "env": ["OPENAI_API_KEY"]},
            ]},
            "providers": {"p": {"kind": "openai-compatible", "baseUrl": "https://x.example/v1", "model": "m", "apiKeyEnv": "OPENAI_API_KEY"}},
        });
        assert_eq!(
            enables(&value),
            [
                (
                    "hooks.session_before_compact[0]".to_owned(),
                    "runs `./hold.sh --why \"a b\"`, passing it OPENAI_API_KEY".to_owned()
                ),
                (
                    "providers.p".to_owned(),
                    "sends the conversation to openai-compatible at https://x.example/v1 (model m) with the key in OPENAI_API_KEY".to_owned()
                ),
                (
                    "compaction.remoteEndpoint".to_owned(),
                    "sends the conversation to https://sum.example/v1".to_owned()
                ),
            ]
        );
        assert!(enables(&json!({"compaction": {"reserveTokens": 1}})).is_empty());
    }
}
