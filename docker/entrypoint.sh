#!/usr/bin/env bash
# The image's entrypoint: lays out consentd's users and directories with the modes the wall
# depends on, then runs consentd as its own user with every privilege dropped.
#
#   consentd-entrypoint [serve]            set up, then `consentd serve --config $CONSENTD_CONFIG`
#   consentd-entrypoint ARGS...            set up, then `consentd ARGS...` as the daemon user
#
# It starts as root only because creating users and chowning directories needs root; nothing
# runs as root after the final exec. The layout (who owns what, which modes) lives in
# `consentd_setup` alone: .ci/wall-test sources this file and calls the same function against a
# throwaway root, so what CI probes is what the image does.
#
# Settings (environment; none of them is secret):
#   CONSENTD_USER         the daemon's user and group            (consentd)
#   CONSENTD_UID          its uid, when it must match a volume    (chosen by useradd)
#   CONSENTD_AGENTS_GROUP the group whose members may use the socket (consent-agents)
#   CONSENTD_AGENTS_GID   its gid: the agents' containers must use the same number
#   CONSENTD_CONFIG       the config file                         (/etc/consentd/config.toml)
#   CONSENTD_STATE_DIR    paths.state_dir of that config          (/var/lib/consentd)
#   CONSENTD_JOURNAL_DIR  the directory of paths.journal          (/var/log/consentd)
#   CONSENTD_RUNTIME_DIR  the directory of paths.socket           (/run/consentd)
#   CONSENTD_TOKEN_FILE   telegram.token_file of that config      (/run/secrets/bot-token)
#   CONSENTD_LIBEXEC_DIR  the category commands                   (/usr/lib/consentd)
#   CONSENTD_BIN          the binary                              (/usr/local/bin/consentd)
#   CONSENTD_LOG          the daemon's log filter                 (info)
set -euo pipefail

: "${CONSENTD_USER:=consentd}"
: "${CONSENTD_UID:=}"
: "${CONSENTD_AGENTS_GROUP:=consent-agents}"
: "${CONSENTD_AGENTS_GID:=}"
: "${CONSENTD_CONFIG:=/etc/consentd/config.toml}"
: "${CONSENTD_STATE_DIR:=/var/lib/consentd}"
: "${CONSENTD_JOURNAL_DIR:=/var/log/consentd}"
: "${CONSENTD_RUNTIME_DIR:=/run/consentd}"
: "${CONSENTD_TOKEN_FILE:=/run/secrets/bot-token}"
: "${CONSENTD_LIBEXEC_DIR:=/usr/lib/consentd}"
: "${CONSENTD_BIN:=/usr/local/bin/consentd}"
: "${CONSENTD_LOG:=info}"

consentd_die() {
    echo "consentd-entrypoint: $*" >&2
    exit 1
}

# Who owns the daemon's files: its user, or root for CONSENTD_ROOT_DAEMON=1 (see consentd_drop).
consentd_owner() {
    if [[ ${CONSENTD_ROOT_DAEMON:-0} == 1 ]]; then echo root; else echo "$CONSENTD_USER"; fi
}

# Creates the daemon's user and the agents' group (if missing) and lays out the directories:
#   state dir    0700 daemon:daemon   database, HMAC key, attachment copies
#   journal dir  2750 daemon:group    the journal is created 0640; setgid, so its group is the
#                                     daemon user's group: members (operators) may read and
#                                     verify it, nobody may write it
#   runtime dir  2750 daemon:agents   the agents may reach the socket, never add or remove a
#                                     name in it; setgid, so the socket the daemon binds (0660
#                                     through its umask) gets the agents' group
#   commands     0750 root:group      category commands: run by the daemon, not by the agents
# "daemon" is the daemon's user, or root with CONSENTD_ROOT_DAEMON=1; "group" is always the
# daemon user's group. With CONSENTD_ROOT_DAEMON=1 the commands' modes are left as the image
# has them: each must be executable by its category's run_as user, which only the config says.
consentd_setup() {
    local user=$CONSENTD_USER agents=$CONSENTD_AGENTS_GROUP owner
    owner=$(consentd_owner)
    if ! getent group "$agents" >/dev/null; then
        groupadd --system ${CONSENTD_AGENTS_GID:+--gid "$CONSENTD_AGENTS_GID"} "$agents"
    fi
    if ! getent passwd "$user" >/dev/null; then
        getent group "$user" >/dev/null || groupadd --system "$user"
        # No home and no shell: nobody logs in as the daemon.
        useradd --system --gid "$user" ${CONSENTD_UID:+--uid "$CONSENTD_UID"} \
            --no-create-home --home-dir "$CONSENTD_STATE_DIR" --shell /usr/sbin/nologin "$user"
    fi
    # install -d also fixes the owner and mode of a directory that already exists (a volume).
    install -d -o "$owner" -g "$owner" -m 0700 "$CONSENTD_STATE_DIR"
    install -d -o "$owner" -g "$user" -m 2750 "$CONSENTD_JOURNAL_DIR"
    install -d -o "$owner" -g "$agents" -m 2750 "$CONSENTD_RUNTIME_DIR"
    if [[ $owner != root && -d $CONSENTD_LIBEXEC_DIR ]]; then
        chown -R "root:$user" "$CONSENTD_LIBEXEC_DIR"
        chmod -R u=rwX,g=rX,o= "$CONSENTD_LIBEXEC_DIR"
    fi
}

