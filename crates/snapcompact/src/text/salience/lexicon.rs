//! The words the archive reads text by: what states a constraint, a
//! decision or trouble, what is filler, what counts steps rather than
//! values, which programs start a command line, and what opens a
//! declaration in code; and a way to find words and phrases in a text
//! with one look-up per word.

use rustc_hash::FxHashMap;
use std::sync::LazyLock;

/// Words that state a constraint or a preference.
pub(crate) const CONSTRAINT_WORDS: &[&str] = &[
    "must",
    "mustn't",
    "never",
    "always",
    "don't",
    "dont",
    "do not",
    "should",
    "shouldn't",
    "cannot",
    "can't",
    "required",
    "requires",
    "require",
    "requirement",
    "avoid",
    "make sure",
    "ensure",
    "prefer",
    "keep",
    "no more than",
    "at most",
    "at least",
    "only",
    "has to",
    "have to",
    "need to",
    "needs to",
    "frozen",
    "freeze",
    "off limits",
    "not allowed",
    "forbidden",
    "under no circumstances",
];

/// Words that state a decision or a cause.
pub(crate) const DECISION_WORDS: &[&str] = &[
    "decided",
    "decide",
    "decision",
    "chose",
    "chosen",
    "choose",
    "going with",
    "we'll",
    "i'll use",
    "let's use",
    "let's switch",
    "plan is",
    "because",
    "root cause",
    "the fix",
    "the problem",
    "the issue",
    "turns out",
    "caused by",
    "so that",
    "conclusion",
    "instead",
    "rather than",
    "settled",
    "opted",
    "picked",
    "switch",
    "switched",
    "switching",
    "replace",
    "replaced",
    "replacing",
    "drop",
    "dropped",
    "dropping",
    "rename",
    "renamed",
    "migrate",
    "migrated",
    "adopt",
    "adopted",
    "set",
    "agree",
    "agreed",
    "resolution",
    "resolved",
    "select",
    "selected",
    "outcome",
    "verdict",
    "approved",
    "accepted",
    "move",
    "moved",
    "moving",
    "migration",
    "prefer",
    "preferred",
    "favour",
    "favor",
    "standardise",
    "standardize",
    "standardised",
    "standardized",
    "standardising",
    "standardizing",
];

/// Stems of words that report trouble.
pub(crate) const TROUBLE_STEMS: &[&str] = &[
    "error",
    "panic",
    "fail",
    "exception",
    "crash",
    "bug",
    "broke",
    "regress",
    "timeout",
    "flak",
    "abort",
    "throw",
    "threw",
    "hang",
    "hung",
    "refus",
    "deadlock",
    "leak",
    "died",
    "segfault",
    "corrupt",
    "mismatch",
    "denied",
];

/// Openings of filler sentences that carry no fact by themselves.
pub(crate) const FILLER_OPENINGS: &[&str] = &[
    "let me",
    "now let me",
    "let's",
    "now i",
    "now,",
    "perfect",
    "great",
    "good",
    "okay",
    "ok,",
    "alright",
    "excellent",
    "done",
    "i'll",
    "i will",
    "first,",
    "next,",
];

/// Words in front of a number that make it a count of steps, lines or
/// pages rather than a value.
pub(crate) const COUNTERS: &[&str] = &[
    "step", "steps", "turn", "line", "lines", "page", "part", "phase", "item", "round", "#",
];

/// Programs that start a command line.
pub(crate) const PROGRAMS: &[&str] = &[
    "cargo",
    "rustup",
    "rustc",
    "npm",
    "npx",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "node",
    "tsc",
    "jest",
    "vitest",
    "eslint",
    "git",
    "gh",
    "go",
    "make",
    "cmake",
    "python",
    "python3",
    "pip",
    "uv",
    "pytest",
    "ruff",
    "docker",
    "kubectl",
    "helm",
    "terraform",
    "bazel",
    "gradle",
    "mvn",
    "dotnet",
    "psql",
    "mysql",
    "sqlite3",
    "curl",
    "wget",
    "rg",
    "grep",
    "sed",
    "awk",
    "find",
    "ls",
    "cd",
    "cat",
    "bash",
    "sh",
    "just",
    "ssh",
    "rsync",
    "systemctl",
    "brew",
    "apt",
    "apt-get",
    "bundle",
    "rake",
    "mix",
];

