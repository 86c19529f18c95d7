#!/usr/bin/env bash
# Renders the plain manifests in deploy/ from the Helm chart, one file per
# chart template, and copies into the chart the files it ships from
# elsewhere in the repository (Helm reads only files inside a chart):
#   dashboards/alerts.yaml              → charts/gpuheal/files/alerts.yaml
#   dashboards/gpuheal-fleet.json       → charts/gpuheal/files/gpuheal-fleet.json
#   internal/analyzer/default-rules.yaml → charts/gpuheal/files/default-rules.yaml
# test/chart checks that both are current ("run hack/render-deploy.sh").
#
#   hack/render-deploy.sh        copy the files, render into deploy/
#   hack/render-deploy.sh DIR    render into DIR only (what the test compares)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
helm="${GPUHEAL_BIN_DIR:-$root/bin}/helm"
[[ -x "$helm" ]] || "$root/hack/build-helm.sh"
chart="$root/charts/gpuheal"

out="${1:-}"
if [[ -z "$out" ]]; then
  out="$root/deploy"
  while read -r src dst; do
    if [[ -f "$root/$src" ]]; then
      mkdir -p "$(dirname "$chart/$dst")"
      cp "$root/$src" "$chart/$dst"
    else
      rm -f "$chart/$dst"
    fi
  done <<'LIST'
dashboards/alerts.yaml files/alerts.yaml
dashboards/gpuheal-fleet.json files/gpuheal-fleet.json
internal/analyzer/default-rules.yaml files/default-rules.yaml
LIST
fi

# The values of the plain manifests: the chart's defaults, without Helm's
# own labels, with the namespace, and without the uninstall hook (only Helm
# runs hooks; without Helm, `gpuheal-controller --release` does its work).
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$helm" template gpuheal "$chart" --namespace gpuheal \
  --set helmLabels=false --set namespace.create=true --set uninstallHook.enabled=false \
  --output-dir "$tmp" >/dev/null

mkdir -p "$out"
rm -f "$out"/*.yaml
for f in "$tmp"/gpuheal/templates/*.yaml; do
  {
    echo "# Generated from charts/gpuheal by hack/render-deploy.sh: edit the chart, not this file."
    # Drop the leading document marker and Helm's "# Source:" lines.
    sed -e '1{/^---$/d}' -e '/^# Source: /d' "$f"
  } >"$out/$(basename "$f")"
done
