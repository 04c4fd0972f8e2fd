#!/usr/bin/env python3
"""Checks the shape of the code that docs/ARCHITECTURE.md promises, on the sources themselves.

- no function over 100 lines outside tests;
- no Rust file over 800 lines outside tests (a file's tests are its `#[cfg(test)] mod …` at the
  end, or a `tests.rs` / `*_tests.rs` file);
- no cycle among a crate's modules, by the paths their code names: inline (`crate::a::b`,
  `super::x`, `super::super::y`, `self::z`) and in `use` items with their groups expanded
  (`use super::{a, b::{c, d}}`); a child naming its parent is not a cycle, and comments do not count.
- no closure into the store from outside crates/consentd-store: no `.call(|…|` or
  `.call(move |…|` on a store, and no `Db` (`&Db`, `Db::`, `: Db`) named there, whatever the
  line breaks and spaces between the tokens (comments do not count).
- only the store writes: outside crates/consentd-store no `rusqlite` (or `libsqlite3_sys`) in
  code or as a dependency in a Cargo.toml, no `.sql` file, and no SQL statement that changes
  the database or its settings (`INSERT`, `REPLACE`, `UPDATE`, `DELETE`, `CREATE`, `DROP`,
  `ALTER`, `PRAGMA`, in any case) in a string literal; comments do not count, and a keyword
  counts only in the shape of a statement (`UPDATE t SET c =`, not "update the settings").

Run: python3 tools/structure.py            (exit 1 and a list when a rule is broken)
     python3 tools/structure.py --self-test (the checks against planted cases)
     python3 tools/structure.py --report   (also the longest functions and files)

It reads rustfmt-formatted code: a function ends at the first `}` at its own indentation.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = [
    "src",
    "crates/consentd-client/src",
    "crates/consentd-daemon/src",
    "crates/consentd-core/src",
    "crates/consentd-store/src",
    "crates/consentd-emulator/src",
]
MAX_FUNCTION_LINES = 100
MAX_FILE_LINES = 800
FN = re.compile(r"^(\s*)(pub(\([a-z]+\))? )?(async )?(const )?(unsafe )?fn (\w+)")


def is_test_file(name):
    return name == "tests.rs" or name.endswith("_tests.rs")


def rust_files(src):
    for directory, _, names in os.walk(os.path.join(ROOT, src)):
        for name in sorted(names):
            if name.endswith(".rs") and not is_test_file(name):
                yield os.path.join(directory, name)


def non_test_lines(path):
    """The file's lines up to its trailing test module."""
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]") and i + 1 < len(lines) and lines[i + 1].startswith("mod "):
            return lines[:i]
    return lines


def functions(lines):
    for i, line in enumerate(lines):
        match = FN.match(line)
        if not match or line.rstrip().endswith(";"):
            continue
        indent = match.group(1)
        for j in range(i + 1, len(lines)):
            if lines[j] == indent + "}":
                yield match.group(7), i + 1, j - i + 1
                break


def module_name(src, path):
    parts = os.path.relpath(path, os.path.join(ROOT, src))[:-3].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    return "::".join(parts)


def use_paths(code):
    """Every path a `use` item names, its groups expanded: `use super::{a, b::{c, d}};` names
    `super::a`, `super::b::c` and `super::b::d`."""
    for item in re.findall(r"\buse\s+([^;]+);", code):
        item = re.sub(r"\s*([{},:])\s*", r"\1", item.strip())
        yield from expand_use_tree(re.sub(r"\s+", " ", item))


def expand_use_tree(tree, prefix=""):
    brace = tree.find("{")
    if brace < 0:
        yield (prefix + tree).split(" ")[0]  # `a::b as c` names `a::b`
        return
    head, body = tree[:brace], tree[brace + 1 : tree.rindex("}")]
    depth, start = 0, 0
    for i, ch in enumerate(body + ","):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            part = body[start:i]
            start = i + 1
            if part == "self":
                yield (prefix + head).rstrip(":")
            elif part:
                yield from expand_use_tree(part, prefix + head)


