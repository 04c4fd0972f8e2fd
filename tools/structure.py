#!/usr/bin/env python3
"""Checks the shape of the code that docs/ARCHITECTURE.md promises, on the sources themselves.

- no function over 100 lines outside tests;
- no Rust file over 800 lines outside tests (a file's tests are its `#[cfg(test)] mod …` at the
  end, or a `tests.rs` / `*_tests.rs` file);
- no cycle among a crate's modules, by the paths their code names (`crate::a::b`, `super::x`;
  a child naming its parent is not a cycle, and doc comments do not count);
- no closure into the store from outside crates/consentd-store: no `.call(|…|` or
  `.call(move |…|` on a store, and no `Db` (`&Db`, `Db::`, `: Db`) named there, whatever the
  line breaks and spaces between the tokens (comments do not count).

Run: python3 tools/structure.py            (exit 1 and a list when a rule is broken)
     python3 tools/structure.py --report   (also the longest functions and files)

It reads rustfmt-formatted code: a function ends at the first `}` at its own indentation.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = [
    "src",
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


def module_graph(src):
    files = {module_name(src, p): p for p in rust_files(src)}
    files.pop("lib", None)
    files.pop("main", None)
    graph = {}
    for me, path in files.items():
        code = "\n".join(l for l in non_test_lines(path) if not l.lstrip().startswith("//"))
        parent = me.split("::")[:-1]
        named = set()
        for reference in re.findall(r"crate::((?:[a-z_0-9]+::)*[a-z_0-9]+)", code):
            parts = reference.split("::")
            for k in range(len(parts), 0, -1):
                if "::".join(parts[:k]) in files:
                    named.add("::".join(parts[:k]))
                    break
        for sibling in re.findall(r"\bsuper::([a-z_0-9]+)", code):
            candidate = "::".join(parent + [sibling])
            if candidate in files:
                named.add(candidate)
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


STORE_CRATE = "crates/consentd-store"
# Every Rust source outside the store crate: the daemon, its tests, benches, examples, the other
# crates and the fuzz targets.
OUTSIDE_STORE = ["src", "tests", "benches", "examples", "fuzz", "crates"]
CLOSURE_INTO_STORE = re.compile(r"\.call\s*\(\s*(move\s+)?\|")
NAMES_DB = re.compile(r"(&\s*(mut\s+)?Db\b|\bDb\s*::|:\s*Db\b|\bstore::(db::)?Db\b)")


def outside_store_files():
    for top in OUTSIDE_STORE:
        base = os.path.join(ROOT, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in ("target", "corpus")]
            if os.path.relpath(dirpath, ROOT).startswith(STORE_CRATE):
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


def main():
    report = "--report" in sys.argv[1:]
    broken = []
    store_boundary(broken)
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
