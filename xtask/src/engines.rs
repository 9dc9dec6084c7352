//! snapcompact's two engines stay apart, as part of `cargo xtask deps`:
//! the text archive (`crates/snapcompact/src/text/`) names nothing of the
//! PNG printer (`crate::png`) and the printer nothing of it
//! (`crate::text`), in code outside tests; what both need lives at the
//! crate's root.

use std::fs;
use std::path::Path;

use anyhow::bail;

/// The engines' folders, each with the path the other must not name.
const APART: [(&str, &str); 2] = [("text", "crate::png"), ("png", "crate::text")];

/// Lines of `text`'s code (comments and test items left out) that name
/// `other`, as `(line number, line)`.
fn crossings<'t>(text: &'t str, other: &str) -> Vec<(usize, &'t str)> {
    crate::tidy::non_test_code(text)
        .into_iter()
        .filter(|(_, l)| !l.trim_start().starts_with("//") && l.contains(other))
        .collect()
}

/// Prints each crossing; an error when there is any.
pub(crate) fn check(root: &Path) -> anyhow::Result<()> {
    let src = root.join("crates/snapcompact/src");
    let mut found = Vec::new();
    for (engine, other) in APART {
        let mut files = Vec::new();
        crate::tidy::rs_files(&src.join(engine), &mut files);
        for file in files {
            let text = fs::read_to_string(&file).unwrap_or_default();
            for (n, line) in crossings(&text, other) {
                let shown = file.strip_prefix(root).unwrap_or(&file).display();
                found.push(format!("{shown}:{n}: {}", line.trim()));
            }
        }
    }
    if found.is_empty() {
        println!("snapcompact: the text archive and the PNG printer name nothing of each other");
        return Ok(());
    }
    for f in &found {
        println!("  {f}");
    }
    bail!(
        "{} line(s) where one of snapcompact's engines names the other; move what both need to the crate's root",
        found.len()
    )
}

#[cfg(test)]
mod tests {
    use super::crossings;

    #[test]
    fn code_naming_the_other_engine_is_found_and_docs_and_tests_are_not() {
        let text = "//! see [`crate::png`]\nuse crate::png::Frame;\nfn a() {}\n#[cfg(test)]\nmod tests { use crate::png::X; }\n";
        let found = crossings(text, "crate::png");
        assert_eq!(found, [(2, "use crate::png::Frame;")]);
    }

    #[test]
    fn the_engines_in_the_tree_are_apart() {
        assert!(super::check(&crate::root()).is_ok());
    }
}
