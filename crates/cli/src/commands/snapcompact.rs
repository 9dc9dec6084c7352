//! `musepi snapcompact render FILE --out DIR [--entry ID] [--shape NAME]
//! [--model ID]`: the archive of a compaction as files to look at.
//!
//! A PNG archive (`preserveData.snapcompact`) gives its stored frames as
//! `frame-001.png` … and its verbatim edges (`text-head.txt`,
//! `text-tail.txt`); a text archive (`details.snapcompact`) gives its
//! pages as `page-001.txt` …, each ending at a line end. Both write the
//! whole kept text (`archive.txt`) and `archive.json` (what each file
//! holds, no image data). With
//! `--shape` or `--model`, the archive's text is printed anew in that shape
//! instead of writing the stored frames.

use std::fs;
use std::path::Path;

use anyhow::{Context as _, anyhow};
use musepi_protocol::setup::{FrameDoc, PageDoc, RenderDoc};
use musepi_runtime::archive::plain_text;
use musepi_runtime::archive::{ArchiveFrame, PngArchive, plan_archive, render_frames};
use musepi_runtime::archive::{MAX_FRAMES_DEFAULT, PRESERVE_KEY};
use musepi_runtime::archive::{SnapArchiveState, TextPages};
use musepi_runtime::archive::{base64_decode, low_companion, normalize, resolve_shape};
use musepi_session_model::{Compaction, EntryBody, Session};

use crate::cli::{RenderArgs, SnapcompactCommand};
use crate::commands::files::{Input, load_or_fail};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{aligned, counted, escape_controls, print_json, print_text};
use musepi_session_model::json::thousands;

/// Runs a `musepi snapcompact` command.
pub fn run(command: &SnapcompactCommand, ctx: &Ctx) -> CmdResult {
    match command {
        SnapcompactCommand::Render(args) => render(args, ctx),
    }
}

/// The archive a compaction holds.
enum Stored {
    Png(PngArchive),
    Text(SnapArchiveState),
}

/// What was written, for `archive.json` and the report.
struct Written {
    doc: RenderDoc,
    files: Vec<String>,
}

fn render(args: &RenderArgs, ctx: &Ctx) -> CmdResult {
    // The flags first: clap refused an unknown --shape, and the shape is
    // resolved before the file is read.
    let shape = match (&args.shape, &args.model) {
        (None, None) => None,
        (shape, model) => Some(
            resolve_shape("", model.as_deref().unwrap_or_default(), shape.as_deref())
                .map_err(|e| Failure::usage(anyhow!("--shape: {e}")))?
                .shape,
        ),
    };
    if args.out.exists() && !args.out.is_dir() {
        return Err(Failure::usage(anyhow!(
            "--out {}: is a file, not a folder; the archive is written as files into a folder",
            args.out.display()
        )));
    }
    if !args.force
        && let Some(name) = earlier_render(&args.out)
    {
        return Err(Failure::new(
            Exit::BadInput,
            "file-exists",
            anyhow!(
                "--out {}: the folder holds an earlier render ({name}); pass --force to replace it",
                args.out.display()
            ),
        ));
    }
    let input = Input::from_arg(&args.file.path()?);
    let loaded = load_or_fail(&input, ctx)?;
    let session = &loaded.session;
    let (index, compaction) = find_compaction(session, args.entry.as_deref(), &input)?;
    let id = session.entries()[index].id.to_string();
    let stored = stored_archive(compaction).ok_or_else(|| {
        Failure::new(
            Exit::BadInput,
            "no-archive",
            anyhow!("compaction {id} holds no snapcompact archive"),
        )
    })?;
    fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))
        .or_failed()?;
    clear_previous(&args.out).or_failed()?;
    let mut written = match (&stored, shape) {
        (Stored::Png(png), None) => write_stored_frames(&args.out, png).or_failed()?,
        (Stored::Text(text), None) => write_pages(&args.out, text).or_failed()?,
        (stored, Some(shape)) => {
            let source = match stored {
                Stored::Png(png) => png.source_text(),
                Stored::Text(text) => normalize(&text.text),
            };
            let layout = plan_archive(
                &source,
                &shape,
                low_companion(&shape).as_ref(),
                MAX_FRAMES_DEFAULT,
            )
            .or_bad_input()?;
            let frames = render_frames(&layout, None).or_failed()?;
            let mut fresh = write_frames(&args.out, &frames).or_failed()?;
            fresh.files.extend(
                write_edges(
                    &args.out,
                    &layout.text_head,
                    &layout.text_tail,
                    &layout.kept_text,
                )
                .or_failed()?,
            );
            fresh.doc.shape = Some(shape.name.to_string());
            fresh.doc.frame_size = Some(shape.frame_size);
            let before = match stored {
                Stored::Png(png) => png.truncated_chars,
                Stored::Text(text) => text.truncated_chars,
            };
            fresh.doc.truncated_chars = before + layout.truncated_chars as u64;
            fresh
        }
    };
    written.doc.entry_id = id;
    written.doc.archive = match stored {
        Stored::Png(_) => "png",
        Stored::Text(_) => "text",
    };
    written.doc.rerendered = args.shape.is_some() || args.model.is_some();
    let json_path = args.out.join("archive.json");
    let pretty = serde_json::to_string_pretty(&written.doc).unwrap_or_default();
    fs::write(&json_path, format!("{pretty}\n"))
        .with_context(|| format!("cannot write {}", json_path.display()))
        .or_failed()?;
    written.files.push("archive.json".to_owned());
    report(args, &written, ctx)
}

