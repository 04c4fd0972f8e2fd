#!/usr/bin/env python3
"""A client for consentd's socket (the protocol in docs/PROTOCOL.md), standard library only.

As a library::

    from consentd_client import Client, attachment

    client = Client()  # $CONSENTD_SOCKET, else /run/consentd/consent.sock
    answer = client.ask("publish_x", target="@mila_news", text="Hello",
                        attachments=[attachment("cover.png")])
    if answer["status"] == "executed":
        print(answer["result"])

As a command, with the exit codes of ``consentd ask`` (0 executed or granted, 1 could not talk
to consentd, 2 usage, 3 refused, 4 declined, 5 expired, 6 failed, 7 outcome unknown,
8 pending). ``status`` exits with the same code for the record's state (8 while it is still
open; 1 when there is no such record), so ``status ID --wait && publish`` never takes a No for a
yes::

    consentd_client.py ask --kind publish_x --target @mila_news --text-file post.txt
    consentd_client.py mandate --kind publish_x --target @mila_news --days 7 \\
        --actions-per-day 10 --reason "the daily digest"    # a kind that never costs
    consentd_client.py mandate --kind generate_image --days 7 --usd-per-day 2.00 \\
        --actions-per-day 20    # a kind with no target: no --target
    consentd_client.py status r_... [--wait]
    consentd_client.py list [--cursor C]

Each request is one connection: one JSON line out, JSON lines back, the last one final. A
waiting request keeps its connection open (closing it, even half-way, ends the wait on the
daemon's side) and needs no time limit of its own: the daemon answers by the card's deadline.
"""

from __future__ import annotations

import argparse
import base64
import json
import mimetypes
import os
import socket
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Union

DEFAULT_SOCKET = "/run/consentd/consent.sock"

#: The exit code for each final status, as ``consentd ask`` and ``consentd mandate`` use them.
EXIT_CODES = {
    "executed": 0,
    "granted": 0,
    "refused": 3,
    "declined": 4,
    "expired": 5,
    "failed": 6,
    "outcome_unknown": 7,
    "pending": 8,
    "card_shown": 8,
    "running": 8,
    "withdrawn": 9,
    "approved": 0,
}
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_OPEN = 8

Money = Union[str, Decimal]
Line = Dict[str, Any]


class ConsentdError(Exception):
    """consentd could not be reached, or answered something that is not the protocol."""


def socket_path(path: Optional[str] = None) -> str:
    """The socket: ``path``, else ``$CONSENTD_SOCKET``, else the default."""
    return path or os.environ.get("CONSENTD_SOCKET") or DEFAULT_SOCKET


def money(value: Optional[Money]) -> Optional[str]:
    """A dollar amount as the protocol wants it: a decimal string. Floats are refused, since
    0.1 + 0.2 is not 0.3 and the owner approves an exact amount."""
    if value is None:
        return None
    if isinstance(value, float):
        raise TypeError("give money as a str or a Decimal, not a float")
    return str(value)


def attachment(path: Union[str, Path], media_type: Optional[str] = None,
               name: Optional[str] = None) -> Dict[str, str]:
    """An attachment from a file: its name, media type (guessed from the name unless given)
    and bytes. The daemon copies the bytes at once; what runs is what the owner saw."""
    path = Path(path)
    guessed = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return {
        "name": name or path.name,
        "media_type": media_type or guessed,
        "data_b64": base64.b64encode(path.read_bytes()).decode("ascii"),
    }


def exit_code(answer: Line) -> int:
    """The exit code ``consentd ask`` would give this final answer."""
    return EXIT_CODES.get(str(answer.get("status")), EXIT_ERROR)


def record_exit_code(record: Line) -> int:
    """The exit code ``consentd status`` gives a record: the ask's code for its state once the
    record is final, 8 while it is open. ``final`` says which, since ``granted`` is final for a
    mandate but only a step for an action (it runs next); a daemon without it is taken at its
    status's word."""
    if record.get("final") is False:
        return EXIT_OPEN
    return exit_code(record)


