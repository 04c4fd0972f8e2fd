#!/usr/bin/env bash
# Installs consentd as a systemd service, from this source tree: checks what the build needs,
# builds the shipped (`dist`) binary, creates the daemon's user and the agents' group, and puts
# the binary, the unit, the example config and an empty token file in place with their owners
# and modes. Run it again at any time: what is already right is left as it is, an existing
# config or token is never overwritten, and the last line says whether anything changed.
#
#   sudo packaging/install.sh                    # build and install on this machine
#   sudo packaging/install.sh --binary FILE      # install a binary built elsewhere
#   packaging/install.sh --root DIR --binary F   # lay it all out under DIR (images, tests)
#
# docs/OPERATOR.md ("Install") explains each step; "Upgrading" says how to replace the binary.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=/
binary=""
changed=0

usage() {
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}

while (($#)); do
    case $1 in
    --root) root=${2:?--root needs a directory}; shift 2 ;;
    --binary) binary=${2:?--binary needs a file}; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "install.sh: unknown argument \"$1\" (see --help)" >&2; exit 2 ;;
    esac
done
root=${root%/}

say() { printf '%s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

# --- what the build and the install need ----------------------------------------------------

# The Rust version Cargo.toml asks for (`rust-version`), so the message names it exactly.
wanted_rust=$(sed -n 's/^rust-version *= *"\(.*\)"/\1/p' "$here/Cargo.toml" | head -n 1)

version_at_least() { # $1 >= $2, both dotted numbers
    [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1) == "$2" ]]
}

# Runs a build step as the user who ran sudo, never as root: the source tree (its build.rs,
# its .cargo/config.toml) is theirs, and whatever could write it must not get root by it. A
# login shell, so their own toolchain (~/.cargo/bin) is on PATH.
as_builder() {
    if [[ $(id -u) -eq 0 && -n ${SUDO_USER:-} && $SUDO_USER != root ]]; then
        sudo -u "$SUDO_USER" -H bash -lc 'cd "$1" && shift && "$@"' bash "$here" "$@"
    else
        (cd "$here" && "$@")
    fi
}

