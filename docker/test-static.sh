#!/usr/bin/env bash
# Static checks of the packaging, for a machine without a container engine (CI has none, so
# the image itself is never built here): shellcheck on every shell script in the repository;
# the Dockerfile's stages, its user and that no secret is baked into a layer; the entrypoint's
# privilege drop; the systemd unit (systemd-analyze verify, and an exposure ceiling from
# systemd-analyze security); and the example configs (consentd check-config, when built).
#
#   docker/test-static.sh             (CONSENTD_BIN=path/to/consentd for the config checks)
set -euo pipefail
cd "$(dirname "$0")/.."

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
pass() { echo "ok: $*"; }

# --- shell scripts -------------------------------------------------------------------------
# Every tracked or new file that is a shell script by name or by its first line.
scripts=()
while IFS= read -r -d '' file; do
    [[ -f $file ]] || continue
    if [[ $file == *.sh ]] || head -n 1 -- "$file" | grep -qE '^#!.*(/|env )(ba|da)?sh\b'; then
        scripts+=("$file")
    fi
done < <(git ls-files -z --cached --others --exclude-standard)
if [[ ${#scripts[@]} -eq 0 ]]; then
    fail "found no shell scripts: is this the repository?"
elif shellcheck -x "${scripts[@]}"; then
    pass "shellcheck: ${scripts[*]}"
else
    fail "shellcheck found problems (above)"
fi

# --- Dockerfile ----------------------------------------------------------------------------
dockerfile=docker/Dockerfile
# One instruction a line: continuations joined, comments and blank lines dropped.
instructions=$(sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' "$dockerfile" |
    sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta')
froms=$(grep -ciE '^FROM ' <<<"$instructions")
first_stage=$(awk 'toupper($1)=="FROM"{n++} n==1' <<<"$instructions")
last_stage=$(awk 'toupper($1)=="FROM"{n++; stage=""} {stage = stage $0 "\n"} END{printf "%s", stage}' <<<"$instructions")

if [[ $froms -ge 2 ]]; then pass "Dockerfile: $froms stages"; else fail "Dockerfile: one stage; want a build stage and a runtime stage"; fi
if grep -qiE '^FROM [^ ]+ AS build$' <<<"$first_stage" &&
    grep -qE '^RUN .*cargo build' <<<"$first_stage" &&
    grep -E '^RUN .*cargo build' <<<"$first_stage" | grep -q -- '--locked' &&
    grep -E '^RUN .*cargo build' <<<"$first_stage" | grep -q -- '--profile dist' &&
    ! grep -E '^RUN .*cargo build' <<<"$first_stage" | grep -q -- 'test-hooks'; then
    pass "Dockerfile: the build stage runs cargo build --locked --profile dist, without test hooks"
else
    fail "Dockerfile: the first stage must be 'AS build' and run cargo build --locked --profile dist, without test-hooks"
fi
# Without build.rs the image's binary would build, but without its packed relocations.
if grep -qE '^COPY [^-].* build\.rs( |$)' <<<"$first_stage"; then
    pass "Dockerfile: the build stage has build.rs"
else
    fail "Dockerfile: the build stage must COPY build.rs (the link options of the binary)"
fi
if grep -qiE '^FROM debian:[^ ]*-slim( |$)' <<<"$last_stage"; then
    pass "Dockerfile: the runtime stage is Debian slim"
else
    fail "Dockerfile: the runtime stage must be FROM debian:*-slim"
fi
if grep -qE '^COPY --from=build .*/target/dist/consentd ' <<<"$last_stage"; then
    pass "Dockerfile: the runtime stage takes only the built binary from the build stage"
else
    fail "Dockerfile: the runtime stage must COPY --from=build the dist binary"
fi
if grep -qE '^RUN .*cargo' <<<"$last_stage"; then
    fail "Dockerfile: the runtime stage runs cargo; the toolchain belongs to the build stage"
fi

# Who the daemon runs as: a USER that is not root, or an entrypoint that drops to consentd.
user_line=$(grep -iE '^USER ' <<<"$last_stage" | tail -n 1 || true)
if [[ -n $user_line && ! $user_line =~ ^USER[[:space:]]+(root|0)(:|$) ]]; then
    pass "Dockerfile: runs as $user_line"
elif grep -qE '^ENTRYPOINT .*consentd-entrypoint' <<<"$last_stage" &&
    grep -qE '^COPY docker/entrypoint.sh /usr/local/bin/consentd-entrypoint$' <<<"$last_stage"; then
    entry=docker/entrypoint.sh
    missing=()
    # shellcheck disable=SC2016 # literal text looked for in the entrypoint, not expanded here
    for needle in '--reuid="$CONSENTD_USER"' '--no-new-privs' '--bounding-set=-all' \
        '--inh-caps=-all' 'exec "${CONSENTD_DROP[@]}" "$CONSENTD_BIN" serve'; do
        grep -qF -- "$needle" "$entry" || missing+=("$needle")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        pass "Dockerfile: the entrypoint drops to the consentd user (setpriv, no capabilities, no_new_privs)"
    else
        fail "docker/entrypoint.sh: the privilege drop lacks ${missing[*]}"
    fi
else
    fail "Dockerfile: no non-root USER and no entrypoint that drops privileges"
fi

# No secret in any layer: nothing secret-looking set, passed as a build argument, or copied.
secretish='(token|secret|passw|credential|private|api[_-]?key|\.key\b|\.pem\b|\.env\b)'
bad=$(grep -iE '^(ENV|ARG) ' <<<"$instructions" | grep -iE "$secretish" || true)
[[ -z $bad ]] || fail "Dockerfile: a secret-looking ENV or ARG: $bad"
bad=$(grep -iE '^(COPY|ADD) ' <<<"$instructions" | grep -iE "$secretish" || true)
[[ -z $bad ]] || fail "Dockerfile: a secret-looking file copied into a layer: $bad"
bad=$(grep -iE '^ADD ' <<<"$instructions" || true)
[[ -z $bad ]] || fail "Dockerfile: ADD (it fetches URLs and unpacks archives); use COPY: $bad"
if [[ -z $(grep -iE '^(ENV|ARG|COPY|ADD) ' <<<"$instructions" | grep -iE "$secretish" || true) ]]; then
    pass "Dockerfile: no secret in an ENV, an ARG or a copied file"
fi
# The build context itself leaves secrets out, so a careless COPY . could not take one.
for pattern in '**/*.env' '**/bot-token' '**/*.key' 'target' '.git'; do
    grep -qxF -- "$pattern" .dockerignore || fail ".dockerignore does not exclude $pattern"
done
pass ".dockerignore keeps build output, history and secret-looking files out of the context"
if grep -qF 'CONSENTD_BOT_TOKEN is set' docker/entrypoint.sh; then
    pass "the entrypoint refuses a token passed in the environment"
else
    fail "docker/entrypoint.sh must refuse CONSENTD_BOT_TOKEN in the environment"
fi

# --- systemd ---------------------------------------------------------------------------------
unit=packaging/systemd/consentd.service
for directive in 'User=consentd' 'RuntimeDirectory=consentd' 'StateDirectory=consentd' \
    'LoadCredential=bot-token:' 'ProtectSystem=strict' 'NoNewPrivileges=yes' \
    'CapabilityBoundingSet=' 'ProtectHome=yes' 'PrivateTmp=yes' 'PrivateDevices=yes' \
    'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' 'SystemCallFilter=@system-service' \
    'UMask=0077' 'MemoryDenyWriteExecute=yes' 'LockPersonality=yes' 'KillMode=mixed'; do
    grep -qE "^${directive}" "$unit" || fail "$unit lacks $directive"
done
if command -v systemd-analyze >/dev/null; then
    # verify wants ExecStart's program to exist: a copy points it at one that does.
    sdtmp=$(mktemp -d)
    trap 'rm -rf -- "$sdtmp"' EXIT
    mkdir -p "$sdtmp/plain" "$sdtmp/run-as/consentd.service.d"
    sed 's|^ExecStart=/usr/local/bin/consentd |ExecStart=/bin/true |' "$unit" >"$sdtmp/plain/consentd.service"
    cp "$sdtmp/plain/consentd.service" "$sdtmp/run-as/consentd.service"
    cp packaging/systemd/run-as.conf "$sdtmp/run-as/consentd.service.d/run-as.conf"
    # Exposure ceilings in tenths (systemd-analyze security's scale 0-10): 1.4 and 2.6 today.
    for variant in plain:20 run-as:30; do
        dir=${variant%%:*} ceiling=${variant##*:}
        out=$(cd "$sdtmp/$dir" && systemd-analyze verify ./consentd.service 2>&1) ||
            fail "systemd-analyze verify ($dir): $out"
        [[ -z $out ]] || fail "systemd-analyze verify ($dir) warns: $out"
        exposure=$(cd "$sdtmp/$dir" && systemd-analyze security --offline=true \
            --threshold="$ceiling" ./consentd.service 2>&1) || fail "systemd-analyze security ($dir) over $ceiling/100: $(tail -n 1 <<<"$exposure")"
        pass "systemd ($dir): verified; $(grep -o 'Overall exposure level.*' <<<"$exposure")"
    done
else
    fail "systemd-analyze is not installed (apt-get install systemd)"
fi

# --- configs ---------------------------------------------------------------------------------
bin=${CONSENTD_BIN:-target/debug/consentd}
if [[ -x $bin ]]; then
    for config in config.toml docker/config.toml; do
        # Written for the image or an installed system, not this machine: the file's rules only.
        if out=$("$bin" check-config --file-only "$config" 2>&1); then pass "$config: $out"; else fail "$config: $out"; fi
    done
    if ! grep -qF 'token_file = "/run/secrets/bot-token"' docker/config.toml; then
        fail "docker/config.toml must take the token from /run/secrets/bot-token"
    fi
else
    echo "note: $bin is not built; the example configs were not checked"
fi

if [[ $failures -gt 0 ]]; then
    echo "test-static: $failures failure(s)" >&2
    exit 1
fi
echo "test-static: ok"
