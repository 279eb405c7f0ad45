#!/usr/bin/env bash
# The cycle check of scripts/check_call_cycles.sh on objects made here:
# a.c and b.c call each other (a cycle, named with the symbols of each
# edge), c.c only calls them (no cycle of its own); a symbol that two
# objects define makes no edge; objects of tests and --exclude are left
# out.  Usage: check_call_cycles_test.sh SOURCE_DIR [CC]
set -u
src=$1
cc=${2:-cc}
check=$src/scripts/check_call_cycles.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect RC WHAT ARGS...: the check's status, and its output holds WHAT
    local want=$1 what=$2
    shift 2
    out=$("$check" "$@" 2>&1)
    rc=$?
    if [ "$rc" != "$want" ] || ! grep -qF -- "$what" <<<"$out"; then
        echo "check_call_cycles $*: status $rc (want $want), output:" >&2
        echo "$out" >&2
        echo "(wanted a line with: $what)" >&2
        fail=1
    fi
}
mk() { # mk NAME CODE: NAME.o from CODE
    printf '%s\n' "$2" >"$tmp/$1.c"
    "$cc" -c -o "$tmp/$1.o" "$tmp/$1.c" || exit 2
}
mkdir -p "$tmp/tests"
mk a 'int b_fn(void); int a_fn(void) { return b_fn() + 1; }'
mk b 'int a_fn(void); int b_fn(void) { return 0; } int b_back(void) { return a_fn(); }'
mk c 'int a_fn(void); int b_fn(void); int c_fn(void) { return a_fn() + b_fn(); }'
expect 1 "$tmp/a.o -> $tmp/b.o: b_fn" "$tmp/a.o" "$tmp/b.o" "$tmp/c.o"
expect 1 "$tmp/b.o -> $tmp/a.o: a_fn" "$tmp"
expect 1 "1 cycle(s) of calls between the 3 files" "$tmp"
expect 0 "no cycle of calls between the 2 files" --exclude '*/b.o' "$tmp"
# a second definition of a_fn: which one b reaches is the linker's choice
mk d 'int a_fn(void) { return 2; }'
expect 0 "no cycle of calls between the 4 files" "$tmp"
rm "$tmp/d.o"
# the same object in a folder of tests is left out
mv "$tmp/b.o" "$tmp/tests/b.o"
expect 0 "no cycle of calls between the 2 files" "$tmp"
expect 2 "no object file" "$tmp/tests"
exit $fail