check_prerequisites() {
    local missing=()
    if [[ -z $binary ]]; then
        if ! as_builder bash -c 'command -v cargo' >/dev/null 2>&1; then
            missing+=("cargo and rustc $wanted_rust or newer: https://rustup.rs, then \`rustup toolchain install stable\`")
        else
            local have
            have=$(as_builder rustc --version 2>/dev/null | awk '{print $2}')
            version_at_least "${have:-0}" "$wanted_rust" ||
                missing+=("rustc $wanted_rust or newer (found ${have:-none}): \`rustup update stable\`")
        fi
        as_builder bash -c 'command -v cc' >/dev/null 2>&1 ||
            missing+=("a C compiler for the bundled SQLite: \`apt-get install build-essential\` (Debian, Ubuntu) or \`dnf install gcc\`")
    fi
    command -v systemd-sysusers >/dev/null 2>&1 ||
        missing+=("systemd-sysusers: consentd installs as a systemd service (docs/OPERATOR.md, \"With Docker\", has the other way)")
    if [[ $root == "" && $(id -u) -ne 0 ]]; then
        missing+=("root: run it with sudo (it creates a user and writes under /etc and /usr/local)")
    fi
    if ((${#missing[@]})); then
        printf 'install.sh: missing:\n' >&2
        printf '  - %s\n' "${missing[@]}" >&2
        exit 1
    fi
}

# --- each step says what it changed, and changes nothing that is already right -------------

owner_of() { stat -c '%U:%G %a' -- "$1"; }

# put SRC DEST MODE OWNER:GROUP: copies SRC to DEST unless it is already there, same bytes,
# same mode and owner. DEST is replaced by a rename, so a running daemon never sees half a file.
put() {
    local src=$1 dest=$2 mode=$3 owner=$4
    if [[ -f $dest ]] && cmp -s -- "$src" "$dest" && [[ $(owner_of "$dest") == "${owner} ${mode#0}" ]]; then
        return
    fi
    install -D -m "$mode" -o "${owner%%:*}" -g "${owner##*:}" -- "$src" "$dest.new"
    mv -f -- "$dest.new" "$dest"
    say "installed ${dest#"$root"}"
    changed=1
}

# keep SRC DEST MODE OWNER:GROUP: like put, but never replaces a DEST that exists (the owner's
# own config); only its mode and owner are set right.
keep() {
    local src=$1 dest=$2 mode=$3 owner=$4
    if [[ ! -e $dest ]]; then
        put "$src" "$dest" "$mode" "$owner"
        return
    fi
    settle "$dest" "$mode" "$owner"
}

# settle PATH MODE OWNER:GROUP: sets the mode and owner of PATH when they differ.
settle() {
    local path=$1 mode=$2 owner=$3
    [[ $(owner_of "$path") == "${owner} ${mode#0}" ]] && return
    chown -- "$owner" "$path"
    chmod -- "$mode" "$path"
    say "set ${path#"$root"} to $mode $owner"
    changed=1
}

directory() { # PATH MODE OWNER:GROUP
    if [[ ! -d $1 ]]; then
        install -d -m "$2" -o "${3%%:*}" -g "${3##*:}" -- "$1"
        say "made ${1#"$root"}/"
        changed=1
        return
    fi
    settle "$1" "$2" "$3"
}

# --- the steps --------------------------------------------------------------------------------

build() {
    say "building the dist binary as ${SUDO_USER:-$(id -un)} (a few minutes; \`cargo build --profile dist\`)"
    as_builder cargo build --locked --profile dist --bin consentd --quiet
    binary="${CARGO_TARGET_DIR:-$here/target}/dist/consentd"
}

# The machine's (or the root's) users and groups, as one digest: what sysusers may change.
accounts() {
    local file
    for file in "$root/etc/passwd" "$root/etc/group"; do
        if [[ -f $file ]]; then cat -- "$file"; fi
    done | sha256sum
}

users() {
    local before after
    before=$(accounts)
    put "$here/packaging/systemd/consentd.sysusers" "$root/usr/lib/sysusers.d/consentd.conf" 0644 root:root
    if [[ $root == "" ]]; then
        systemd-sysusers consentd.conf
    else
        # sysusers writes the root's own /etc/passwd and /etc/group, never the machine's.
        mkdir -p -- "$root/etc"
        systemd-sysusers --root="$root" consentd.conf
    fi
    after=$(accounts)
    if [[ $before != "$after" ]]; then
        say "created the user consentd and the group consent-agents"
        changed=1
    fi
}

files() {
    put "$binary" "$root/usr/local/bin/consentd" 0755 root:root
    put "$here/packaging/systemd/consentd.service" "$root/etc/systemd/system/consentd.service" 0644 root:root
    directory "$root/etc/consentd" 0755 root:root
    keep "$here/config.toml" "$root/etc/consentd/config.toml" 0644 root:root
    # The token: readable by root alone; systemd hands the service its own copy (LoadCredential=).
    if [[ ! -e $root/etc/consentd/bot-token ]]; then
        put /dev/null "$root/etc/consentd/bot-token" 0600 root:root
    else
        settle "$root/etc/consentd/bot-token" 0600 root:root
    fi
}

check() {
    local out
    if ! out=$("$root/usr/local/bin/consentd" check-config --file-only "$root/etc/consentd/config.toml" 2>&1); then
        printf '%s\n' "$out" >&2
        die "$root/etc/consentd/config.toml has the problems above: fix them and run install.sh again"
    fi
    if [[ $root == "" ]] && command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
        ((changed)) && systemctl daemon-reload
    fi
}

next_steps() {
    say ""
    say "Next:"
    [[ -s $root/etc/consentd/bot-token ]] ||
        say "  sudoedit /etc/consentd/bot-token            # paste the token from @BotFather"
    cat <<'EOF'
  sudo usermod -aG consent-agents AGENT_USER   # each agent's user may then use the socket
  sudo systemctl enable --now consentd
  sudo -u consentd consentd pair --config /etc/consentd/config.toml
Then turn your categories on in the chat (/categories) and check it all with
  consentd doctor --config /etc/consentd/config.toml
EOF
}

check_prerequisites
[[ -n $binary ]] || build
[[ -x $binary ]] || die "$binary is not an executable file"
users
files
check
if ((changed)); then
    say "consentd is installed under ${root:-/}"
else
    say "nothing to change: consentd is installed under ${root:-/} as it should be"
fi
next_steps
