//! The grouped, prefix-folded directory tree of a file list (docs/design.md, "Summaries").

/// One directory of the tree.
#[derive(Default)]
struct Dir {
    name: String,
    files: Vec<(String, String)>,
    dirs: Vec<usize>,
}

/// Renders `(path, annotation)` pairs as a tree: a directory's files come
/// before its subdirectories, single-child directory chains fold into one
/// header (`# a/b/c/`), deeper headers get more `#`. Backslashes read as
/// slashes; URL-like paths stay whole at the root.
pub fn format_grouped_paths(paths: &[(String, String)]) -> String {
    let mut dirs = vec![Dir::default()];
    for (path, note) in paths {
        let path = path.replace('\\', "/");
        if has_url_scheme(&path) && starts_with_scheme(&path) {
            add_file(&mut dirs[0], path, note);
            continue;
        }
        // A trailing slash marks a directory leaf, listed by its name.
        let (body, dir_leaf) = match path.strip_suffix('/') {
            Some(b) => (b, true),
            None => (path.as_str(), false),
        };
        let mut segments: Vec<&str> = body.split('/').collect();
        let last = segments.pop().unwrap_or_default();
        let file = if dir_leaf {
            format!("{last}/")
        } else {
            last.to_owned()
        };
        let mut cur = 0;
        for seg in segments {
            cur = child(&mut dirs, cur, seg);
        }
        add_file(&mut dirs[cur], file, note);
    }
    let mut lines = Vec::new();
    emit(&dirs, 0, 0, &mut lines);
    lines.join("\n")
}

fn starts_with_scheme(path: &str) -> bool {
    let Some(pos) = path.find("://") else {
        return false;
    };
    let scheme = &path[..pos];
    scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
}

fn add_file(dir: &mut Dir, name: String, note: &str) {
    if !dir.files.iter().any(|(n, _)| *n == name) {
        dir.files.push((name, note.to_owned()));
    }
}

fn child(dirs: &mut Vec<Dir>, parent: usize, name: &str) -> usize {
    if let Some(&c) = dirs[parent].dirs.iter().find(|&&c| dirs[c].name == name) {
        return c;
    }
    dirs.push(Dir {
        name: name.to_owned(),
        ..Dir::default()
    });
    let id = dirs.len() - 1;
    dirs[parent].dirs.push(id);
    id
}

fn emit(dirs: &[Dir], node: usize, depth: usize, lines: &mut Vec<String>) {
    for (name, note) in &dirs[node].files {
        lines.push(format!("{name}{note}"));
    }
    for &sub in &dirs[node].dirs {
        let mut name = dirs[sub].name.clone();
        let mut cur = sub;
        while dirs[cur].files.is_empty() && dirs[cur].dirs.len() == 1 {
            cur = dirs[cur].dirs[0];
            name.push('/');
            name.push_str(&dirs[cur].name);
        }
        lines.push(format!("{} {name}/", "#".repeat(depth + 1)));
        emit(dirs, cur, depth + 1, lines);
    }
}

/// Whether `path` contains a URL scheme (`[a-z][a-z0-9+.-]*://`, any case,
/// anywhere).
pub fn has_url_scheme(path: &str) -> bool {
    let b = path.as_bytes();
    let mut from = 0;
    while let Some(pos) = path[from..].find("://") {
        let end = from + pos;
        let mut start = end;
        while start > 0
            && (b[start - 1].is_ascii_alphanumeric() || matches!(b[start - 1], b'+' | b'.' | b'-'))
        {
            start -= 1;
        }
        if b[start..end].iter().any(u8::is_ascii_alphabetic) {
            return true;
        }
        from = end + 3;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(paths: &[(&str, &str)], expected: &str) {
        let owned: Vec<(String, String)> = paths
            .iter()
            .map(|(p, n)| ((*p).to_owned(), (*n).to_owned()))
            .collect();
        assert_eq!(format_grouped_paths(&owned), expected);
    }

    #[test]
    fn folds_single_child_chains_and_lists_files_before_subdirectories() {
        check(
            &[
                ("packages/agent/src/compaction/compaction.ts", " (Read)"),
                (
                    "packages/agent/src/compaction/prompts/file-operations.md",
                    " (Write)",
                ),
                ("packages/agent/src/compaction/utils.ts", " (RW)"),
            ],
            "# packages/agent/src/compaction/\ncompaction.ts (Read)\nutils.ts (RW)\n## prompts/\nfile-operations.md (Write)",
        );
    }

    #[test]
    fn absolute_paths_share_the_root() {
        check(
            &[("/home/u/a.ts", ""), ("/home/u/b/c.ts", "")],
            "# /home/u/\na.ts\n## b/\nc.ts",
        );
    }

    #[test]
    fn root_files_come_first_without_a_header() {
        check(
            &[("src/a.ts", ""), ("README.md", "")],
            "README.md\n# src/\na.ts",
        );
    }

    #[test]
    fn backslashes_and_urls() {
        check(
            &[("src\\win\\a.ts", ""), ("https://x.y/z", "")],
            "https://x.y/z\n# src/win/\na.ts",
        );
    }
}
