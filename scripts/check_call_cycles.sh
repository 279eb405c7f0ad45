#!/bin/bash
# check_call_cycles.sh - circles of calls between files (DESIGN.md section 3,
# "Layers"): no two object files call each other, directly or through others.
#
# Usage: scripts/check_call_cycles.sh OBJ_DIR_OR_FILES...
#
# Each argument is an object file or a folder searched for *.o.  From `nm`,
# every undefined symbol of an object (weak references included) is
# resolved to the one object among the arguments that defines it; when that
# symbol is a function, the object calls the other one.  Symbols defined by
# none of the objects, or by several, are left out, and so are references to
# data: a table of callbacks handed to a framework (libpowerapi/src/builtin.c's
# list of modules' ops tables) is how a leaf is reached without a call back.
# This gives a directed graph of files.
# Every circle of that graph (each strongly connected component of more
# than one file) is printed with the symbols on each of its edges; exit
# status 1 when there is one, 2 on a usage error.
set -u
[ $# -gt 0 ] || { echo "usage: $0 OBJ_DIR_OR_FILES..." >&2; exit 2; }

objs=()
for a in "$@"; do
    if [ -d "$a" ]; then
        while IFS= read -r f; do objs+=("$f"); done < <(find "$a" -name '*.o' | sort)
    elif [ -f "$a" ]; then
        objs+=("$a")
    else
        echo "$0: $a: no such file or folder" >&2
        exit 2
    fi
done
[ ${#objs[@]} -gt 0 ] || { echo "$0: no object files in $*" >&2; exit 2; }

# One line per (object, kind, symbol): T for the definition of a function,
# D for any other definition, U for an undefined reference.  The graph and
# its circles are found in awk.
for o in "${objs[@]}"; do
    nm "$o" 2>/dev/null | awk -v o="$o" '
        NF == 2 && $1 ~ /^[Uwv]$/ { print o "\tU\t" $2; next }
        NF == 3 && $2 ~ /^[TW]$/ { print o "\tT\t" $3; next }
        NF == 3 && $2 ~ /^[DBRGSCVi]$/ { print o "\tD\t" $3 }'
done | awk -F'\t' '
    function short(p) { sub(/\.o$/, "", p); sub(/.*CMakeFiles\/[^\/]*\.dir\//, "", p); return p }
    $2 != "U" { ndef[$3]++; def[$3] = $1; fn[$3] = $2 == "T"; next }
    { ref[++nr] = $1 "\t" $3 }
    END {
        for (i = 1; i <= nr; i++) {
            split(ref[i], r, "\t")
            if (ndef[r[2]] != 1 || !fn[r[2]] || def[r[2]] == r[1]) continue
            a = r[1]; b = def[r[2]]
            if (!((a, b) in edge)) { edge[a, b] = r[2]; succ[a] = succ[a] "\t" b; nodes[a]; nodes[b] }
            else edge[a, b] = edge[a, b] ", " r[2]
        }
        # Tarjan, iterative over each node, to find the components.
        idx = 0; ncomp = 0
        for (v in nodes) if (!(v in index_)) strong(v)
        bad = 0
        for (c = 1; c <= ncomp; c++) {
            n = split(comp[c], members, "\t")
            if (n < 2) continue
            bad = 1
            printf "circle of %d files:\n", n
            for (x = 1; x <= n; x++) for (y = 1; y <= n; y++)
                if ((members[x], members[y]) in edge)
                    printf "  %s -> %s: %s\n", short(members[x]), short(members[y]), edge[members[x], members[y]]
        }
        if (!bad) print "check_call_cycles: no circle of calls between files"
        exit bad
    }
    function strong(v,    k, ns, w, nsucc, list) {
        index_[v] = idx; low[v] = idx; idx++
        stack[++sp] = v; onstack[v] = 1
        nsucc = split(substr(succ[v], 2), list, "\t")
        for (k = 1; k <= nsucc; k++) {
            w = list[k]
            if (!(w in index_)) { strong(w); if (low[w] < low[v]) low[v] = low[w] }
            else if (onstack[w] && index_[w] < low[v]) low[v] = index_[w]
        }
        if (low[v] == index_[v]) {
            ncomp++; comp[ncomp] = ""
            do { w = stack[sp--]; onstack[w] = 0; comp[ncomp] = comp[ncomp] (comp[ncomp] == "" ? "" : "\t") w } while (w != v)
        }
    }'
