#!/usr/bin/env python3
"""A pre-tool-use hook that routes an agent's outside actions through consentd.

Agent runtimes with hooks run a command before each tool call, give it the call as JSON on
stdin (``{"tool_name": ..., "tool_input": {...}}``) and read its exit status: 0 lets the call
run, 2 blocks it and hands stderr back to the model as the reason. This hook:

- routes the tools named in ROUTES (or in the JSON file ``$CONSENTD_HOOK_ROUTES``) through
  ``consentd ask``: the owner sees the card, consentd runs the category's command if the owner
  says yes, and the tool call itself is always blocked, with what came of the ask as the reason
  (the action already ran, or it must not). The agent never performs the action itself;
- blocks shell commands that reach out of the machine by themselves (curl, wget, ssh, git push,
  ...), telling the agent to ask instead;
- lets everything else through, ``consentd ask``/``status``/``list`` included.

The hook is a convenience for the agent, not the wall: the agent's user must not hold the
services' keys in the first place (docs/OPERATOR.md), so a command this hook misses still has
nothing to post with.

A route maps a tool's input to an ask::

    {"publish_post": {"kind": "publish_x", "target": "account", "text": "text",
                      "cost_usd": "cost", "fields": {"reply_to": "in_reply_to"}}}

Each value names the tool input's key to take; ``kind`` is the category itself.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from typing import Any, Dict, List

#: Tool name -> how its input becomes an ask. An example: edit it, or point
#: $CONSENTD_HOOK_ROUTES at a JSON file of the same shape.
ROUTES: Dict[str, Dict[str, Any]] = {
    "publish_post": {"kind": "publish_zernio", "target": "account", "text": "text"},
}

#: Shell tools whose input carries a command line.
SHELL_TOOLS = {"Bash", "bash", "shell", "run_shell_command", "exec"}

#: Programs that talk to the outside world on their own.
OUTBOUND = {
    "curl", "wget", "http", "https", "xh", "ssh", "scp", "sftp", "rsync", "nc", "ncat",
    "netcat", "socat", "telnet", "ftp", "gh", "aws", "gcloud", "az", "sendmail", "mail",
}
#: Subcommands that publish from otherwise local tools.
OUTBOUND_SUBCOMMANDS = {("git", "push"), ("npm", "publish"), ("cargo", "publish"),
                        ("twine", "upload"), ("docker", "push")}

BLOCK = 2


def routes() -> Dict[str, Dict[str, Any]]:
    path = os.environ.get("CONSENTD_HOOK_ROUTES")
    if not path:
        return ROUTES
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def ask_args(route: Dict[str, Any], tool_input: Dict[str, Any]) -> List[str]:
    """The `consentd ask` arguments for one routed call."""
    args = ["ask", "--json", "--kind", route["kind"]]
    for flag, key in (("--target", route.get("target")), ("--text", route.get("text")),
                      ("--cost-usd", route.get("cost_usd"))):
        if key and tool_input.get(key) is not None:
            args += [flag, str(tool_input[key])]
    for name, key in (route.get("fields") or {}).items():
        if tool_input.get(key) is not None:
            args += ["--field", f"{name}={tool_input[key]}"]
    return args


def route_through_consentd(route: Dict[str, Any], tool_input: Dict[str, Any]) -> int:
    consentd = os.environ.get("CONSENTD_BIN", "consentd")
    try:
        run = subprocess.run([consentd, *ask_args(route, tool_input)], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, check=False)
    except OSError as error:
        print(f"Blocked: this action goes through consentd, which could not be run: {error}",
              file=sys.stderr)
        return BLOCK
    lines = run.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except ValueError:
        answer = {}
    status = answer.get("status")
    record = answer.get("id", "?")
    if status == "executed":
        message = (f"Done through consentd (record {record}): the owner approved and it ran. "
                   f"Result: {answer.get('result', '')}. Do not run it again.")
    elif status == "refused":
        message = (f"consentd refused it ({answer.get('reason')}): {answer.get('message', '')}. "
                   "Fix the request or leave it.")
    elif status == "declined" and answer.get("message"):
        # The owner's reply to the declined card: what they want done instead.
        message = (f"The owner did not approve it (declined, record {record}) and said: "
                   f"{answer['message']}\nDo not retry it as it was; follow what they said.")
    elif status in ("declined", "expired"):
        message = (f"The owner did not approve it ({status}, record {record}). "
                   "Do not retry it, and do not do it another way.")
    elif status in ("failed", "outcome_unknown"):
        message = (f"It was approved, and its run ended {status} (record {record}). "
                   "Do not retry by yourself: tell the owner.")
    else:
        message = f"consentd could not take the ask: {run.stderr.strip() or run.stdout.strip()}"
    print(message, file=sys.stderr)
    return BLOCK


def outbound(command: str) -> str:
    """The first program in a shell command line that reaches out, or ''."""
    for segment in re.split(r"[;&|()\n]+|\$\(|`", command):
        try:
            words = shlex.split(segment, comments=True)
        except ValueError:
            words = segment.split()
        # Skip variable assignments and wrappers to find the program run.
        while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0])
                         or words[0] in ("sudo", "env", "nohup", "time", "command", "exec")):
            words = words[1:]
        if not words:
            continue
        program = os.path.basename(words[0])
        if program in OUTBOUND:
            return program
        if len(words) > 1 and (program, words[1]) in OUTBOUND_SUBCOMMANDS:
            return f"{program} {words[1]}"
    return ""


def main() -> int:
    try:
        call = json.load(sys.stdin)
        tool = call.get("tool_name", "")
        tool_input = call.get("tool_input") or {}
    except (ValueError, AttributeError):
        print("Blocked: the hook could not read the tool call", file=sys.stderr)
        return BLOCK
    route = routes().get(tool)
    if route is not None:
        return route_through_consentd(route, tool_input)
    if tool in SHELL_TOOLS:
        program = outbound(str(tool_input.get("command", "")))
        if program:
            print(f"Blocked: {program} reaches outside this machine. Actions in the owner's name "
                  "go through consentd: `consentd ask --kind KIND ...` (see `consentd ask "
                  "--help`); it shows the owner the exact action and runs it once approved.",
                  file=sys.stderr)
            return BLOCK
    return 0


if __name__ == "__main__":
    sys.exit(main())
