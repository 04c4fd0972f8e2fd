#!/bin/sh
# consentd-ask.sh: ask consentd for one action from a shell script, with the text on stdin.
#
#   printf '%s' "$post" | consentd-ask.sh --kind publish_x --target @mila_news
#
# Any `consentd ask` option may be given (--field, --attach, --urgent, --no-wait, --json, ...).
# Prints what `consentd ask` prints (the action's result on stdout when it ran) and exits with
# its codes: 0 executed, 1 could not talk to consentd, 2 usage, 3 refused, 4 declined,
# 5 expired, 6 failed, 7 outcome unknown, 8 pending (--no-wait).
#
# What it adds to `consentd ask`:
# - stdin, when it is not a terminal, is the text, byte for byte (the owner approves exactly
#   these bytes), so a trailing newline is kept, and consentd refuses it: a text may not end
#   with a blank line the owner cannot see. Send it with printf '%s', not echo. Empty stdin
#   means no text;
# - one idempotency key per invocation (unless --idempotency-key is given), and retries while
#   consentd cannot be reached (exit 1: restarting, socket not there yet), CONSENTD_ASK_RETRIES
#   times (default 5) after 1, 2, 4, 8, 16 s. With the same key a retry joins the record the
#   first try made, if it made one, instead of asking the owner twice.
#
# Needs the consentd binary ($CONSENTD_BIN, else `consentd` on PATH), mktemp and od.
set -eu

consentd=${CONSENTD_BIN:-consentd}
retries=${CONSENTD_ASK_RETRIES:-5}

has_text=no
has_key=no
for arg in "$@"; do
    case $arg in
        --text | --text=* | --text-file | --text-file=*) has_text=yes ;;
        --idempotency-key | --idempotency-key=*) has_key=yes ;;
    esac
done

text_file=""
cleanup() { [ -z "$text_file" ] || rm -f -- "$text_file"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$has_text" = no ] && [ ! -t 0 ]; then
    # A file, not a variable: command substitution would drop trailing newlines.
    text_file=$(mktemp)
    cat >"$text_file"
    if [ -s "$text_file" ]; then
        set -- "$@" --text-file "$text_file"
    fi
fi
if [ "$has_key" = no ]; then
    key="sh-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
    set -- "$@" --idempotency-key "$key"
fi

attempt=0
delay=1
while :; do
    status=0
    "$consentd" ask "$@" </dev/null || status=$?
    if [ "$status" -ne 1 ] || [ "$attempt" -ge "$retries" ]; then
        exit "$status"
    fi
    attempt=$((attempt + 1))
    echo "consentd-ask: consentd could not be reached; retry $attempt of $retries in ${delay}s" >&2
    sleep "$delay"
    delay=$((delay * 2))
done
