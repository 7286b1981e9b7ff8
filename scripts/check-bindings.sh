#!/usr/bin/env bash
# Fails if the committed sys/src/generated/ differs from what
# scripts/regenerate-bindings.sh produces now.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
out_dir="sys/src/generated"

scripts/regenerate-bindings.sh

untracked="$(git ls-files --others --exclude-standard -- "$out_dir")"
if ! git diff --exit-code --stat -- "$out_dir" || [[ -n "$untracked" ]]; then
    [[ -z "$untracked" ]] || printf 'untracked generated files:\n%s\n' "$untracked" >&2
    echo "check-bindings: $out_dir is out of date with cuda.h or nccl.h." >&2
    echo "Run scripts/regenerate-bindings.sh and commit the result." >&2
    exit 1
fi
echo "check-bindings: $out_dir is up to date."
