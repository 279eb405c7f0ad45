#!/usr/bin/env bash
# The built-in modules live by the module contract a user's module has
# (issue 40; DESIGN.md sections 4.1 and 4.6): the files of sensors/ and
# formulas/ include powerapi.h, powerapi_module.h, their own headers and
# util.h, never the library's internal headers (internal.h, or another of
# libpowerapi/src), except the files DESIGN.md section 4.6 names with the
# reason (EXCEPTIONS below). Prints each violation as file:line, exits 1.
# Usage: check_module_contract.sh SOURCE_DIR
set -euo pipefail
src=$1
# procfs_cpu.c makes the context's task records (DESIGN.md 4.6)
EXCEPTIONS="sensors/procfs_cpu.c"
# the library's private headers a module may include: util.h, the leaf of
# small helpers every layer shares (DESIGN.md 3)
allowed="util.h"
private=$(cd "$src/libpowerapi/src" && ls *.h)
fail=0
cd "$src"
for f in sensors/*.c sensors/*.h formulas/*.c formulas/*.h; do
    [ -e "$f" ] || continue
    case " $EXCEPTIONS " in *" $f "*) continue ;; esac
    for h in $private; do
        case " $allowed " in *" $h "*) continue ;; esac
        if grep -n "^#include *\"$h\"" "$f" | sed "s|^|$f:|"; then
            echo "check_module_contract: $f includes the library's $h; use powerapi_module.h" \
                 "(or name the file and why in DESIGN.md 4.6 and this script's EXCEPTIONS)" >&2
            fail=1
        fi
    done
done
# each exception is still one, and DESIGN.md names it
for f in $EXCEPTIONS; do
    if ! grep -q '^#include *"internal.h"' "$f"; then
        echo "check_module_contract: $f no longer includes internal.h: drop it from EXCEPTIONS" \
             "and DESIGN.md 4.6" >&2
        fail=1
    fi
    if ! grep -q "\`$(basename "$f")\`" DESIGN.md; then
        echo "check_module_contract: DESIGN.md does not name $f's reason" >&2
        fail=1
    fi
done
exit $fail