# Sets CONSENTD_DROP, the command prefix that runs what follows as the daemon with nothing of
# root left: no capabilities (the bounding set too, so none can be regained), no_new_privs (no
# setuid binary can raise it again), only the user's own groups, and an environment of our
# choosing instead of the container's.
#
# With CONSENTD_ROOT_DAEMON=1 (categories that set `run_as`, which needs root to switch users)
# the daemon keeps uid 0 but only the capabilities a run needs: SETUID/SETGID to switch,
# CHOWN for the run directory and the attachment copies it hands over, DAC_OVERRIDE to fill
# and remove that directory once it belongs to the command's user, KILL for the command's
# process group (a timeout, and what the command leaves running).
consentd_drop() {
    local envs=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$CONSENTD_STATE_DIR"
        CONSENTD_LOG="$CONSENTD_LOG" ${TMPDIR:+"TMPDIR=$TMPDIR"})
    if [[ ${CONSENTD_ROOT_DAEMON:-0} == 1 ]]; then
        CONSENTD_DROP=(setpriv --inh-caps=-all --no-new-privs
            "--bounding-set=-all,+setuid,+setgid,+chown,+dac_override,+kill"
            "${envs[@]}")
    else
        CONSENTD_DROP=(setpriv --reuid="$CONSENTD_USER" --regid="$CONSENTD_USER" --init-groups
            --inh-caps=-all --bounding-set=-all --no-new-privs "${envs[@]}")
    fi
}

# The bot token comes from a secret file: it must be there, be a plain file, be readable by the
# daemon, and by nobody else. It is never read here, never copied, never put in the environment.
consentd_check_token() {
    local file=$CONSENTD_TOKEN_FILE mode
    [[ -f $file ]] || consentd_die "no bot token at $file: mount it as a secret (see docs/OPERATOR.md)"
    mode=$(stat -L -c '%a' "$file")
    if (( 8#$mode & 8#077 )); then
        consentd_die "$file is mode $mode: the bot token must be readable by the daemon alone (0400 or 0600)"
    fi
    consentd_drop
    "${CONSENTD_DROP[@]}" test -r "$file" ||
        consentd_die "the daemon cannot read $file: give it to uid $(id -u "$(consentd_owner)") (CONSENTD_UID pins that number)"
}

consentd_main() {
    [[ $(id -u) == 0 ]] || consentd_die "start as root: the entrypoint sets up directories, then drops to $CONSENTD_USER"
    # A token in the environment would be visible to `docker inspect` and to anything that can
    # read the process's environment; refuse it rather than pass it on.
    [[ -z ${CONSENTD_BOT_TOKEN:-} ]] || consentd_die "CONSENTD_BOT_TOKEN is set: pass the token as a secret file instead"
    consentd_setup
    consentd_drop
    if [[ $# -eq 0 || $1 == serve ]]; then
        consentd_check_token
        "${CONSENTD_DROP[@]}" "$CONSENTD_BIN" check-config "$CONSENTD_CONFIG" >/dev/null
        exec "${CONSENTD_DROP[@]}" "$CONSENTD_BIN" serve --config "$CONSENTD_CONFIG"
    fi
    exec "${CONSENTD_DROP[@]}" "$CONSENTD_BIN" "$@"
}

# Sourced (by .ci/wall-test), it only defines the functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    consentd_main "$@"
fi
