#!/bin/sh
# A session_before_compact hook: hold compaction while work is in progress.
#
# While the marker file exists (default `.musepi/wip` in the working
# directory, or the path given as the first argument), a compaction is
# cancelled: the hook explains why on stderr and exits 2. An overflow
# compaction is never held, because the request cannot go on without it.
# Otherwise the hook prints nothing and exits 0: the compaction goes ahead.
#
# Settings (~/.musepi/settings.json or .musepi/settings.json):
#   {"hooks": {"session_before_compact": [
#     {"command": ["examples/hooks/hold-compaction.sh"], "timeoutMs": 2000}
#   ]}}
# Try it: musepi hooks test session_before_compact

marker=${1:-.musepi/wip}

# The event arrives as one line of JSON on stdin; read all of it.
event=$(cat)

case $event in
  *'"reason":"overflow"'*)
    exit 0
    ;;
esac

if [ -e "$marker" ]; then
  echo "work in progress ($marker exists): finish it or remove the marker, then compact" >&2
  exit 2
fi
exit 0
