#!/usr/bin/env bash
# The wall, probed: run as an agent's user, this tries everything an agent must not be able to
# do to consentd — read the bot token, the HMAC key or the database, write the journal, replace
# the socket, signal the daemon, run a category command itself — and fails loudly, naming each
# one that worked. It also checks that the agent CAN ask over the socket: a wall nobody can use
# is trivially secure, and proves nothing.
#
# Every attempt is real but harmless when it succeeds: files are opened for reading or for
# appending with nothing written, a probe name is created and removed again, the daemon is sent
# signal 0 before anything else. An attempt counts as blocked only when the system says so
# ("Permission denied" / "Operation not permitted"); a missing file is reported as absent,
# and with WALL_STRICT=1 (CI) as an error, since then the probe was pointed at the wrong place.
#
# Settings (environment), defaulting to the image's layout:
#   WALL_SOCKET     the socket                   ($CONSENTD_SOCKET, else /run/consentd/consent.sock)
#   WALL_TOKEN_FILE telegram.token_file          (/run/secrets/bot-token)
#   WALL_STATE_DIR  paths.state_dir              (/var/lib/consentd)
#   WALL_JOURNAL    paths.journal                (/var/log/consentd/decisions.jsonl)
#   WALL_COMMANDS   category commands, space-separated (every file in /usr/lib/consentd)
#   WALL_SECRETS    more files only the daemon may read, e.g. env_files, space-separated
#   WALL_DAEMON_PID the daemon's pid             (found in /proc by name when visible)
#   WALL_CONSENTD   the client binary            (consentd on PATH)
#   WALL_STRICT     1: a target that is absent or invisible is an error, not a pass
#
# Exit status: 0 when every attempt was blocked and the socket answered; 1 otherwise.
set -euo pipefail
# The checks read the system's error messages; they must be the untranslated ones.
export LC_ALL=C

socket=${WALL_SOCKET:-${CONSENTD_SOCKET:-/run/consentd/consent.sock}}
token=${WALL_TOKEN_FILE:-/run/secrets/bot-token}
state=${WALL_STATE_DIR:-/var/lib/consentd}
journal=${WALL_JOURNAL:-/var/log/consentd/decisions.jsonl}
strict=${WALL_STRICT:-0}
client=${WALL_CONSENTD:-consentd}
if [[ -n ${WALL_COMMANDS+set} ]]; then
    read -r -a commands <<<"$WALL_COMMANDS"