/// The words of a lowercase text (letters, digits and apostrophes), for
/// finding words and phrases without scanning the text once per word.
pub(crate) struct Words<'t>(Vec<&'t str>);

impl<'t> Words<'t> {
    pub(crate) fn new(lower: &'t str) -> Self {
        Self(
            lower
                .split(|c: char| !(c.is_alphanumeric() || c == '\''))
                .filter(|w| !w.is_empty())
                .collect(),
        )
    }

    /// Whether any of `phrases` occurs: one look-up per word.
    pub(crate) fn any(&self, phrases: &Phrases) -> bool {
        let words = &self.0;
        words.iter().enumerate().any(|(i, w)| {
            phrases.by_first.get(w).is_some_and(|rests| {
                rests.iter().any(|rest| {
                    rest.iter()
                        .enumerate()
                        .all(|(k, r)| words.get(i + 1 + k) == Some(r))
                })
            })
        })
    }

    /// Whether a word starts with any of `stems`.
    pub(crate) fn any_stem(&self, stems: &[&str]) -> bool {
        self.0
            .iter()
            .any(|w| stems.iter().any(|s| w.starts_with(s)))
    }
}

/// A list of words and phrases by their first word.
pub(crate) struct Phrases {
    by_first: FxHashMap<&'static str, Vec<Vec<&'static str>>>,
}

impl Phrases {
    fn new(list: &[&'static str]) -> Self {
        let mut by_first: FxHashMap<&'static str, Vec<Vec<&'static str>>> = FxHashMap::default();
        for phrase in list {
            let mut parts = phrase.split(' ');
            if let Some(first) = parts.next() {
                by_first.entry(first).or_default().push(parts.collect());
            }
        }
        Self { by_first }
    }
}

/// Words that state a decision or a rule by themselves, whatever they
/// are about: what follows them is what was chosen or ruled.
pub(crate) const FIRM_WORDS: &[&str] = &[
    "decided",
    "decision",
    "chose",
    "chosen",
    "going with",
    "settled",
    "opted",
    "plan is",
    "instead of",
    "rather than",
    "switch to",
    "switched to",
    "replacing",
    "replaced by",
    "in favour of",
    "in favor of",
    "agreed to",
    "agreed on",
    "resolution",
    "verdict",
    "from now on",
    "going forward",
    "we will use",
    "we'll use",
    "move to",
    "moving to",
    "moved to",
    "migrate to",
    "migrating to",
    "standardise on",
    "standardize on",
    "standardising on",
    "standardizing on",
    "must",
    "must not",
    "mustn't",
    "never",
    "do not",
    "don't",
    "under no circumstances",
    "not allowed",
    "forbidden",
    "off limits",
    "required",
];

pub(crate) static CONSTRAINTS: LazyLock<Phrases> = LazyLock::new(|| Phrases::new(CONSTRAINT_WORDS));
pub(crate) static DECISIONS: LazyLock<Phrases> = LazyLock::new(|| Phrases::new(DECISION_WORDS));
pub(crate) static FIRM: LazyLock<Phrases> = LazyLock::new(|| Phrases::new(FIRM_WORDS));
/// Words that report a failure wherever they stand in a line of output; a
/// bare "error" is too common in code and prose, so it counts only as
/// `error:`, `error[` or `error TS…`.
pub(crate) static FAILURE: LazyLock<Phrases> = LazyLock::new(|| {
    Phrases::new(&[
        "panic",
        "panicked",
        "failed",
        "fail",
        "exception",
        "traceback",
        "fatal",
        "segmentation fault",
    ])
});

/// Words that open a declaration in code.
pub(crate) const DECLARATIONS: &[&str] = &[
    "let", "const", "var", "val", "static", "final", "pub", "export", "int", "auto", "def", "local",
];
