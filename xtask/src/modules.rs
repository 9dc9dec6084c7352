//! Import circles between the modules of a crate, as part of `cargo xtask
//! deps`.
//!
//! Within each crate root (a library's `src/`, each binary under
//! `src/bin/`), a module depends on another when its code names it by a
//! path (`crate::a::b`, `super::c`, in a `use` or inline, braces
//! expanded); a module's own ancestors and descendants do not count, nor
//! do comments or items marked `#[cfg(test)]`. Any circle
//! of such dependencies fails the step, listing its modules and one place
//! each edge is made: two modules that need each other are one job split
//! in two, or a shared piece that belongs lower.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::bail;

/// The folders whose packages are checked.
const PACKAGE_FOLDERS: [&str; 3] = ["crates", "xtask", "tests"];

/// Fails when a module circle exists in any crate of the workspace.
pub(crate) fn check(root: &Path) -> anyhow::Result<()> {
    let mut circles = Vec::new();
    let mut roots = 0;
    for src in crate_roots(root) {
        roots += 1;
        let graph = Graph::read(&src);
        for circle in graph.circles() {
            let name = src.strip_prefix(root).unwrap_or(&src).display().to_string();
            let mut text = format!("{name}: modules {} import each other:", circle.join(", "));
            let members: BTreeSet<&String> = circle.iter().collect();
            for from in &circle {
                for (to, place) in &graph.edges[from] {
                    if members.contains(to) {
                        let _ = write!(text, "\n  {from} -> {to} ({place})");
                    }
                }
            }
            circles.push(text);
        }
    }
    if !circles.is_empty() {
        for c in &circles {
            eprintln!("{c}");
        }
        bail!("{} module circle(s)", circles.len());
    }
    println!("modules: no import circle in {roots} crate roots");
    Ok(())
}

/// Each crate root: `PKG/src` (its binaries left out) and every binary
/// folder or file under `PKG/src/bin`.
fn crate_roots(root: &Path) -> Vec<PathBuf> {
    let mut packages = Vec::new();
    for folder in PACKAGE_FOLDERS {
        let dir = root.join(folder);
        if dir.join("src").is_dir() {
            packages.push(dir);
        } else if let Ok(list) = fs::read_dir(&dir) {
            let mut found: Vec<PathBuf> = list
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join("src").is_dir())
                .collect();
            found.sort();
            packages.extend(found);
        }
    }
    let mut roots = Vec::new();
    for package in packages {
        let src = package.join("src");
        roots.push(src.clone());
        if let Ok(list) = fs::read_dir(src.join("bin")) {
            let mut bins: Vec<PathBuf> = list
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            bins.sort();
            roots.extend(bins);
        }
    }
    roots
}

/// The modules of one crate root and what each names.
struct Graph {
    /// Module path (`a::b`, `""` for the root) to the modules it names,
    /// each with the first place (`file:line`) it does.
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    fn read(src: &Path) -> Self {
        let mut files = Vec::new();
        collect_rs(src, src, &mut files);
        let modules: BTreeMap<String, PathBuf> =
            files.into_iter().map(|f| (module_of(src, &f), f)).collect();
        let mut edges = BTreeMap::new();
        for (module, file) in &modules {
            let mut named = BTreeMap::new();
            let text = fs::read_to_string(file).unwrap_or_default();
            for (line_no, line) in code_lines(&text) {
                for path in paths_in(line) {
                    let Some(target) = resolve(module, &path, &modules) else {
                        continue;
                    };
                    let related = target == *module
                        || is_within(module, &target)
                        || is_within(&target, module);
                    if !related {
                        let place = format!("{}:{line_no}", file.display());
                        named.entry(target).or_insert(place);
                    }
                }
            }
            edges.insert(module.clone(), named);
        }
        Self { edges }
    }

    /// The circles: every group of two or more modules that reach each
    /// other (Tarjan's strongly connected components), each sorted.
    fn circles(&self) -> Vec<Vec<String>> {
        let names: Vec<&String> = self.edges.keys().collect();
        let index_of: BTreeMap<&String, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let next: Vec<Vec<usize>> = names
            .iter()
            .map(|n| {
                self.edges[*n]
                    .keys()
                    .filter_map(|t| index_of.get(t).copied())
                    .collect()
            })
            .collect();
        let mut t = Tarjan {
            next: &next,
            index: vec![None; names.len()],
            low: vec![0; names.len()],
            stack: Vec::new(),
            on_stack: vec![false; names.len()],
            count: 0,
            found: Vec::new(),
        };
        for v in 0..names.len() {
            if t.index[v].is_none() {
                t.visit(v);
            }
        }
        let mut circles: Vec<Vec<String>> = t
            .found
            .into_iter()
            .map(|c| {
                let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
                c.sort();
                c
            })
            .collect();
        circles.sort();
        circles
    }
}