def resolve(me, path):
    """The module segments a `crate::`, `super::` or `self::` path starts from, or None."""
    parts = [p for p in path.split("::") if p]
    if not parts:
        return None
    if parts[0] == "crate":
        return parts[1:]
    base = me.split("::") if me else []
    if parts[0] == "self":
        return base + parts[1:]
    if parts[0] != "super":
        return None
    while parts and parts[0] == "super":
        base = base[:-1]
        parts = parts[1:]
    return base + parts


def module_graph(src):
    files = {module_name(src, p): p for p in rust_files(src)}
    files.pop("lib", None)
    files.pop("main", None)
    graph = {}
    for me, path in files.items():
        code = "\n".join(l for l in non_test_lines(path) if not l.lstrip().startswith("//"))
        references = list(use_paths(code))
        # Paths written inline in the code, outside `use` items.
        references += re.findall(r"\b(?:crate|super|self)(?:::[a-z_0-9]+)+", code)
        named = set()
        for reference in references:
            parts = resolve(me, reference)
            for k in range(len(parts or []), 0, -1):
                if "::".join(parts[:k]) in files:
                    named.add("::".join(parts[:k]))
                    break
        graph[me] = {n for n in named if n != me and not me.startswith(n + "::")}
    return graph


def cycles(graph):
    """Tarjan's strongly connected components of more than one module."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    sys.setrecursionlimit(10_000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def self_test():
    """The cycle finder on planted cases: each must be found (or not) as stated."""
    import tempfile

    cases = [
        ("grouped super", {"m/mod.rs": "mod a; mod b;", "m/a.rs": "use super::{b, c};",
                           "m/b.rs": "use super::a::X;"}, [["m::a", "m::b"]]),
        ("nested crate group", {"a.rs": "use crate::{b::{self, Y}, c};", "b.rs": "use crate::a;"},
         [["a", "b"]]),
        ("super::super inline", {"p/mod.rs": "", "p/q/mod.rs": "", "p/q/r.rs": "fn f() { super::super::s::g() }",
                                 "p/s.rs": "use crate::p::q::r;"}, [["p::q::r", "p::s"]]),
        ("renamed import", {"a.rs": "use crate::b as other;", "b.rs": "pub(crate) use crate::a::Z;"},
         [["a", "b"]]),
        ("one way only", {"a.rs": "use super::{b};", "b.rs": "use std::{a};"}, []),
        ("commented out", {"a.rs": "// use crate::b;", "b.rs": "use crate::a;"}, []),
    ]
    failed = 0
    for name, tree, expected in cases:
        with tempfile.TemporaryDirectory() as root:
            for rel, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
                with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                    f.write(text + "\n")
            found = cycles(module_graph(root))
        if found != expected:
            failed += 1
            print(f"self-test {name}: found {found}, expected {expected}")
    failed += self_test_writes()
    if failed:
        sys.exit(1)
    print(f"structure self-test: {len(cases) + len(WRITES_CASES)} cases ok")


# Planted trees for "only the store writes": each with how many problems the check must report.
# Every case that expects a problem is reported by this check alone, so each fails without it.
WRITES_CASES = [
    ("a test opening the database", {"tests/t.rs": 'fn f() { rusqlite::Connection::open("x"); }'}, 1),
    ("a use item, split over lines", {"benches/b.rs": "use\n    rusqlite\n    ::params;"}, 1),
    ("the FFI crate in a fuzz target", {"fuzz/fuzz_targets/f.rs": "use libsqlite3_sys as ffi;"}, 1),
    ("a dependency of another crate", {"crates/consentd-daemon/Cargo.toml":
                                       "[dev-dependencies]\nrusqlite = { workspace = true }"}, 1),
    ("a dependency of the root package", {"Cargo.toml": '[dev-dependencies]\nrusqlite = "0.43"'}, 1),
    ("an UPDATE in a test", {"tests/t.rs": 'fn f() { db.execute_batch(\n'
                             '    "UPDATE kind_streaks SET silenced_by = NULL;"); }'}, 1),
    ("lower case, over lines", {"src/a.rs":
                                'const Q: &str = "insert into outbox\n  (chat_id) values (1)";'}, 1),
    ("a raw string's CREATE", {"crates/consentd-daemon/src/a.rs":
                               'const Q: &str = r#"CREATE TABLE t (\n  "a" INTEGER\n)"#;'}, 1),
    ("a continued line's DELETE", {"examples/e.rs":
                                   'const Q: &str = "DELETE \\\n    FROM outbox WHERE seq = 1";'}, 1),
    ("a PRAGMA and an ALTER", {"tests/t.rs":
                               'const A: &str = "PRAGMA journal_mode = WAL";\n'
                               'const B: &str = "ALTER TABLE outbox ADD COLUMN x TEXT";'}, 2),
    ("a formatted DROP", {"tests/t.rs": 'fn f() { format!("DROP TABLE IF EXISTS {table};"); }'}, 1),
    ("a string that looks like a comment", {"tests/t.rs": 'const Q: &str = "// UPDATE t SET a = 1";'}, 1),
    ("an SQL file", {"tests/fixtures/old.sql": "-- an old schema"}, 1),
    ("comments do not count", {"tests/t.rs":
                               "// rusqlite, UPDATE t SET a = 1\n/// \"DELETE FROM t;\"\n"
                               "/* PRAGMA x = 1; /* rusqlite */ INSERT INTO t (a) VALUES (1) */\n"
                               "//! use rusqlite::params;",
                               "Cargo.toml": "# rusqlite is the store's alone"}, 0),
    ("prose is not SQL", {"tests/t.rs":
                          'const A: &str = "delete from the list, then insert into the queue";\n'
                          'const B: &str = "U+FE0F VARIATION SELECTOR-16 in text; update the settings";\n'
                          'const C: &str = "create a table of drops, drop the table";\n'
                          "const D: char = '\"'; const E: &str = \"rusqlite\";"}, 0),
    ("the store itself", {"crates/consentd-store/src/a.rs":
                          'use rusqlite::params; const Q: &str = "UPDATE t SET a = 1";',
                          "crates/consentd-store/Cargo.toml": "[dependencies]\nrusqlite = \"0.43\"",
                          "crates/consentd-store/src/migrations/0001_init.sql": "CREATE TABLE t (a);"}, 0),
]


def self_test_writes():
    """"Only the store writes" on its planted cases; the number of cases that went wrong."""
    import tempfile

    failed = 0
    for name, tree, expected in WRITES_CASES:
        with tempfile.TemporaryDirectory() as root:
            for rel, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
                with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                    f.write(text + "\n")
            found = []
            only_the_store_writes(found, root)
        if len(found) != expected:
            failed += 1
            print(f"self-test {name}: {len(found)} problems, expected {expected}: {found}")
    return failed


STORE_CRATE = "crates/consentd-store"
# Every Rust source outside the store crate: the daemon, its tests, benches, examples, the other
# crates and the fuzz targets.
OUTSIDE_STORE = ["src", "tests", "benches", "examples", "fuzz", "crates"]
CLOSURE_INTO_STORE = re.compile(r"\.call\s*\(\s*(move\s+)?\|")
NAMES_DB = re.compile(r"(&\s*(mut\s+)?Db\b|\bDb\s*::|:\s*Db\b|\bstore::(db::)?Db\b)")


def outside_store_files(root=None):
    root = root or ROOT
    for top in OUTSIDE_STORE:
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in ("target", "corpus")]
            if os.path.relpath(dirpath, root).startswith(STORE_CRATE):
                continue
            for name in sorted(filenames):
                if name.endswith(".rs"):
                    yield os.path.join(dirpath, name)


def code_without_comments(text):
    """The text with `//` comments blanked (line numbers kept), so that a doc comment naming a
    store method is no violation, and tokens split over lines still meet."""
    return re.sub(r"//[^\n]*", "", text)


def store_boundary(broken):
    """Only the store's own code hands the store's thread a closure or names its `Db`."""
    for path in outside_store_files():
        rel = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as f:
            code = code_without_comments(f.read())
        for rule, what in (
            (CLOSURE_INTO_STORE, "a closure into the store (`.call(|…|`)"),
            (NAMES_DB, "the store's `Db`"),
        ):
            for found in rule.finditer(code):
                line = code.count("\n", 0, found.start()) + 1
                broken.append(
                    f"{rel}:{line}: {what} outside {STORE_CRATE}: ask the store by a named "
                    "method of `Store` instead"
                )


RAW_STRING = re.compile(r'b?r(#*)"')
# A char literal (`'a'`, `'"'`, `'\n'`, `'\u{1F600}'`), not a lifetime (`'a`).
CHAR_LITERAL = re.compile(r"'(\\.[^']*|[^\\'])'")


def starts_token(text, i):
    """Whether a literal's prefix (`r`, `b`) at `i` starts a token rather than ends a name."""
    return i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")