/// The compaction named by `--entry`, or the latest on the leaf's path.
fn find_compaction<'s>(
    session: &'s Session,
    entry: Option<&str>,
    input: &Input,
) -> Result<(usize, &'s Compaction), Failure> {
    let index = match entry {
        Some(id) => session
            .index_of(id)
            .ok_or_else(|| Failure::unknown_entry(id))?,
        None => session
            .leaf_index()
            .map(|leaf| session.path_indices(leaf))
            .and_then(|path| {
                path.into_iter()
                    .rev()
                    .find(|&i| matches!(session.entries()[i].body, EntryBody::Compaction(_)))
            })
            .ok_or_else(|| {
                Failure::new(
                    Exit::BadInput,
                    "no-archive",
                    anyhow!("{}: no compaction on the path to the leaf", input.name()),
                )
            })?,
    };
    let entry = &session.entries()[index];
    match &entry.body {
        EntryBody::Compaction(c) => Ok((index, c)),
        other => Err(Failure::new(
            Exit::BadInput,
            "no-archive",
            anyhow!(
                "entry {} is a {}, not a compaction",
                entry.id,
                other.type_name()
            ),
        )),
    }
}

/// The PNG archive of `preserveData`, else the text archive of `details`.
fn stored_archive(c: &Compaction) -> Option<Stored> {
    let png = c
        .preserve_data
        .as_ref()
        .map(musepi_session_model::RawJson::to_value)
        .and_then(|p| p.get(PRESERVE_KEY).and_then(PngArchive::from_value));
    png.map(Stored::Png).or_else(|| {
        c.details
            .as_ref()
            .and_then(|d| d.get(PRESERVE_KEY))
            .and_then(SnapArchiveState::from_value)
            .map(Stored::Text)
    })
}

/// The files a render writes beside its numbered frames or pages; which
/// of them it writes depends on the archive (a text archive has no edges).
const RENDER_FILES: [&str; 3] = ["text-head.txt", "text-tail.txt", "archive.txt"];

/// The first file of an earlier render in `dir` (its numbered frames or
/// pages, its edges, its text or `archive.json`), by name, if there is one.
fn earlier_render(dir: &Path) -> Option<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|name| {
            is_numbered(name, "frame-", ".png")
                || is_numbered(name, "page-", ".txt")
                || RENDER_FILES.contains(&name.as_str())
                || name == "archive.json"
        })
        .collect();
    names.sort();
    names.into_iter().next()
}

/// Removes the files of an earlier render (its numbered frames and pages,
/// its edges and its text), so the folder shows one archive; nothing else
/// in it is touched.
fn clear_previous(dir: &Path) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_numbered(&name, "frame-", ".png")
            || is_numbered(&name, "page-", ".txt")
            || RENDER_FILES.contains(&name.as_str())
        {
            fs::remove_file(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
        }
    }
    Ok(())
}

fn is_numbered(name: &str, prefix: &str, suffix: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|n| n.strip_suffix(suffix))
        .is_some_and(|n| n.len() >= 3 && n.bytes().all(|b| b.is_ascii_digit()))
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<String> {
    let path = dir.join(name);
    fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(name.to_owned())
}