def _no_daemon(path: str, error: OSError) -> str:
    """What failed when no daemon answered on ``path``, and what to check, in one line."""
    check = ("check that `consentd serve` is running and that $CONSENTD_SOCKET (or --socket) "
             "names the socket its config sets in paths.socket")
    if isinstance(error, FileNotFoundError):
        return f"cannot connect to consentd: there is no socket at {path}; {check}"
    if isinstance(error, ConnectionRefusedError):
        return (f"cannot connect to consentd: nothing is listening on {path}, a socket left by a "
                f"daemon that is not running; {check}")
    if isinstance(error, PermissionError):
        return (f"cannot connect to consentd: this user may not open {path}; it must be in the "
                f"socket's group (`ls -l {path}` shows it: consent-agents in the packaged setup), "
                "and log in again after being added")
    return f"cannot connect to consentd at {path}: {error.strerror or error}"


class Client:
    """One daemon's socket. Each call opens its own connection, so a Client may be shared."""

    def __init__(self, path: Optional[str] = None, timeout: Optional[float] = None) -> None:
        self.path = socket_path(path)
        # None: wait as long as the daemon keeps the connection open (a card's ttl, or longer
        # while a card waits for quiet hours to end).
        self.timeout = timeout

    def request(self, frame: Line, on_line: Optional[Callable[[Line], None]] = None) -> Line:
        """Sends one request and returns the final (last) answer line; ``on_line`` sees every
        line, the first ``pending`` one included."""
        data = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            sock.connect(self.path)
        except OSError as error:
            raise ConsentdError(_no_daemon(self.path, error)) from error
        last: Optional[Line] = None
        with sock:
            try:
                # The daemon may refuse and close before reading it all (a frame too large):
                # its answer is still there to read, so a failed send is not the end.
                sock.sendall(data + b"\n")
            except OSError:
                pass
            reader = sock.makefile("rb")
            while True:
                try:
                    raw = reader.readline()
                except ConnectionResetError:
                    # Linux resets a connection whose request the daemon did not read in full
                    # (a refusal sent first); the answer arrived before the reset.
                    if last is not None:
                        break
                    raise ConsentdError("consentd reset the connection without an answer")
                except OSError as error:
                    raise ConsentdError(f"lost the connection to consentd: {error}") from error
                if not raw:
                    break
                try:
                    line = json.loads(raw)
                except ValueError as error:
                    raise ConsentdError(f"consentd sent a line that is not JSON: {raw!r}") from error
                if on_line is not None:
                    on_line(line)
                last = line
        if last is None:
            raise ConsentdError("consentd closed the connection without an answer")
        return last

    def ask(self, kind: str, *, target: Optional[str] = None, text: Optional[str] = None,
            fields: Optional[Dict[str, str]] = None, cost_usd: Optional[Money] = None,
            attachments: Iterable[Dict[str, str]] = (), idempotency_key: Optional[str] = None,
            urgent: bool = False, wait: bool = True,
            on_line: Optional[Callable[[Line], None]] = None) -> Line:
        """Asks for one action. With ``wait`` the answer is final (executed, declined, expired,
        refused, failed, outcome_unknown); without it, ``pending`` with the record's id. A
        ``declined`` answer may carry the owner's reason as its ``message``."""
        frame: Line = {"v": 1, "op": "ask", "kind": kind}
        if target is not None:
            frame["target"] = target
        if text is not None:
            frame["text"] = text
        if fields:
            frame["fields"] = dict(fields)
        if cost_usd is not None:
            frame["cost_usd"] = money(cost_usd)
        attachments = list(attachments)
        if attachments:
            frame["attachments"] = attachments
        if idempotency_key is not None:
            frame["idempotency_key"] = idempotency_key
        frame["urgent"] = urgent
        frame["wait"] = wait
        return self.request(frame, on_line)

    def mandate(self, kind: str, targets: Optional[Iterable[str]], days: int,
                usd_per_day: Optional[Money], actions_per_day: int, *,
                reason: Optional[str] = None, wait: bool = True,
                on_line: Optional[Callable[[Line], None]] = None) -> Line:
        """Asks for a standing permission: asks of ``kind`` to one of ``targets`` within the
        day's money and count then run without a card, until the term ends or the owner
        stops it. Final: granted, declined, expired or refused (``mandate_terms``).

        A kind with no target takes no ``targets`` (``None`` or empty): its mandate covers that
        kind for any use. A kind that never costs takes no ``usd_per_day`` (``None``, or "0.00"):
        its mandate has no money term. A kind with a target, or one that costs, needs them."""
        frame: Line = {"v": 1, "op": "mandate", "kind": kind}
        targets = list(targets or [])
        if targets:
            frame["targets"] = targets
        frame["days"] = days
        if usd_per_day is not None:
            frame["usd_per_day"] = money(usd_per_day)
        frame["actions_per_day"] = actions_per_day
        if reason is not None:
            frame["reason"] = reason
        frame["wait"] = wait
        return self.request(frame, on_line)

    def status(self, record_id: str, wait: bool = False) -> Line:
        """One of this peer's records (its short fields, never its text)."""
        return self.request({"v": 1, "op": "status", "id": record_id, "wait": wait})

    def list(self, cursor: Optional[str] = None) -> Line:
        """One page of this peer's records, newest first: ``records`` and ``next_cursor``."""
        return self.request({"v": 1, "op": "list", "cursor": cursor})

    def records(self) -> Iterator[Line]:
        """Every one of this peer's records, newest first, page after page."""
        cursor: Optional[str] = None
        while True:
            page = self.list(cursor)
            if "records" not in page:
                raise ConsentdError(f"consentd refused the list: {page.get('message', page)}")
            yield from page["records"]
            cursor = page.get("next_cursor")
            if not cursor:
                return