def rust_split(text):
    """The text's code with comments and string literals blanked (newlines kept), and its string
    literals as (line, content): a small lexer for `//` and nested `/* */` comments, strings with
    escapes, raw strings (`r#"…"#`), byte strings, and char literals told from lifetimes."""
    code, strings, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            code.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            code.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif starts_token(text, i) and (raw := RAW_STRING.match(text, i)):
            close = '"' + raw.group(1)
            end = text.find(close, raw.end())
            end = n if end < 0 else end + len(close)
            strings.append((text.count("\n", 0, i) + 1, text[raw.end() : end - len(close)]))
            code.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == '"' or (text.startswith('b"', i) and starts_token(text, i)):
            start = i + (2 if c == "b" else 1)
            j = start
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            # A `\` before a newline continues the line: the next line's indentation is not text.
            content = re.sub(r"\\\n\s*", "", text[start:j]).replace("\\n", "\n").replace("\\t", "\t")
            strings.append((text.count("\n", 0, i) + 1, content))
            code.append(re.sub(r"[^\n]", " ", text[i : j + 1]))
            i = j + 1
        elif c == "'" and (char := CHAR_LITERAL.match(text, i)):
            code.append(" " * (char.end() - i))
            i = char.end()
        else:
            code.append(c)
            i += 1
    return "".join(code), strings


