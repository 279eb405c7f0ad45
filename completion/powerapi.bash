# bash completion for powerapi.  Every list comes from the program itself:
# the commands (`powerapi --complete`), a command's options and what their
# arguments are (`powerapi CMD --complete`: "--LONG -S ARGH", "-" for
# none, then the values the option's own check accepts when it has a fixed
# set), the
# modules and their option keys (`powerapi modules --names`) and the perf
# events (`powerapi events`).  Installed as
# share/bash-completion/completions/powerapi; tests/test_completion.c
# drives _powerapi with COMP_WORDS and COMP_CWORD and reads COMPREPLY.

# The word being completed as the user typed it (COMP_LINE up to
# COMP_POINT after the last blank), since bash splits "perf:events=x" at
# ':' and '='; falls back to COMP_WORDS[COMP_CWORD].
_powerapi_word()
{
    local cur=${COMP_WORDS[COMP_CWORD]}
    if [[ -n ${COMP_LINE-} && -n ${COMP_POINT-} ]]; then
        local line=${COMP_LINE:0:COMP_POINT}
        local w=${line##*[[:blank:]]}
        [[ $w == *"$cur" ]] && cur=$w
    fi
    printf '%s' "$cur"
}

# COMPREPLY from full candidates, cut to what bash takes as the current
# word (the part after the last ':' or '=' it split at).
_powerapi_reply()
{
    local full=$1 cur=${COMP_WORDS[COMP_CWORD]}
    shift
    local cut=$((${#full} - ${#cur})) c
    COMPREPLY=()
    for c in "$@"; do
        [[ $c == "$full"* ]] || continue
        COMPREPLY+=("${c:cut}")
    done
}

# The pids of this machine matching $1 by pid or by name: with one match
# the pid alone, else "PID(NAME)" shown and the pid prefix completed.
_powerapi_pids()
{
    local cur=$1 p comm head=${1%,*} n=0
    [[ $cur == *,* ]] && cur=${cur##*,} && head+=, || head=
    local -a ids=() shown=()
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        read -r comm 2>/dev/null <"/proc/$p/comm" || continue
        if [[ $p == "$cur"* || ( -n $cur && $comm == "$cur"* ) ]]; then
            ids+=("$head$p")
            shown+=("$head$p($comm)")
            n=$((n + 1))
        fi
    done
    if ((n == 1)); then
        COMPREPLY=("${ids[0]}")
    elif [[ -n $cur && $cur != [0-9]* ]]; then
        COMPREPLY=("${shown[@]}")
    else
        COMPREPLY=("${ids[@]}")
    fi
}

# NAME[:KEY=VALUE,...]: module names, then after ':' their option keys,
# and after events= (perf) the perf event names, joined by '+'.
_powerapi_modules()
{
    local full=$1 kinds=$2 prog=$3 line
    local -a cands=()
    if [[ $full != *:* ]]; then
        while read -r -a line; do
            [[ " $kinds " == *" ${line[0]} "* ]] && cands+=("${line[1]}")
        done < <("$prog" modules --names 2>/dev/null)
        _powerapi_reply "$full" "${cands[@]}"
        return
    fi
    local name=${full%%:*} rest=${full#*:}
    local head=${full%"${rest##*,}"} last=${rest##*,}
    if [[ $name == perf && $last == events=* ]]; then
        local ev=${last#events=}
        local evhead=$head"events="${ev%"${ev##*+}"}
        while read -r line _; do
            cands+=("$evhead$line")
        done < <("$prog" events 2>/dev/null)
    else
        while read -r -a line; do
            if [[ ${line[1]} == "$name" ]]; then
                local k
                for k in "${line[@]:2}"; do cands+=("$head$k="); done
            fi
        done < <("$prog" modules --names 2>/dev/null)
    fi
    _powerapi_reply "$full" "${cands[@]}"
    compopt -o nospace 2>/dev/null
}

# Durations: what the user typed followed by each unit, or a few usual ones.
_powerapi_durations()
{
    local cur=$1 u
    COMPREPLY=()
    if [[ $cur =~ ^[0-9]+$ ]]; then
        for u in ns us ms s m h; do COMPREPLY+=("$cur$u"); done
    else
        local d
        for d in 100ms 250ms 500ms 1s 2s 5s 10s 30s 1m; do
            [[ $d == "$cur"* ]] && COMPREPLY+=("$d")
        done
    fi
}

_powerapi()
{
    local prog=${COMP_WORDS[0]} cur
    cur=$(_powerapi_word)
    COMPREPLY=()
    if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W "$("$prog" --complete 2>/dev/null) help --help --version" -- "$cur"))
        return
    fi
    local cmd=${COMP_WORDS[1]} i
    if [[ $cmd == help ]]; then
        ((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W "$("$prog" --complete 2>/dev/null)" -- "$cur"))
        return
    fi
    # after "monitor ... --" or "profile ... --": a command of its own
    for ((i = 2; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[i]} == -- ]]; then
            COMPREPLY=($(compgen -c -- "$cur"))
            return
        fi
    done
    local opts
    opts=$("$prog" "$cmd" --complete 2>/dev/null) || return
    # the option before the word: the blank-separated token before it in
    # COMP_LINE (bash may have split the word itself at ':' and '=')
    local prev=${COMP_WORDS[COMP_CWORD - 1]} long short argh choices found= values=
    if [[ -n ${COMP_LINE-} && -n ${COMP_POINT-} ]]; then
        local line=${COMP_LINE:0:COMP_POINT}
        line=${line%"$cur"}
        line=${line%"${line##*[![:blank:]]}"}
        prev=${line##*[[:blank:]]}
    fi
    if [[ $cur == --*=* ]]; then
        prev=${cur%%=*}
        cur=${cur#*=}
    fi
    # a line: --LONG -S ARGH, then the values the option accepts, if a set
    while read -r long short argh choices; do
        if [[ $argh != - && ( $prev == "$long" || ( $short != - && $prev == "$short" ) ) ]]; then
            found=$long
            values=$choices
            break
        fi
    done <<<"$opts"
    if [[ -n $found && -n $values ]]; then
        COMPREPLY=($(compgen -W "$values" -- "$cur"))
        return
    fi
    if [[ -n $found ]]; then
        case $found:$argh in
        --sensor:*) _powerapi_modules "$cur" sensor "$prog" ;;
        --formula:*) _powerapi_modules "$cur" formula "$prog" ;;
        --disable:*) _powerapi_modules "$cur" "sensor formula" "$prog" ;;
        --pid:*) _powerapi_pids "$cur" ;;
        --listen:*) COMPREPLY=($(compgen -W "127.0.0.1:9464 [::1]:9464 0.0.0.0:9464" -- "$cur")) ;;
        *:DURATION) _powerapi_durations "$cur" ;;
        *:DIR) COMPREPLY=($(compgen -d -- "$cur")) ;;
        *:FILE) COMPREPLY=($(compgen -f -- "$cur")) ;;
        esac
        return
    fi
    if [[ $cmd == jalen && $COMP_CWORD -eq 3 ]]; then
        COMPREPLY=($(compgen -W "start dump stop status trace" -- "$cur"))
        return
    fi
    if [[ $cmd == jalen && $COMP_CWORD -eq 2 && $cur != -* ]]; then
        _powerapi_pids "$cur"
        return
    fi
    if [[ $cur == -* ]]; then
        local -a all=()
        while read -r long short argh _; do
            all+=("$long")
            [[ $short != - ]] && all+=("$short")
        done <<<"$opts"
        COMPREPLY=($(compgen -W "${all[*]}" -- "$cur"))
    fi
}
complete -F _powerapi powerapi
