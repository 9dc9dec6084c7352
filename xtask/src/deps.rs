//! `cargo xtask deps`: the dependency direction between workspace crates.
//!
//! Reads `cargo metadata` and fails on:
//! - an edge between workspace crates outside the order session-model,
//!   context-builder, compaction, snapcompact, branch-summary, hooks,
//!   providers, runtime, cli (each may depend only on crates earlier in the
//!   list; snapcompact stands beside compaction and does not use it,
//!   branch-summary uses neither, and the runtime does not use the
//!   providers, though the tests of each may); `test-support` uses session-model only and is a
//!   dev-dependency only; `tests` and the example packages under
//!   `examples/` may depend on any of them, xtask on none, and nothing on
//!   `tests`, an example or xtask;
//! - tokio or reqwest among the normal dependencies (direct or transitive)
//!   of the five synchronous crates below hooks;
//! - openssl-sys or aws-lc-sys anywhere in the dependency graph;
//! - an import circle between the modules of a crate ([`crate::modules`]);
//! - the command line above the ceilings of [`crate::shape`] (its share of
//!   the code, its `json!` literals, the workspace crates it uses).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::process::Stdio;

use anyhow::{Context, bail};
use serde_json::Value;

use crate::cargo;

/// Workspace crates by folder under `crates/`, in dependency order.
const ORDER: &[&str] = &[
    "session-model",
    "context-builder",
    "compaction",
    "snapcompact",
    "branch-summary",
    "hooks",
    "providers",
    "runtime",
    "protocol",
    "cli",
];

/// Edges the order allows but the design forbids between the libraries;
/// a crate's tests may still use the crate (a dev-dependency), as the
/// archive's tests cut real sessions with the compaction's preparation.
const FORBIDDEN: &[(&str, &str)] = &[
    ("snapcompact", "compaction"),
    ("branch-summary", "compaction"),
    ("branch-summary", "snapcompact"),
    ("runtime", "providers"),
];

/// The crates the command line reaches only through the runtime's layer
/// (`musepi_runtime::{context, compaction, archive, branch, hooks}`); its
/// integration tests may still use them as oracles (dev-dependencies).
const BEHIND_THE_RUNTIME: &[&str] = &[
    "context-builder",
    "compaction",
    "snapcompact",
    "branch-summary",
    "hooks",
];

/// The tests' shared support: any crate may use it in its tests, so it
/// uses nothing above session-model.
const TEST_SUPPORT: &str = "test-support";

/// The synchronous crates: no runtime, no network.
const SYNC: &[&str] = &[
    "session-model",
    "context-builder",
    "compaction",
    "snapcompact",
    "branch-summary",
];
const ASYNC_ONLY: &[&str] = &["tokio", "reqwest"];
const BANNED: &[&str] = &["openssl-sys", "aws-lc-sys"];

/// A workspace package: its package id, name and role.
struct Member {
    name: String,
    /// Folder under `crates/`, or `tests` / `xtask`, or `example` for a
    /// package under `examples/`.
    role: String,
}

/// The role of every package under `examples/`.
const EXAMPLE: &str = "example";

pub(crate) fn run() -> anyhow::Result<()> {
    let meta = metadata()?;
    let mut problems = Vec::new();
    let members = members(&meta)?;
    let by_name: BTreeMap<&str, &Member> = members.values().map(|m| (m.name.as_str(), m)).collect();

    // The workspace crates the command line uses directly.
    let mut cli_uses = BTreeSet::new();
    println!("workspace edges:");
    let packages = meta["packages"].as_array().context("no packages")?;
    for pkg in packages {
        let Some(from) = pkg["id"].as_str().and_then(|id| members.get(id)) else {
            continue;
        };
        for dep in pkg["dependencies"].as_array().into_iter().flatten() {
            let Some(to) = dep["name"].as_str().and_then(|n| by_name.get(n)) else {
                continue;
            };
            if dep["path"].is_null() {
                continue;
            }
            let kind = dep["kind"].as_str().unwrap_or("normal");
            if from.role == "cli" && kind == "normal" {
                cli_uses.insert(to.role.clone());
            }
            let verdict = edge_verdict(&from.role, &to.role, kind);
            let mark = if verdict.is_ok() { "ok" } else { "FORBIDDEN" };
            println!("  {:<16} -> {:<16} ({kind}) {mark}", from.role, to.role);
            if let Err(why) = verdict {
                problems.push(format!(
                    "{} ({}) depends on {} ({}) [{kind}]: {why}",
                    from.name, from.role, to.name, to.role
                ));
            }
        }
    }

    let graph = Graph::new(&meta)?;
    println!("synchronous crates (no tokio, no reqwest in normal dependencies):");
    for (id, m) in &members {
        if !SYNC.contains(&m.role.as_str()) {
            continue;
        }
        match graph.find_normal(id, ASYNC_ONLY) {
            Some(path) => {
                println!("  {:<16} FORBIDDEN", m.role);
                problems.push(format!(
                    "{} must stay synchronous but reaches {} through normal dependencies: {}",
                    m.name,
                    path.last().map_or("?", String::as_str),
                    path.join(" -> ")
                ));
            }
            None => println!("  {:<16} ok", m.role),
        }
    }
    println!("banned native crates ({}):", BANNED.join(", "));
    let mut any_banned = false;
    for (id, m) in &members {
        if let Some(path) = graph.find_any(id, BANNED) {
            any_banned = true;
            problems.push(format!(
                "{} depends on {}: {}",
                m.name,
                path.last().map_or("?", String::as_str),
                path.join(" -> ")
            ));
        }
    }
    println!("  {}", if any_banned { "FOUND" } else { "none" });
    if let Err(e) = crate::shape::measure(&crate::root(), cli_uses.len()).check() {
        problems.push(e.to_string());
    }
    if let Err(e) = crate::engines::check(&crate::root()) {
        problems.push(e.to_string());
    }
    if let Err(e) = crate::modules::check(&crate::root()) {
        problems.push(format!("{e}: two modules of a crate that import each other (listed above) are one job split in two, or share a piece that belongs lower"));
    }

    if problems.is_empty() {
        println!("deps: ok");
        Ok(())
    } else {
        for p in &problems {
            eprintln!("deps: {p}");
        }
        bail!("{} dependency problem(s)", problems.len())
    }
}

