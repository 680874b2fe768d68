#!/bin/sh
# Every C, C++, CUDA and HIP file in the repository is clang-formatted with
# the repository's .clang-format. Usage: check_format.sh SOURCE_ROOT
#
# One clang-format process checks every file: starting one per file cost a
# minute on a loaded 2-core machine (and timed out); one run takes seconds.
root=$1
command -v clang-format >/dev/null 2>&1 || { echo "clang-format not found"; exit 77; }
command -v git >/dev/null 2>&1 && git -C "$root" rev-parse >/dev/null 2>&1 || { echo "not a git checkout"; exit 77; }
cd "$root" || exit 1
files=$(mktemp) || exit 1
report=$(mktemp) || exit 1
trap 'rm -f "$files" "$report"' EXIT
git -c core.quotepath=off ls-files '*.h' '*.hpp' '*.cpp' '*.cc' '*.cu' '*.cuh' '*.hip' >"$files"
# --files reads the list from a file (clang-format 14 and later), so no
# command-line limit splits it into several runs as xargs would.
clang-format --dry-run -Werror --files="$files" >"$report" 2>&1
status=$?
if [ $status -ne 0 ]; then
  # "path:line:col: error: code should be clang-formatted": one line per file.
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' "$report" |
    sort -u | while read -r f; do echo "not formatted: $f (run: clang-format -i $f)"; done
  grep -v 'code should be clang-formatted' "$report" | grep ': error:' || true
  exit 1
fi
echo "every source file is clang-formatted ($(wc -l <"$files") files, one clang-format run)"
