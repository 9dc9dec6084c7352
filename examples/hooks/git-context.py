#!/usr/bin/env python3
"""A session.compacting hook: tell the summarizer what git says.

Reads the event from stdin and answers with `context` lines (they become
bullets of the summary request's <additional-context> block): the branch,
the last commit, and the files with uncommitted changes. Outside a git
repository, or when git fails, it answers nothing and the compaction goes
on unchanged. It never cancels anything.

Settings:
  {"hooks": {"session.compacting": [
    {"command": ["python3", "examples/hooks/git-context.py"], "timeoutMs": 5000}
  ]}}
Try it: musepi hooks test session.compacting
"""

import json
import subprocess
import sys

MAX_FILES = 20


def git(*args):
    """Runs git in the working directory; None when it fails."""
    try:
        done = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=3, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def context_lines():
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    if branch is None:
        return []
    lines = [f"git branch: {branch.strip()}"]
    last = git("log", "-1", "--format=%h %s")
    if last and last.strip():
        lines.append(f"last commit: {last.strip()}")
    status = git("status", "--porcelain=v1", "--untracked-files=normal")
    changed = [l for l in (status or "").splitlines() if l.strip()]
    if not changed:
        lines.append("working tree: clean")
    for entry in changed[:MAX_FILES]:
        code, path = entry[:2].strip() or "?", entry[3:]
        lines.append(f"uncommitted ({code}): {path}")
    if len(changed) > MAX_FILES:
        lines.append(f"... and {len(changed) - MAX_FILES} more uncommitted files")
    return lines


def main():
    event = json.load(sys.stdin)
    if event.get("type") != "session.compacting":
        print(f"git-context: ignoring {event.get('type')}", file=sys.stderr)
        return 0
    lines = context_lines()
    if lines:
        json.dump({"context": lines}, sys.stdout)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
