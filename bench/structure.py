#!/usr/bin/env python3
"""The house's shape, counted: import circles between files, files over a
line limit, and functions over a line limit, in product code (each crate's
src/, test modules left out).

    bench/structure.py [--root DIR] [--file-limit 1000] [--fn-limit 100] [-v]

A file's imports are the `crate::a::b` and `super::` paths it names
outside its `#[cfg(test)]` modules, each resolved to the file that holds
the longest module prefix. A circle is a set of two or more files of one
crate that reach each other (a strongly connected component). Repeated
blocks are the `duplicates` tool's to count.
"""
import argparse
import os
import re
import sys

FN = re.compile(r"^(\s*)(pub(\([a-z]+\))? )?(const )?(async )?(unsafe )?(extern \"C\" )?fn [a-zA-Z_0-9]+")
PATH = re.compile(r"\b(crate|super)((?:::[a-z_][a-z_0-9]*)+)")
GROUP = re.compile(r"\b(crate|super)((?:::[a-z_][a-z_0-9]*)*)::\{([^}]*)\}", re.S)


def product_lines(path):
    """The file's lines before its first `#[cfg(test)]` module."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines) and re.match(r"\s*(pub(\(crate\))? )?mod ", lines[i + 1]):
            break
        out.append(line)
    return out


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main", "mod"):
        rel = rel[:-1]
    return tuple(rel)


def crate_files(src):
    files = {}
    for d, _, names in os.walk(src):
        for n in names:
            # Test modules in files of their own are test code.
            if n.endswith(".rs") and n != "tests.rs":
                p = os.path.join(d, n)
                files[module_of(src, p)] = p
    return files


def targets(mod, text, files):
    """The modules (with a file) that `text`, in module `mod`, names."""
    found = set()
    refs = [(m.group(1), m.group(2)) for m in PATH.finditer(text)]
    for m in GROUP.finditer(text):
        for item in m.group(3).split(","):
            item = item.strip().split(" ")[0]
            if re.match(r"[a-z_][a-z_0-9]*", item):
                refs.append((m.group(1), m.group(2) + "::" + item.split("::")[0]))
    for root, rest in refs:
        parts = [p for p in rest.split("::") if p]
        base = () if root == "crate" else mod[:-1]
        while parts and parts[0] == "super":
            base = base[:-1]
            parts = parts[1:]
        full = base + tuple(parts)
        while full and full not in files:
            full = full[:-1]
        if full in files and full != mod:
            found.add(full)
        elif not full and root == "super" and mod and () in files and mod[:-1] == ():
            found.add(())
    return found


def circles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def long_functions(path, limit):
    lines = product_lines(path)
    out = []
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or line.rstrip().endswith(";") or line.count("{") and line.count("{") == line.count("}"):
            continue
        indent = m.group(1)
        for j in range(i + 1, len(lines)):
            if lines[j] == indent + "}":
                if j - i + 1 > limit:
                    out.append((i + 1, j - i + 1, line.strip()[:60]))
                break
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--file-limit", type=int, default=1000)
    ap.add_argument("--fn-limit", type=int, default=100)
    ap.add_argument("-v", action="store_true", help="name each one")
    a = ap.parse_args()
    crates = os.path.join(a.root, "crates")
    n_circles, big, longs = 0, [], []
    for c in sorted(os.listdir(crates)):
        src = os.path.join(crates, c, "src")
        if not os.path.isdir(src):
            continue
        files = crate_files(src)
        graph = {}
        for mod, p in files.items():
            # Comments (doc links among them) import nothing.
            text = "\n".join(re.sub(r"//.*", "", l) for l in product_lines(p))
            graph[mod] = targets(mod, text, files)
            n = sum(1 for _ in open(p, encoding="utf-8", errors="replace"))
            if n > a.file_limit:
                big.append((n, os.path.relpath(p, a.root)))
            longs += [(os.path.relpath(p, a.root), *f) for f in long_functions(p, a.fn_limit)]
        for comp in circles(graph):
            n_circles += 1
            if a.v:
                print("circle:", c, " <-> ".join(os.path.relpath(files[m], src) for m in sorted(comp)))
    if a.v:
        for n, p in sorted(big, reverse=True):
            print(f"file over {a.file_limit}: {p} {n}")
        for p, line, n, sig in sorted(longs, key=lambda x: -x[2]):
            print(f"function over {a.fn_limit}: {p}:{line} {n} lines  {sig}")
    print(f"circles {n_circles}  files>{a.file_limit} {len(big)}  functions>{a.fn_limit} {len(longs)}")


if __name__ == "__main__":
    main()
