#!/usr/bin/env bash
# The docs book (docs/, mdBook): build it and fail on a broken internal link.
#
#   scripts/book.sh            builds docs/book/html/index.html
#
# Installs, only when missing, mdBook and the link checker mdbook-linkcheck2 (an mdBook backend;
# web links are not followed: CI has no network but the package registries) from crates.io with
# `cargo install --locked` at pinned versions into ${XDG_CACHE_HOME:-~/.cache}/dealgym/cargo-tools.
# If crates.io cannot be reached it prints one "SKIPPED: docs book: <why>" line and exits 0 —
# the network never fails CI, and never passes silently. Then it builds the book and exits 1
# when a chapter of src/SUMMARY.md is missing, an {{#include}} names a missing file or anchor,
# a link between chapters or to a file of the book is broken (linkcheck2), a link's #heading is
# not on its page, or a relative link of README.md (which lives outside the book) names no file.
set -euo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION=0.5.4
LINKCHECK_VERSION=0.13.0 # mdbook-linkcheck2, the maintained fork for mdBook 0.5
TOOLS=${XDG_CACHE_HOME:-$HOME/.cache}/dealgym/cargo-tools

skip() {
  echo "SKIPPED: docs book: $*"
  exit 0
}

# install CRATE VERSION [cargo install flags…]: skipped when TOOLS/bin/CRATE is that version.
install() {
  local crate=$1 version=$2
  shift 2
  if "$TOOLS/bin/$crate" --version 2>/dev/null | grep -qw "v\?$version"; then
    return
  fi
  local log started
  log=$(mktemp)
  started=$(date +%s)
  if ! cargo install --locked --quiet --version "$version" --root "$TOOLS" "$@" "$crate" \
    >"$log" 2>&1; then
    local offline='failed to (download|query|fetch|get|update)|spurious network|could not resolve'
    offline+='|resolve host|connection (refused|reset|timed out)|network|timed out'
    if grep -qiE "$offline" "$log"; then
      local why
      why=$(grep -iE 'error|failed|network' "$log" | head -n 1 | tr -d '\r')
      rm -f "$log"
      skip "crates.io cannot be reached to install $crate $version (${why:-no output})"
    fi
    cat "$log" >&2
    rm -f "$log"
    echo "book: cargo install $crate $version failed (above)" >&2
    exit 1
  fi
  rm -f "$log"
  echo "book: installed $crate $version into $TOOLS in $(($(date +%s) - started)) s (cached)"
}

command -v cargo >/dev/null 2>&1 || skip "cargo is not on PATH (mdBook installs with cargo install)"

install mdbook "$MDBOOK_VERSION" --no-default-features --features search
install mdbook-linkcheck2 "$LINKCHECK_VERSION"
export PATH="$TOOLS/bin:$PATH"

# The book's own links: mdBook runs the html backend and then linkcheck2 (book.toml), which
# fails the build on a broken link. mdBook logs an {{#include}} it cannot read as an ERROR and
# builds on: any ERROR fails here.
rm -rf docs/book
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
RUST_BACKTRACE=0 mdbook build docs >"$log" 2>&1 || status=$?
cat "$log" >&2
if [ "$status" -ne 0 ] || sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -qE '^ *ERROR '; then
  echo "book: the book did not build, or a link or an include is broken (above)" >&2
  exit 1
fi

# linkcheck2 checks that a linked page exists, not its #heading: check each fragment against
# the ids of the built page (a heading renamed breaks the links to it).
for page in $(cd docs/src && find . -name '*.md' ! -name SUMMARY.md | sed 's|^\./||'); do
  html=docs/book/html/${page%.md}.html
  while IFS= read -r href; do
    file=${href%%#*}
    fragment=${href#*#}
    target=$html
    [ -n "$file" ] && target="$(dirname "$html")/$file"
    if [ -f "$target" ] && ! grep -q "id=\"$fragment\"" "$target"; then
      echo "docs/src/$page: broken link: $href (no such heading)" >&2
      exit 1
    fi
  done < <(grep -oE 'href="[^":]*#[^"]+"' "$html" | sed -E 's/^href="(.*)"$/\1/')
done

# An {{#include FILE:NAME}} of an anchor FILE lacks includes nothing, silently: each must be there.
while IFS= read -r found; do
  page=${found%%:*}
  spec=${found#*\{\{#include }
  spec=${spec%\}\}}
  file=${spec%%:*}
  anchor=${spec#"$file"}
  anchor=${anchor#:}
  [ -n "$anchor" ] || continue
  case $anchor in [0-9]*) continue ;; esac # a line range, not an anchor
  target="$(dirname "$page")/$file"
  if ! grep -qE "ANCHOR: *$anchor\b" "$target" ||
    ! grep -qE "ANCHOR_END: *$anchor\b" "$target"; then
    echo "$page: {{#include $spec}}: $file has no anchor $anchor" >&2
    exit 1
  fi
done < <(grep -roE '\{\{#include [^}]+\}\}' docs/src)

# README.md is read on GitHub, outside the book: its relative links must name files that exist.
broken=0
while IFS= read -r target; do
  path=${target%%#*}
  [ -z "$path" ] && continue
  if [ ! -e "$path" ]; then
    echo "README.md: broken link: $target" >&2
    broken=1
  fi
done < <(grep -oE '\]\([^)]+\)' README.md | sed -E 's/^\]\((.*)\)$/\1/' | grep -vE '^[a-z]+:')
[ "$broken" -eq 0 ] || exit 1

pages=$(find docs/src -name '*.md' | wc -l)
echo "book: docs/book/html/index.html ($pages pages and README.md's links checked)"
