#!/bin/sh
# Every C, C++, CUDA and HIP file in the repository is clang-formatted with
# the repository's .clang-format. Usage: check_format.sh SOURCE_ROOT
root=$1
command -v clang-format >/dev/null 2>&1 || { echo "clang-format not found"; exit 77; }
command -v git >/dev/null 2>&1 && git -C "$root" rev-parse >/dev/null 2>&1 || { echo "not a git checkout"; exit 77; }
cd "$root" || exit 1
status=0
for f in $(git ls-files '*.h' '*.hpp' '*.cpp' '*.cc' '*.cu' '*.cuh' '*.hip'); do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (run: clang-format -i $f)"
    status=1
  fi
done
[ $status -eq 0 ] && echo "every source file is clang-formatted"
exit $status