else
    commands=()
    for f in /usr/lib/consentd/*; do [[ -e $f ]] && commands+=("$f"); done
fi
read -r -a secrets <<<"${WALL_SECRETS:-}"

holes=()
errors=()
me=$(id -u)

hole() {
    echo "HOLE     $1" >&2
    holes+=("$1")
}
error() {
    echo "ERROR    $1" >&2
    errors+=("$1")
}
blocked() { echo "blocked  $1"; }

# Judges one attempt by what it printed on failure. $1 says what was tried; the attempt's
# status is $2 and its stderr $3.
judge() {
    local what=$1 status=$2 message=$3
    if [[ $status == 0 ]]; then
        hole "$what"
    elif [[ $message == *"Permission denied"* || $message == *"Operation not permitted"* ]]; then
        blocked "$what"
    elif [[ $message == *"No such file"* || $message == *"No such process"* ]]; then
        if [[ $strict == 1 ]]; then
            error "$what: absent ($message)"
        else
            echo "absent   $what"
        fi
    else
        error "$what: ${message:-exit $status}"
    fi
}

# Runs "$@" and judges it; the command's output is discarded, never shown (it could be a secret).
attempt() {
    local what=$1 status=0 message
    shift
    message=$("$@" 2>&1 >/dev/null) || status=$?
    judge "$what" "$status" "$message"
}

# Opens a file for reading; reads one byte at most, which goes nowhere.
try_read() { head -c 1 -- "$1" >/dev/null; }
# Opens a file for appending and writes nothing: the same permission as appending a line. A
# missing file is not created (stat says why it cannot be seen, which is the answer then).
try_append() {
    stat -- "$1" >/dev/null && : >>"$1"
}
# Creates and removes a probe name in a directory: the permission that replacing or removing
# any name in it (the journal, the socket) takes.
try_create_in() {
    local probe
    probe="$1/.wall-probe-$$"
    : >"$probe" && rm -f -- "$probe"
}
# Lists a directory.
try_list() { ls -- "$1" >/dev/null; }

echo "consentd wall probe as uid $me ($(id -un 2>/dev/null || echo '?')), groups: $(id -G)"
if [[ $me == 0 ]]; then
    error "running as root: run the probe as an agent's user"
fi
owner=$(stat -c %u -- "$state" 2>/dev/null || echo "")
if [[ -n $owner && $owner == "$me" ]]; then
    error "running as the daemon's own user (uid $me owns $state): run the probe as an agent's user"
fi

# The service keys.
attempt "read the bot token ($token)" try_read "$token"
attempt "list the state directory ($state)" try_list "$state"
attempt "read the HMAC key ($state/press.key)" try_read "$state/press.key"
attempt "read the database ($state/consentd.db)" try_read "$state/consentd.db"
for f in "${secrets[@]}"; do
    attempt "read a secret ($f)" try_read "$f"
done

# The journal: neither appended to nor replaced.
attempt "append to the journal ($journal)" try_append "$journal"
attempt "create a name beside the journal ($(dirname -- "$journal"))" try_create_in "$(dirname -- "$journal")"

# The socket: usable, but not replaceable.
socket_dir=$(dirname -- "$socket")
attempt "create a name beside the socket ($socket_dir)" try_create_in "$socket_dir"
if [[ ${holes[*]-} != *"beside the socket"* ]]; then
    attempt "unlink the socket ($socket)" unlink -- "$socket"
fi

# The daemon's process. Another pid namespace (the agents' own container) hides it, which is
# as good as a refusal; CI runs in one namespace and names the pid.
pid=${WALL_DAEMON_PID:-}
if [[ -z $pid ]]; then
    for comm in /proc/[0-9]*/comm; do
        if [[ $(cat -- "$comm" 2>/dev/null) == consentd ]]; then
            candidate=${comm#/proc/}
            candidate=${candidate%/comm}
            # The daemon, not a client (`consentd ask` of this or another agent).
            if tr '\0' ' ' <"/proc/$candidate/cmdline" 2>/dev/null | grep -q ' serve '; then
                pid=$candidate
                break
            fi
        fi
    done
fi
if [[ -z $pid ]]; then
    if [[ $strict == 1 ]]; then
        error "signal the daemon: no consentd process visible (set WALL_DAEMON_PID)"
    else
        echo "absent   signal the daemon: no consentd process visible (another pid namespace)"
    fi
else
    attempt "signal the daemon (kill -0 $pid)" kill -0 "$pid"
    if [[ ${holes[*]-} != *"kill -0"* ]]; then
        attempt "stop the daemon (kill -TERM $pid)" kill -TERM "$pid"
    fi
fi

# The category commands: whoever can read a script can run it through its interpreter, so
# reading counts as running. Executed for real only when both are refused, to see the refusal.
if [[ ${#commands[@]} -eq 0 && $strict == 1 ]]; then
    error "run a category command: none given (set WALL_COMMANDS)"
fi
for cmd in "${commands[@]}"; do
    attempt "read the category command $cmd" try_read "$cmd"
    if [[ -x $cmd ]]; then
        hole "execute the category command $cmd (it is executable for uid $me)"
    elif [[ ${holes[*]-} != *"command $cmd"* ]]; then
        attempt "run the category command $cmd" "$cmd" </dev/null
    fi
done

# The one thing an agent may do: ask. `list` changes nothing and shows only its own records.
answer=""
if command -v "$client" >/dev/null 2>&1; then
    answer=$(CONSENTD_SOCKET=$socket "$client" list --json 2>&1 | tail -n 1) || true
elif command -v python3 >/dev/null 2>&1; then
    answer=$(python3 - "$socket" <<'PY' 2>&1
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b'{"v":1,"op":"list","cursor":null}\n')
print(s.makefile().read().splitlines()[-1])
PY
    ) || true
else
    error "ask over the socket: neither $client nor python3 is available to try"
fi
if [[ $answer == *'"records":'* ]]; then
    echo "allowed  ask over the socket ($socket)"
elif [[ $answer == *peer_not_allowed* ]]; then
    error "ask over the socket: connected, but uid $me is not in [client] allowed_uids"
elif [[ -n $answer ]]; then
    error "ask over the socket ($socket): ${answer}"
fi

if [[ ${#holes[@]} -gt 0 || ${#errors[@]} -gt 0 ]]; then
    {
        echo
        echo "THE WALL DOES NOT HOLD: ${#holes[@]} hole(s), ${#errors[@]} error(s)"
        for h in "${holes[@]}"; do echo "  hole: $h"; done
        for e in "${errors[@]}"; do echo "  error: $e"; done
    } >&2
    exit 1
fi
echo "the wall holds: every attempt was blocked, and the socket answers"
