#!/usr/bin/env bash
# check_function_length.sh - no function longer than MAX lines (issue 40:
# a long function is cut into its phases, each a named function).
#
# Usage: scripts/check_function_length.sh [--max N] FILE_OR_DIR...
#   A folder stands for every *.c under it.  The files are read as
#   clang-format writes them (.clang-format): a body opens with "{" alone
#   at the start of a line and closes with "}" at the start of a line; a
#   function's length counts from the first line of its signature to its
#   closing brace.  MAX is 100 unless given.
# Prints "LINES FILE:LINE NAME" for each longer function, longest first;
# exit status 0 when there is none, 1 when there is one, 2 on a usage
# error.
set -u
max=100
if [ "${1:-}" = --max ]; then
    [ $# -ge 2 ] || exit 2
    max=$2
    shift 2
fi
if [ $# -eq 0 ]; then
    echo "usage: $0 [--max N] FILE_OR_DIR..." >&2
    exit 2
fi
for a in "$@"; do
    [ -e "$a" ] || { echo "check_function_length: $a: no such file or folder" >&2 && exit 2; }
done
mapfile -t files < <(find "$@" -name '*.c' -type f | sort)
if [ ${#files[@]} -eq 0 ]; then
    echo "check_function_length: no C file in $*" >&2
    exit 2
fi
long=$(awk -v lim="$max" '
    FNR == 1 { body = 0 }
    /^[A-Za-z_].*\(/ && !/;$/ && !body { sig = FNR; name = $0 }
    /^\{$/ { start = sig; body = 1 }
    /^\}/ && body {
        n = FNR - start + 1
        if (n > lim) {
            nm = name
            sub(/\(.*/, "", nm)
            sub(/.*[ *]/, "", nm)
            printf "%d %s:%d %s\n", n, FILENAME, start, nm
        }
        body = 0
    }' "${files[@]}" | sort -rn)
if [ -n "$long" ]; then
    echo "$long"
    echo "check_function_length: $(wc -l <<<"$long") function(s) over $max lines" >&2
    exit 1
fi
echo "check_function_length: no function over $max lines in ${#files[@]} files"
