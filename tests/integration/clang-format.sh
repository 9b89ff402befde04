#!/bin/sh
# House style: every C source is formatted as .clang-format says.
# With -i it reformats them in place instead (`make format`).
# clang-format is a test dependency (build-aux/install-deps.sh --test): when it
# is missing the check fails rather than skips, so CI cannot pass unchecked.
set -eu
: "${top_srcdir:?run through make check or make format}"
cd "$top_srcdir"
clang_format=${CLANG_FORMAT:-clang-format}

if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "$clang_format not found: install it (build-aux/install-deps.sh --test installs clang-format)"
  exit 1
fi
if [ ! -f .clang-format ]; then
  echo "$top_srcdir/.clang-format is missing"
  exit 1
fi

# The source directories only: a build tree may sit inside the source tree
# (make distcheck puts one in _build/), node_modules is not ours, and
# protoc-c's output (kube/ and remote/prompb/*.pb-c.[ch]) is not written by hand.
files=$(find lib collectors kube daemon storage web remote tests bench -name node_modules -prune -o \
  -type f \( -name '*.c' -o -name '*.h' \) ! -name '*.pb-c.[ch]' -print 2>/dev/null | LC_ALL=C sort)
if [ -z "$files" ]; then
  echo "no C sources found under $top_srcdir"
  exit 1
fi

if [ "${1:-}" = -i ]; then
  # shellcheck disable=SC2086
  exec "$clang_format" -i --style=file $files
fi

bad=
for f in $files; do
  "$clang_format" --dry-run --Werror --style=file "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
  echo "not formatted as .clang-format says ($("$clang_format" --version)):"
  for f in $bad; do
    echo "--- $f"
    "$clang_format" --style=file "$f" | diff -u "$f" - | sed -n '3,40p'
  done
  echo
  echo "fix with: (cd $top_srcdir && $clang_format -i$bad)"
  echo "      or: make format"
  exit 1
fi
echo "$(echo "$files" | wc -l) C sources formatted as .clang-format says"