_NAME = r"[\w\"`\[\]{}.]+"
# A statement that changes the database or its settings, in any case and over any line breaks,
# by its shape: the keyword, then what only SQL puts after it.
SQL_WRITE = re.compile(
    r"\b(?:"
    rf"(?:insert(?:\s+or\s+\w+)?|replace)\s+into\s+{_NAME}\s*(?:\(|values\b|select\b|default\s+values\b)"
    rf"|update(?:\s+or\s+\w+)?\s+{_NAME}\s+set\s+{_NAME}\s*="
    rf"|delete\s+from\s+{_NAME}\s*(?:where\b|returning\b|;|$)"
    rf"|create\s+(?:temp(?:orary)?\s+)?(?:unique\s+|virtual\s+)?(?:table|index|trigger|view)\s+"
    rf"(?:if\s+not\s+exists\s+)?{_NAME}\s*(?:\(|on\b|as\b|using\b|before\b|after\b|instead\b)"
    rf"|drop\s+(?:table|index|trigger|view)\s+(?:if\s+exists\s+)?{_NAME}\s*(?:;|$)"
    rf"|alter\s+table\s+{_NAME}\s+(?:add|drop|rename)\b"
    rf"|pragma\s+(?:\w+\.)?\w+\s*(?:=|\(|;|$)"
    r")",
    re.IGNORECASE,
)
SQLITE_CRATE = re.compile(r"\b(rusqlite|libsqlite3_sys)\b")
SQLITE_DEPENDENCY = re.compile(r"\b(rusqlite|libsqlite3-sys)\b")


