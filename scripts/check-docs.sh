#!/usr/bin/env bash
# The documentation checks, run by CI (.ci/run):
#
# 1. `cargo doc --no-deps -p cudajit -p cudajit-sys` with warnings denied (broken intra-doc
#    links, unclosed HTML tags, ...), as the workspace builds it.
# 2. The build docs.rs makes, on a machine with no LLVM: DOCS_RS=1, `--cfg docsrs`, the features
#    of Cargo.toml's [package.metadata.docs.rs] (`no-llvm-linking`), LLVM_SYS_191_PREFIX pointing
#    nowhere and every `llvm-config*` hidden from PATH, in its own target/docsrs. It passes only if
#    the documentation builds although llvm-sys found no LLVM (its build script then says
#    LLVM_SYS_NOT_FOUND, which this checks) and cudajit's build script skipped its LLVM check.
#
#   bash scripts/check-docs.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

if ! command -v cargo > /dev/null 2>&1 && [[ -f "$HOME/.cargo/env" ]]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi

echo "+ RUSTDOCFLAGS='-D warnings' cargo doc --no-deps -p cudajit -p cudajit-sys"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p cudajit -p cudajit-sys

# PATH without LLVM: each PATH directory that holds an llvm-config* is replaced by a directory of
# links to everything else in it.
hidden="$(mktemp -d)"
trap 'rm -rf "$hidden"' EXIT
no_llvm_path=()
IFS=: read -ra dirs <<< "$PATH"
for i in "${!dirs[@]}"; do
    d="${dirs[$i]}"
    [[ -d "$d" ]] || continue
    if compgen -G "$d/llvm-config*" > /dev/null; then
        mkdir -p "$hidden/$i"
        for f in "$d"/*; do
            [[ "${f##*/}" == llvm-config* ]] || ln -s "$f" "$hidden/$i/${f##*/}"
        done
        no_llvm_path+=("$hidden/$i")
    else
        no_llvm_path+=("$d")
    fi
done
no_llvm_path="$(
    IFS=:
    echo "${no_llvm_path[*]}"
)"
if PATH="$no_llvm_path" command -v llvm-config llvm-config-19 > /dev/null 2>&1; then
    echo "check-docs: could not hide llvm-config from PATH" >&2
    exit 1
fi

docsrs_target="$repo/target/docsrs"
echo "+ DOCS_RS=1 LLVM_SYS_191_PREFIX=/nonexistent RUSTDOCFLAGS='--cfg docsrs -D warnings' PATH=<PATH without llvm-config> cargo doc --no-deps -p cudajit -p cudajit-sys --features cudajit/no-llvm-linking --target-dir target/docsrs"
DOCS_RS=1 LLVM_SYS_191_PREFIX=/nonexistent RUSTDOCFLAGS="--cfg docsrs -D warnings" PATH="$no_llvm_path" \
    cargo doc --no-deps -p cudajit -p cudajit-sys --features cudajit/no-llvm-linking --target-dir "$docsrs_target"

# The proof that no LLVM was used: llvm-sys's build script found none.
outputs=("$docsrs_target"/debug/build/llvm-sys-*/output)
[[ -f "${outputs[0]}" ]] || {
    echo "check-docs: no llvm-sys build-script output under $docsrs_target" >&2
    exit 1
}
for o in "${outputs[@]}"; do
    grep -q LLVM_SYS_NOT_FOUND "$o" || {
        echo "check-docs: llvm-sys found an LLVM in the docs.rs build ($o)" >&2
        exit 1
    }
done
echo "check-docs: ok (the docs.rs build found no LLVM and needed none)"
