#!/usr/bin/env bash
# Runs every Fuzz* target in the module for the given time each.
set -euo pipefail
fuzztime="${1:-20s}"
cd "$(dirname "$0")/.."
grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./hack/' | while read -r f; do
  pkg="./$(dirname "${f#./}")"
  grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //' | while read -r target; do
    echo ">> fuzz $pkg $target for $fuzztime"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
  done
done