/// Whether `from` may depend on `to` with a dependency of `kind`
/// (`normal`, `dev` or `build`).
fn edge_verdict(from: &str, to: &str, kind: &str) -> Result<(), String> {
    if to == "tests" || to == "xtask" || to == EXAMPLE {
        return Err(format!("nothing may depend on `{to}`"));
    }
    if from == "xtask" {
        return Err("xtask depends on no workspace crate, so it builds in seconds".into());
    }
    if from == "tests" || from == EXAMPLE {
        return Ok(());
    }
    if from == TEST_SUPPORT {
        return if to == "session-model" && kind != "dev" {
            Ok(())
        } else {
            Err(format!(
                "`{TEST_SUPPORT}` uses session-model only, so every crate can use it in its tests"
            ))
        };
    }
    if to == TEST_SUPPORT {
        return if kind == "dev" {
            Ok(())
        } else {
            Err(format!("`{TEST_SUPPORT}` is a dev-dependency only"))
        };
    }
    let rank = |r: &str| ORDER.iter().position(|o| *o == r);
    let (Some(f), Some(t)) = (rank(from), rank(to)) else {
        return Err(format!(
            "`{from}` or `{to}` is not in the crate order ({}); add it to xtask/src/deps.rs and ARCHITECTURE.md",
            ORDER.join(", ")
        ));
    };
    if t >= f {
        return Err(format!(
            "`{from}` may depend only on crates before it in the order {}",
            ORDER.join(" < ")
        ));
    }
    if from == "cli" && kind != "dev" && BEHIND_THE_RUNTIME.contains(&to) {
        return Err(format!(
            "the command line reaches `{to}` through musepi-runtime's layer, not directly"
        ));
    }
    if kind != "dev" && FORBIDDEN.contains(&(from, to)) {
        return Err(format!("`{from}` must not depend on `{to}`"));
    }
    Ok(())
}

fn metadata() -> anyhow::Result<Value> {
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--locked"])
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata exited with {}", output.status);
    }
    serde_json::from_slice(&output.stdout).context("cargo metadata printed invalid JSON")
}