def outside_store_manifests(root):
    """Every Cargo.toml outside the store crate: the root package's, the other crates', fuzz's."""
    for top in ["."] + OUTSIDE_STORE:
        base = os.path.join(root, top)
        if top == ".":
            candidates = [os.path.join(base, "Cargo.toml")]
        else:
            candidates = []
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames[:] = [d for d in dirnames if d not in ("target", "corpus")]
                if "Cargo.toml" in filenames:
                    candidates.append(os.path.join(dirpath, "Cargo.toml"))
        for path in candidates:
            if os.path.isfile(path) and not os.path.relpath(path, root).startswith(STORE_CRATE):
                yield path


def only_the_store_writes(broken, root=None):
    """No SQLite crate, no SQL file and no SQL statement that writes, outside the store crate."""
    root = root or ROOT
    for path in outside_store_files(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            code, strings = rust_split(f.read())
        for found in SQLITE_CRATE.finditer(code):
            line = code.count("\n", 0, found.start()) + 1
            broken.append(f"{rel}:{line}: `{found.group(1)}` outside {STORE_CRATE}: read the "
                          "database through consentd_store (`inspect::Inspect`)")
        for line, text in strings:
            found = SQL_WRITE.search(text)
            if found:
                broken.append(f"{rel}:{line}: SQL outside {STORE_CRATE} "
                              f"({' '.join(found.group(0).split())!r}): only the store writes")
    for path in outside_store_manifests(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            manifest = re.sub(r"#[^\n]*", "", f.read())
        for found in SQLITE_DEPENDENCY.finditer(manifest):
            line = manifest.count("\n", 0, found.start()) + 1
            broken.append(f"{rel}:{line}: a dependency on `{found.group(1)}` outside {STORE_CRATE}")
    for top in OUTSIDE_STORE:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d not in ("target", "corpus")]
            if os.path.relpath(dirpath, root).startswith(STORE_CRATE):
                continue
            for name in sorted(filenames):
                if name.endswith(".sql"):
                    rel = os.path.relpath(os.path.join(dirpath, name), root)
                    broken.append(f"{rel}: an SQL file outside {STORE_CRATE}")


def main():
    if "--self-test" in sys.argv[1:]:
        self_test()
        return
    report = "--report" in sys.argv[1:]
    broken = []
    store_boundary(broken)
    only_the_store_writes(broken)
    all_functions, all_files = [], []
    for src in CRATES:
        for path in rust_files(src):
            rel = os.path.relpath(path, ROOT)
            lines = non_test_lines(path)
            all_files.append((len(lines), rel))
            if len(lines) > MAX_FILE_LINES:
                broken.append(f"{rel}: {len(lines)} lines outside tests (at most {MAX_FILE_LINES})")
            for name, line, length in functions(lines):
                all_functions.append((length, f"{rel}:{line}", name))
                if length > MAX_FUNCTION_LINES:
                    broken.append(f"{rel}:{line}: fn {name} is {length} lines (at most {MAX_FUNCTION_LINES})")
        for component in cycles(module_graph(src)):
            broken.append(f"{src}: a module cycle: {' ↔ '.join(component)}")
    if report:
        print("longest functions:")
        for length, place, name in sorted(all_functions, reverse=True)[:10]:
            print(f"  {length:4} {place} {name}")
        print("longest files (outside tests):")
        for length, rel in sorted(all_files, reverse=True)[:10]:
            print(f"  {length:5} {rel}")
    for problem in broken:
        print(problem)
    if broken:
        sys.exit(1)
    print("structure: ok")


if __name__ == "__main__":
    main()
