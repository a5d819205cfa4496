#!/usr/bin/env bash
# Lints the OpenAPI document the gateway serves with Redocly's recommended rules: 0 errors and
# 0 warnings, apart from the justified exceptions in .redocly.lint-ignore.yaml.
#   lint.sh <dnaserve-openapi binary>
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
redocly="$here/node_modules/.bin/redocly"
[ -x "$redocly" ] || { echo "lint.sh: $redocly missing; run scripts/install-deps" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$1" > "$work/openapi.json"
cp "$here/redocly.yaml" "$here/.redocly.lint-ignore.yaml" "$work/"
cd "$work"
# --max-problems high enough that nothing is cut; warnings fail too (a warning is a finding).
out="$("$redocly" lint --config redocly.yaml --format stylish --max-problems 1000 openapi.json 2>&1)" || {
  echo "$out"
  exit 1
}
echo "$out"
if echo "$out" | grep -Eq 'You have [0-9]+ warnings?'; then
  echo "lint.sh: warnings are findings too" >&2
  exit 1
fi
