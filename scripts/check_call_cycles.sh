#!/usr/bin/env bash
# check_call_cycles.sh - no circle of calls between source files (issue 40,
# DESIGN.md section 3): from the object files' symbols, file A calls file B
# when A has an undefined reference (nm -u, weak ones too) to a global
# symbol that B defines; no chain of such calls may lead from a file back
# to itself.  A leaf that needs its hub gets it handed down (a hooks
# struct, a callback) instead of calling into the hub's file.
#
# Usage: scripts/check_call_cycles.sh [--exclude GLOB]... OBJECT_OR_DIR...
#   A folder stands for every *.o under it.  Objects of tests are left out
#   (a path with a folder tests/, test_* or unit_*), and so are the
#   objects whose path matches a GLOB of --exclude (a registration table
#   that names every module, as a command table names every command) and
#   the symbols that more than one object defines (which of them a call
#   reaches is the linker's choice, not the file's).  Symbols defined
#   outside the objects given (libc, the JVM, another library) make no
#   edge.
# Prints each cycle as the list of its files, then each edge's symbols (the
# first 200 cycles; the walk stops counting at 10,000); exit status 0 when
# there is none, 1 when there is one, 2 on a usage error (no object found,
# nm missing).
#
# A name is shown as TARGET:SOURCE where the object is a CMake one
# (.../CMakeFiles/TARGET.dir/SOURCE.o), else as the path given.
set -u
usage() {
    echo "usage: $0 [--exclude GLOB]... OBJECT_OR_DIR..." >&2
    exit 2
}
excludes=()
while [ $# -gt 0 ]; do
    case $1 in
    --exclude)
        [ $# -ge 2 ] || usage
        excludes+=("$2")
        shift 2
        ;;
    --exclude=*)
        excludes+=("${1#--exclude=}")
        shift
        ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -eq 0 ] && usage
command -v nm >/dev/null || {
    echo "check_call_cycles: nm (binutils) is missing" >&2
    exit 2
}

for a in "$@"; do
    [ -e "$a" ] || { echo "check_call_cycles: $a: no such file or folder" >&2 && exit 2; }
done
mapfile -t objs < <(find "$@" -name '*.o' -type f | sort)
kept=()
for o in ${objs[@]+"${objs[@]}"}; do
    case "/$o" in
    */tests/* | */test_* | */unit_*) continue ;;
    esac
    for x in ${excludes[@]+"${excludes[@]}"}; do
        # shellcheck disable=SC2053 # a glob, on purpose
        [[ $o == $x ]] && continue 2
    done
    kept+=("$o")
done
if [ ${#kept[@]} -eq 0 ]; then
    echo "check_call_cycles: no object file in $*" >&2
    exit 2
fi

# One line per symbol: "D <object> <name>" defined there (a global or weak
# definition), "U <object> <name>" referenced there and not defined.
list() {
    for o in "${kept[@]}"; do
        nm -P --defined-only "$o" 2>/dev/null |
            awk -v o="$o" '$2 ~ /^[ABCDGRSTVWu]$/ { print "D", o, $1 }'
        nm -P -u "$o" 2>/dev/null | awk -v o="$o" '{ print "U", o, $1 }'
    done
}

list | awk -v nobj=${#kept[@]} '
function show(o,   s) {
    s = o
    if (match(s, /CMakeFiles\/[^\/]+\.dir\//)) {
        t = substr(s, RSTART + 11, RLENGTH - 16)
        s = t ":" substr(s, RSTART + RLENGTH)
        sub(/\.o$/, "", s)
    }
    return s
}
# simple cycles whose smallest node is start: a depth-first walk over the
# nodes above start, each reported once
function walk(v, depth,   w, i, line) {
    path[depth] = v
    on[v] = 1
    for (w = start; w <= n && ncyc < 10000; w++) {
        if (!((v, w) in syms))
            continue
        if (w == start) {
            ncyc++
            if (ncyc > 200)
                continue
            line = "cycle " ncyc ":"
            for (i = 1; i <= depth; i++)
                line = line " " name[path[i]] " ->"
            print line " " name[start]
            for (i = 1; i <= depth; i++) {
                nx = i < depth ? path[i + 1] : start
                print "  " name[path[i]] " -> " name[nx] ":" syms[path[i], nx]
            }
        } else if (w > start && !on[w]) {
            walk(w, depth + 1)
        }
    }
    on[v] = 0
}
$1 == "D" { ndef[$3]++; def[$3] = $2; next }
$1 == "U" { nref++; rsrc[nref] = $2; rsym[nref] = $3 }
END {
    n = 0
    for (i = 1; i <= nref; i++) {
        s = rsym[i]
        if (ndef[s] != 1 || def[s] == rsrc[i])
            continue
        a = rsrc[i]; b = def[s]
        if (!(a in id)) { id[a] = ++n; name[n] = show(a) }
        if (!(b in id)) { id[b] = ++n; name[n] = show(b) }
        syms[id[a], id[b]] = syms[id[a], id[b]] " " s
    }
    ncyc = 0
    for (start = 1; start <= n; start++)
        walk(start, 1)
    if (ncyc > 200)
        print "(" ncyc - 200 (ncyc >= 10000 ? " or more" : "") " more cycles not shown)"
    if (ncyc) {
        print "check_call_cycles: " (ncyc >= 10000 ? "10000 or more" : ncyc) \
            " cycle(s) of calls between the " nobj " files"
        exit 1
    }
    print "check_call_cycles: no cycle of calls between the " nobj " files"
}'