/// Workspace members by package id.
fn members(meta: &Value) -> anyhow::Result<BTreeMap<String, Member>> {
    let ids: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .context("no workspace_members")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut out = BTreeMap::new();
    for pkg in meta["packages"].as_array().into_iter().flatten() {
        let Some(id) = pkg["id"].as_str().filter(|id| ids.contains(id)) else {
            continue;
        };
        let manifest = pkg["manifest_path"].as_str().unwrap_or_default();
        let folder = std::path::Path::new(manifest).parent();
        let in_examples = folder
            .and_then(|d| d.parent())
            .and_then(|d| d.file_name())
            .is_some_and(|d| d == "examples");
        let dir = if in_examples {
            EXAMPLE.to_owned()
        } else {
            folder
                .and_then(|d| d.file_name())
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        out.insert(
            id.to_owned(),
            Member {
                name: pkg["name"].as_str().unwrap_or_default().to_owned(),
                role: dir,
            },
        );
    }
    Ok(out)
}

/// The resolved dependency graph.
struct Graph {
    names: BTreeMap<String, String>,
    /// Package id -> (dependency id, whether any of its kinds is normal).
    deps: BTreeMap<String, Vec<(String, bool)>>,
}

impl Graph {
    fn new(meta: &Value) -> anyhow::Result<Self> {
        let mut names = BTreeMap::new();
        for pkg in meta["packages"].as_array().into_iter().flatten() {
            if let (Some(id), Some(name)) = (pkg["id"].as_str(), pkg["name"].as_str()) {
                names.insert(id.to_owned(), name.to_owned());
            }
        }
        let mut deps = BTreeMap::new();
        let nodes = meta["resolve"]["nodes"]
            .as_array()
            .context("cargo metadata has no resolve graph")?;
        for node in nodes {
            let Some(id) = node["id"].as_str() else {
                continue;
            };
            let list = node["deps"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| {
                    let pkg = d["pkg"].as_str()?.to_owned();
                    let normal = d["dep_kinds"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|k| k["kind"].is_null());
                    Some((pkg, normal))
                })
                .collect();
            deps.insert(id.to_owned(), list);
        }
        Ok(Self { names, deps })
    }

    fn name(&self, id: &str) -> String {
        self.names.get(id).cloned().unwrap_or_else(|| id.to_owned())
    }

    /// The path to the first package named in `targets` reachable from
    /// `start` through normal dependencies only.
    fn find_normal(&self, start: &str, targets: &[&str]) -> Option<Vec<String>> {
        self.search(start, targets, true)
    }

    /// The path to the first package named in `targets` reachable through
    /// dependencies of any kind.
    fn find_any(&self, start: &str, targets: &[&str]) -> Option<Vec<String>> {
        self.search(start, targets, false)
    }

    fn search(&self, start: &str, targets: &[&str], normal_only: bool) -> Option<Vec<String>> {
        let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        let mut seen = BTreeSet::from([start]);
        while let Some(cur) = queue.pop_front() {
            if cur != start && targets.contains(&self.name(cur).as_str()) {
                let mut path = vec![self.name(cur)];
                let mut at = cur;
                while let Some(p) = prev.get(at) {
                    path.push(self.name(p));
                    at = p;
                }
                path.reverse();
                return Some(path);
            }
            for (dep, normal) in self.deps.get(cur).into_iter().flatten() {
                if (normal_only && !normal) || !seen.insert(dep.as_str()) {
                    continue;
                }
                prev.insert(dep.as_str(), cur);
                queue.push_back(dep.as_str());
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::edge_verdict;

    fn ok(from: &str, to: &str) -> bool {
        edge_verdict(from, to, "normal").is_ok()
    }

    #[test]
    fn the_order_allows_only_earlier_crates() {
        assert!(ok("cli", "session-model"));
        assert!(ok("compaction", "context-builder"));
        assert!(ok("runtime", "hooks"));
        assert!(ok("cli", "runtime"));
        assert!(ok("providers", "hooks"));
        assert!(!ok("session-model", "context-builder"));
        assert!(!ok("compaction", "compaction"));
        assert!(!ok("hooks", "runtime"));
        assert!(!ok("providers", "cli"));
    }

    #[test]
    fn the_command_line_reaches_the_engines_through_the_runtime() {
        for engine in [
            "context-builder",
            "compaction",
            "snapcompact",
            "branch-summary",
            "hooks",
        ] {
            assert!(!ok("cli", engine), "{engine}");
            assert!(edge_verdict("cli", engine, "dev").is_ok(), "{engine}");
        }
        assert!(ok("cli", "runtime"));
        assert!(ok("cli", "providers"));
    }

    #[test]
    fn branch_summary_does_not_need_compaction() {
        assert!(ok("branch-summary", "context-builder"));
        assert!(!ok("branch-summary", "compaction"));
        assert!(!ok("branch-summary", "snapcompact"));
    }

    #[test]
    fn snapcompact_stands_beside_compaction_and_the_runtime_knows_no_wire() {
        assert!(ok("snapcompact", "context-builder"));
        assert!(!ok("snapcompact", "compaction"));
        assert!(!ok("runtime", "providers"));
        // Its tests cut real sessions as a compaction does.
        assert!(edge_verdict("snapcompact", "compaction", "dev").is_ok());
    }

    #[test]
    fn test_support_is_a_dev_dependency_on_session_model_only() {
        assert!(edge_verdict("compaction", "test-support", "dev").is_ok());
        assert!(edge_verdict("cli", "test-support", "dev").is_ok());
        assert!(edge_verdict("compaction", "test-support", "normal").is_err());
        assert!(edge_verdict("test-support", "session-model", "normal").is_ok());
        assert!(edge_verdict("test-support", "compaction", "normal").is_err());
    }

    #[test]
    fn tests_and_examples_may_use_anything_and_xtask_nothing() {
        assert!(ok("tests", "cli"));
        assert!(ok("example", "cli"));
        assert!(ok("example", "hooks"));
        assert!(!ok("cli", "example"));
        assert!(!ok("tests", "example"));
        assert!(!ok("xtask", "session-model"));
        assert!(!ok("cli", "tests"));
        assert!(!ok("newcrate", "session-model"));
    }

    /// The check itself, over this workspace: plain `cargo test` keeps the
    /// dependency order, not only `cargo xtask check`.
    #[test]
    fn the_workspace_keeps_the_dependency_order() {
        if let Err(e) = super::run() {
            panic!("cargo xtask deps: {e:#}");
        }
    }
}