/// `frame-NNN.png` for every available frame, and their metadata.
fn write_frames(dir: &Path, frames: &[ArchiveFrame]) -> anyhow::Result<Written> {
    let mut files = Vec::new();
    let mut meta = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let png = frame
            .is_available()
            .then(|| base64_decode(&frame.data))
            .flatten();
        let file = match &png {
            Some(bytes) => Some(write(dir, &format!("frame-{:03}.png", i + 1), bytes)?),
            None => None,
        };
        files.extend(file.clone());
        meta.push(FrameDoc {
            file,
            png_bytes: png.as_ref().map(Vec::len),
            base64_bytes: frame.data.len(),
            cols: frame.cols,
            rows: frame.rows,
            chars: frame.chars,
            shape: frame.shape.clone(),
            font: frame.font.clone(),
            variant: frame.variant.clone(),
            line_repeat: frame.line_repeat,
            detail: frame.detail.clone(),
        });
    }
    Ok(Written {
        doc: RenderDoc {
            frames: Some(meta),
            ..RenderDoc::default()
        },
        files,
    })
}

/// The edges and the whole text as plain text (line breaks restored).
fn write_edges(dir: &Path, head: &str, tail: &str, all: &str) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    for (name, text) in [
        ("text-head.txt", head),
        ("text-tail.txt", tail),
        ("archive.txt", all),
    ] {
        if !text.is_empty() {
            files.push(write(dir, name, plain_text(text).as_bytes())?);
        }
    }
    Ok(files)
}

fn write_stored_frames(dir: &Path, png: &PngArchive) -> anyhow::Result<Written> {
    let mut written = write_frames(dir, &png.frames)?;
    written.files.extend(write_edges(
        dir,
        png.text_head.as_deref().unwrap_or_default(),
        png.text_tail.as_deref().unwrap_or_default(),
        &png.source_text(),
    )?);
    written.doc.total_chars = Some(png.total_chars);
    written.doc.truncated_chars = png.truncated_chars;
    Ok(written)
}

/// A text archive's pages, each ending at a line end.
fn write_pages(dir: &Path, archive: &SnapArchiveState) -> anyhow::Result<Written> {
    let layout = TextPages::new(&archive.text);
    let mut files = Vec::new();
    let mut pages = Vec::new();
    for frame in &layout.frames {
        let name = format!("page-{:03}.txt", frame.index + 1);
        files.push(write(
            dir,
            &name,
            layout.page(frame.index).unwrap_or_default().as_bytes(),
        )?);
        pages.push(PageDoc {
            file: name,
            chars: frame.chars,
        });
    }
    if !archive.text.is_empty() {
        files.push(write(dir, "archive.txt", archive.text.as_bytes())?);
    }
    Ok(Written {
        doc: RenderDoc {
            pages: Some(pages),
            version: Some(archive.version),
            truncated_chars: archive.truncated_chars,
            ..RenderDoc::default()
        },
        files,
    })
}

fn report(args: &RenderArgs, written: &Written, ctx: &Ctx) -> CmdResult {
    if ctx.json() {
        let mut doc = written.doc.clone();
        doc.out = Some(args.out.display().to_string());
        doc.files = Some(written.files.clone());
        print_json(&doc).or_failed()?;
        return Ok(Exit::Ok);
    }
    let doc = &written.doc;
    let frames = counted(
        doc.frames.as_ref().map_or(0, Vec::len),
        "PNG frame",
        "PNG frames",
    );
    let what = match (&doc.pages, doc.archive) {
        (Some(pages), _) => format!("text, {}", counted(pages.len(), "page", "pages")),
        // A text archive printed anew with `--shape` or `--model`.
        (None, "text") => format!("text, printed as {frames}"),
        (None, _) => format!("png, {frames}"),
    };
    let mut rows = vec![
        (
            "entry".to_owned(),
            escape_controls(&doc.entry_id).into_owned(),
        ),
        ("archive".to_owned(), what),
    ];
    if let Some(shape) = &doc.shape {
        rows.push(("printed as".to_owned(), escape_controls(shape).into_owned()));
    }
    rows.push(("dropped chars".to_owned(), thousands(doc.truncated_chars)));
    rows.push((
        "folder".to_owned(),
        escape_controls(&args.out.display().to_string()).into_owned(),
    ));
    rows.push(("files".to_owned(), written.files.join(" ")));
    print_text(&aligned(&rows)).or_failed()?;
    Ok(Exit::Ok)
}