struct Tarjan<'a> {
    next: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    count: usize,
    found: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.count);
        self.low[v] = self.count;
        self.count += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.next[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                self.found.push(component);
            }
        }
    }
}

/// The `.rs` files under `dir`, the `bin` folder of the crate root left out.
fn collect_rs(src: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(list) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = list.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if dir == src && path.file_name().is_some_and(|n| n == "bin") {
                continue;
            }
            collect_rs(src, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs`, `main.rs` and
/// `mod.rs` at the root are `""`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|l| matches!(l.as_str(), "mod" | "lib" | "main"))
    {
        parts.pop();
    }
    parts.join("::")
}

/// Whether `inner` is a module inside `outer` (the root holds every one).
fn is_within(inner: &str, outer: &str) -> bool {
    outer.is_empty() || inner.starts_with(&format!("{outer}::"))
}

/// The lines of code of `text` (1-based numbers), outside items marked
/// `#[cfg(test)]` ([`crate::tidy::non_test_code`]), comments left out.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    crate::tidy::non_test_code(text)
        .into_iter()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i, l.find("//").map_or(l, |at| &l[..at])))
}

/// The paths a line names from `crate::` or `super::` (braces expanded,
/// one level of nesting per brace), each as its segments with its start:
/// `crate::a::{b, c::d}` gives `crate a b` and `crate a c d`.
fn paths_in(line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = line[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let before = line[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let head = start.trim_end_matches(':').to_owned();
            expand(&line[from..], vec![head], &mut out);
        }
    }
    out
}

/// Reads a path tree at the start of `rest` after `prefix` into `out`.
fn expand(rest: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    let mut rest = rest;
    loop {
        if let Some(inner) = rest.strip_prefix('{') {
            let end = matching_brace(inner);
            for part in split_top(&inner[..end]) {
                expand(part.trim(), path.clone(), out);
            }
            return;
        }
        if let Some(after) = rest.strip_prefix("super::") {
            path.push("super".to_owned());
            rest = after;
            continue;
        }
        let word: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if word.is_empty() {
            break;
        }
        rest = &rest[word.len()..];
        path.push(word);
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    out.push(path);
}

/// The position of the `}` that closes a group whose `{` came just before.
fn matching_brace(text: &str) -> usize {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    text.len()
}

/// `a, b::{c, d}, e` split at its top-level commas.
fn split_top(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The module `path` (as [`paths_in`] gives it) names, seen from
/// `module`: the longest prefix of it that is a module.
fn resolve(module: &str, path: &[String], modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let mut base: Vec<&str> = if path.first().is_some_and(|p| p == "crate") {
        Vec::new()
    } else {
        module.split("::").filter(|s| !s.is_empty()).collect()
    };
    let mut rest = &path[1..];
    if path.first().is_some_and(|p| p == "super") {
        base.pop();
        while rest.first().is_some_and(|p| p == "super") {
            base.pop();
            rest = &rest[1..];
        }
    }
    let mut best = None;
    for k in 0..=rest.len() {
        let mut parts = base.clone();
        parts.extend(rest[..k].iter().map(String::as_str));
        let name = parts.join("::");
        if modules.contains_key(&name) {
            best = Some(name);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_read_with_their_braces_expanded() {
        let got = paths_in("use crate::a::{b, c::{d, e}}; let x = super::f::g(crate::h);");
        let got: Vec<String> = got.iter().map(|p| p.join("::")).collect();
        assert_eq!(
            got,
            [
                "crate::a::b",
                "crate::a::c::d",
                "crate::a::c::e",
                "crate::h",
                "super::f::g"
            ]
        );
        assert!(paths_in("musepi_x::crate::y").is_empty(), "not ours");
    }

    fn graph(files: &[(&str, &str)]) -> Graph {
        let dir = tempfile_dir();
        for (name, text) in files {
            let path = dir.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        let g = Graph::read(&dir);
        let _ = fs::remove_dir_all(&dir);
        g
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "xtask-modules-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_circle_is_found_and_a_parent_child_pair_is_not_one() {
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\nuse crate::a::X;\n"),
            ("a.rs", "use crate::b::Y;\n"),
            ("b/mod.rs", "use super::c::Z;\nmod inner;\n"),
            ("b/inner.rs", "use super::super::a::X; // crate::c\n"),
            (
                "c.rs",
                "// crate::a in a comment\nfn f() { crate::a::g(); }\n",
            ),
        ]);
        let expected: Vec<Vec<String>> = vec![vec!["a".into(), "b".into(), "c".into()]];
        assert_eq!(g.circles(), expected);
        assert!(
            g.edges["b::inner"].contains_key("a"),
            "super::super resolves"
        );
        assert!(
            !g.edges[""].contains_key("a"),
            "the root holds every module"
        );
        let tests_only = graph(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::Y;\n"),
            ("b.rs", "#[cfg(test)]\nmod tests { use crate::a::X; }\n"),
        ]);
        assert!(tests_only.circles().is_empty());
    }
}
