//! Repeated code, as part of `cargo xtask deps`: the places in the
//! crates' code (tests left out) where six or more code lines stand again,
//! to the letter, somewhere else. A line is compared with its white space
//! folded; blank lines, comments, lines of lone punctuation and `use`
//! lines are passed over, as they say nothing of their own. A run that
//! stands in more than [`MOST_PLACES`] places is a pattern of the language
//! (a list of derives, a builder's setters), not a piece of logic written
//! twice, and is not counted.
//!
//! The count has a ceiling in [`crate::shape`] that only goes down: a
//! change that writes a piece of logic again fails until the two places
//! share one.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// How many lines make a repeat.
pub(crate) const MIN_LINES: usize = 6;
/// A run found in more places than this is too common to be a repeat.
const MOST_PLACES: usize = 8;

/// One place of a repeat: a file and the lines (1-based, inclusive) the
/// run covers there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    pub file: PathBuf,
    pub first: usize,
    pub last: usize,
}

/// Two places that share a run of at least [`MIN_LINES`] code lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pair {
    pub a: Place,
    pub b: Place,
    pub lines: usize,
}

impl std::fmt::Display for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}-{} ~ {}:{}-{} ({} lines)",
            self.a.file.display(),
            self.a.first,
            self.a.last,
            self.b.file.display(),
            self.b.first,
            self.b.last,
            self.lines
        )
    }
}

/// A file's code lines that count: (1-based line number, folded text).
fn counted_lines(text: &str) -> Vec<(usize, String)> {
    crate::tidy::non_test_code(text)
        .into_iter()
        .filter_map(|(i, line)| {
            let folded = line.split_whitespace().collect::<Vec<_>>().join(" ");
            let says_something = !folded.is_empty()
                && !folded.starts_with("//")
                && !folded.starts_with("use ")
                && !folded.starts_with("pub use ")
                && !folded.starts_with("pub(crate) use ")
                && !folded.chars().all(|c| "{}()[];,".contains(c));
            says_something.then_some((i, folded))
        })
        .collect()
}

/// The repeats among `files` (each a path and its text), in a stable
/// order: by the first place's file and line.
pub(crate) fn find(files: &[(PathBuf, String)]) -> Vec<Pair> {
    let lines: Vec<Vec<(usize, String)>> = files.iter().map(|(_, t)| counted_lines(t)).collect();
    // Every window of MIN_LINES lines, by its text.
    let mut by_text: HashMap<Vec<&str>, Vec<(usize, usize)>> = HashMap::new();
    for (f, file) in lines.iter().enumerate() {
        for start in 0..file.len().saturating_sub(MIN_LINES - 1) {
            let key: Vec<&str> = file[start..start + MIN_LINES]
                .iter()
                .map(|(_, l)| l.as_str())
                .collect();
            by_text.entry(key).or_default().push((f, start));
        }
    }
    let same = |(f1, s1): (usize, usize), (f2, s2): (usize, usize)| {
        lines[f1].get(s1).map(|(_, l)| l) == lines[f2].get(s2).map(|(_, l)| l)
    };
    let mut pairs = Vec::new();
    for places in by_text.values() {
        if places.len() < 2 || places.len() > MOST_PLACES {
            continue;
        }
        for (k, &a) in places.iter().enumerate() {
            for &b in &places[k + 1..] {
                // Counted once, where the run starts: a pair whose lines
                // before also match belongs to a longer run.
                if a.1 > 0 && b.1 > 0 && same((a.0, a.1 - 1), (b.0, b.1 - 1)) {
                    continue;
                }
                let mut len = MIN_LINES;
                while same((a.0, a.1 + len), (b.0, b.1 + len))
                    && lines[a.0].get(a.1 + len).is_some()
                {
                    len += 1;
                }
                // A run that overlaps itself (the same lines said over
                // and over in one place) is not two places.
                if a.0 == b.0 && a.1.abs_diff(b.1) < len {
                    continue;
                }
                let place = |(f, s): (usize, usize)| Place {
                    file: files[f].0.clone(),
                    first: lines[f][s].0,
                    last: lines[f][s + len - 1].0,
                };
                pairs.push(Pair {
                    a: place(a),
                    b: place(b),
                    lines: len,
                });
            }
        }
    }
    pairs.sort_by(|x, y| {
        (&x.a.file, x.a.first, &x.b.file, x.b.first)
            .cmp(&(&y.a.file, y.a.first, &y.b.file, y.b.first))
    });
    pairs
}

/// The repeats in the code of every crate under `root/crates`, paths
/// relative to `root`.
pub(crate) fn measure(root: &Path) -> Vec<Pair> {
    let mut paths = Vec::new();
    let crates = root.join("crates");
    let mut names: Vec<_> = fs::read_dir(&crates)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path().join("src"))
        .collect();
    names.sort();
    for src in names {
        crate::tidy::rs_files(&src, &mut paths);
    }
    let files: Vec<(PathBuf, String)> = paths
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(&p).unwrap_or_default();
            (
                p.strip_prefix(root).map(Path::to_path_buf).unwrap_or(p),
                text,
            )
        })
        .collect();
    find(&files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> (PathBuf, String) {
        (PathBuf::from(name), text.to_owned())
    }

    const BODY: &str = "let a = read(x);\nlet b = a + 1;\nif b > 2 {\n    write(b);\n}\nlet c = b * 2;\nsend(c);\n";

    #[test]
    fn six_lines_said_again_elsewhere_are_one_pair_spanning_the_whole_run() {
        let one = format!("fn one() {{\n{BODY}}}\n");
        let two = format!(
            "// two\nfn two() {{\n    {}\n}}\n",
            BODY.replace('\n', "\n    ")
        );
        let pairs = find(&[file("a.rs", &one), file("b.rs", &two)]);
        assert_eq!(pairs.len(), 1, "{pairs:?}");
        let pair = &pairs[0];
        // `}` alone is passed over, so the run is the six other lines.
        assert_eq!(pair.lines, 6);
        assert_eq!((pair.a.first, pair.a.last), (2, 8));
        assert_eq!((pair.b.first, pair.b.last), (3, 9));
    }

    #[test]
    fn five_lines_comments_imports_and_tests_are_not_repeats() {
        let five = "let a = read(x);\nlet b = a + 1;\nif b > 2 {\nwrite(b);\nsend(c);\n";
        assert!(find(&[file("a.rs", five), file("b.rs", five)]).is_empty());
        // Six lines, but one of them a comment and one an import.
        let padded = "let a = read(x);\n// say\nuse x::y;\nlet b = a + 1;\nif b > 2 {\nwrite(b);\nsend(c);\n";
        assert!(find(&[file("a.rs", padded), file("b.rs", padded)]).is_empty());
        let in_tests = format!("#[cfg(test)]\nmod tests {{\n{BODY}}}\n");
        assert!(find(&[file("a.rs", BODY), file("b.rs", &in_tests)]).is_empty());
    }

    #[test]
    fn a_run_found_in_many_places_is_a_pattern_not_a_repeat() {
        let many: Vec<_> = (0..=MOST_PLACES)
            .map(|k| file(&format!("f{k}.rs"), BODY))
            .collect();
        assert!(find(&many).is_empty());
        let few: Vec<_> = (0..3).map(|k| file(&format!("f{k}.rs"), BODY)).collect();
        assert_eq!(find(&few).len(), 3, "every two of three places");
    }

    #[test]
    fn the_same_line_said_over_and_over_in_one_place_is_no_pair() {
        let same = "push(1);\n".repeat(8);
        assert!(find(&[file("a.rs", &same)]).is_empty());
    }
}
