#!/usr/bin/env bash
# Installs dynalite (a DynamoDB-compatible server on LevelDB, npm) into
# hack/tools/dynalite for the DynamoDB audit sink's tests. Safe to run
# repeatedly: when the pinned version is there it prints nothing.
set -euo pipefail

version="${DYNALITE_VERSION:-4.0.0}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/hack/tools/dynalite"
bin="$dir/node_modules/.bin/dynalite"
pkg="$dir/node_modules/dynalite/package.json"

installed() {
  [[ -x "$bin" && -f "$pkg" ]] || return 1
  grep -q "\"version\": *\"$version\"" "$pkg"
}

installed && exit 0

command -v npm >/dev/null || { echo "ensure-dynalite: npm not found (Debian: apt-get install nodejs npm)" >&2; exit 1; }
echo ">> installing dynalite@$version into ${dir#$root/}"
mkdir -p "$dir"
npm install --prefix "$dir" --save-exact --no-audit --no-fund --loglevel=error "dynalite@$version" >/dev/null
installed || { echo "ensure-dynalite: $bin missing after npm install" >&2; exit 1; }