# --- the command line ---------------------------------------------------------------------


def _out(text: Any) -> None:
    """A line on stdout. A reader that has gone (``| head -3``) is not an error: the command ends
    with its own exit code, as ``consentd`` does."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Python would fail again flushing stdout at exit: send what is left nowhere.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _report(answer: Line, as_json: bool) -> int:
    """Prints a final answer the way ``consentd ask`` does; returns the exit code."""
    status = answer.get("status")
    if as_json:
        _out(json.dumps(answer, ensure_ascii=False, separators=(",", ":")))
    elif status == "executed":
        if answer.get("result") is not None:
            _out(answer["result"])
        print(f"executed {answer.get('id')}", file=sys.stderr)
    elif status in ("pending", "card_shown", "running"):
        _out(answer.get("id"))
        print(f"{status}: see `consentd status {answer.get('id')}`", file=sys.stderr)
    elif status == "refused":
        print(f"refused ({answer.get('reason')}): {answer.get('message', '')}", file=sys.stderr)
    elif status == "declined" and answer.get("message"):
        # The owner's reason for the No, in their words: what to do differently.
        print(f"declined ({answer.get('id')}): {answer['message']}", file=sys.stderr)
    else:
        print(f"{status} ({answer.get('id')})", file=sys.stderr)
    return exit_code(answer)


def _progress(line: Line) -> None:
    if line.get("status") in ("pending", "card_shown"):
        print(f"waiting for the owner's answer on {line.get('id')}", file=sys.stderr)


def _field(value: str) -> tuple:
    name, sep, text = value.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{value!r}: expected NAME=VALUE")
    return name, text


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--socket", help=f"the socket (default: $CONSENTD_SOCKET, else {DEFAULT_SOCKET})")
    common.add_argument("--json", action="store_true", help="print the final answer as JSON")
    parser = argparse.ArgumentParser(prog="consentd_client.py", description=__doc__.split("\n")[0])
    ops = parser.add_subparsers(dest="op", required=True)

    ask = ops.add_parser("ask", parents=[common], help="ask for one action and wait for its outcome")
    ask.add_argument("--kind", required=True)
    ask.add_argument("--target")
    text = ask.add_mutually_exclusive_group()
    text.add_argument("--text")
    text.add_argument("--text-file", type=Path,
                      help="read the text from a file (UTF-8, byte for byte: a final newline "
                           "is refused)")
    ask.add_argument("--field", action="append", type=_field, default=[], metavar="NAME=VALUE")
    ask.add_argument("--cost-usd")
    ask.add_argument("--attach", action="append", type=Path, default=[], metavar="PATH")
    ask.add_argument("--idempotency-key")
    ask.add_argument("--urgent", action="store_true")
    ask.add_argument("--no-wait", action="store_true")

    mandate = ops.add_parser("mandate", parents=[common], help="ask for a standing permission")
    mandate.add_argument("--kind", required=True)
    mandate.add_argument("--target", action="append", default=[], dest="targets",
                         help="a target it covers (repeat for more); required for a kind with a "
                              "target, left out for a kind with none (it then covers any use)")
    mandate.add_argument("--days", type=int, required=True)
    mandate.add_argument("--usd-per-day",
                         help="the most it may spend a day; required for a kind that costs, left "
                              "out (or 0.00) for a kind that never does")
    mandate.add_argument("--actions-per-day", type=int, required=True)
    mandate.add_argument("--reason")
    mandate.add_argument("--no-wait", action="store_true")

    status = ops.add_parser("status", parents=[common], help="one of your records; exits as ask "
                            "would for its state (8 while it is open)")
    status.add_argument("id")
    status.add_argument("--wait", action="store_true", help="wait until it is final")

    listing = ops.add_parser("list", parents=[common], help="your records, newest first")
    listing.add_argument("--cursor")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code else 0
    client = Client(args.socket)
    try:
        if args.op == "ask":
            text = args.text
            if args.text_file is not None:
                text = args.text_file.read_bytes().decode("utf-8")
            fields = dict(args.field)
            if len(fields) != len(args.field):
                print("a --field is given twice", file=sys.stderr)
                return EXIT_USAGE
            answer = client.ask(
                args.kind, target=args.target, text=text, fields=fields,
                cost_usd=args.cost_usd, attachments=[attachment(p) for p in args.attach],
                idempotency_key=args.idempotency_key, urgent=args.urgent,
                wait=not args.no_wait, on_line=None if args.no_wait else _progress)
            return _report(answer, args.json)
        if args.op == "mandate":
            answer = client.mandate(
                args.kind, args.targets, args.days, args.usd_per_day, args.actions_per_day,
                reason=args.reason, wait=not args.no_wait,
                on_line=None if args.no_wait else _progress)
            return _report(answer, args.json)
        if args.op == "status":
            answer = client.status(args.id, wait=args.wait)
            found = "id" in answer
            if args.json:
                _out(json.dumps(answer, ensure_ascii=False, separators=(",", ":")))
            elif found:
                _out(_record_line(answer))
            else:
                print(answer.get("message", answer), file=sys.stderr)
            return record_exit_code(answer) if found else EXIT_ERROR
        answer = client.list(args.cursor)
        if args.json:
            _out(json.dumps(answer, ensure_ascii=False, separators=(",", ":")))
        else:
            for record in answer.get("records", []):
                _out(_record_line(record))
            if answer.get("next_cursor"):
                print(f"more: --cursor {answer['next_cursor']}", file=sys.stderr)
        return 0 if "records" in answer else EXIT_ERROR
    except (OSError, UnicodeDecodeError) as error:
        # Socket errors arrive as ConsentdError: this is a file named on the command line (the
        # text, an attachment) that cannot be read, as `consentd ask` counts it, a usage error.
        print(f"consentd_client: {error}", file=sys.stderr)
        return EXIT_USAGE
    except ConsentdError as error:
        print(f"consentd_client: {error}", file=sys.stderr)
        return EXIT_ERROR


def _record_line(record: Line) -> str:
    detail = record.get("result") or record.get("reason") or ""
    return "  ".join(str(record.get(k, "")) for k in ("id", "status", "kind", "created_at")) + (
        f"  {detail}" if detail else "")


if __name__ == "__main__":
    sys.exit(main())
