#!/usr/bin/env python3
"""Prints the module cycles inside each of hearth's library crates, as cargo-modules sees their items' uses.

cargo-modules (rust-analyzer's view of a crate) gives every item and each item's uses of another. A module
imports another when one of its items uses an item of the other; two sibling modules in one cycle of such
imports are a cycle, at whatever depth they sit (a parent's own items count as one more sibling, so a child
that uses its parent's items while the parent's items use the child is one too). A module's `use` of its own
children is not counted: re-exporting them is how a module shows its surface. cargo-modules has no nodes for
consts, statics and macros, so an import of only those is not seen.

usage: scripts/module_cycles.py [CRATE ...]     # default: every workspace library; exit status 1 on a cycle
(cargo-modules comes from scripts/cargo_modules.sh, which installs it into hearth's cache the first time)
"""

import json
import os
import re
import subprocess
import sys
from collections import defaultdict

NODE = re.compile(r'^\s*"([^"]+)" \[label="[^"]*", fillcolor="[^"]*"\]; // "([a-z ]+)" node')
EDGE = re.compile(r'^\s*"([^"]+)" -> "([^"]+)" \[label="uses"')


def libraries():
    """The workspace's library crates, by package name."""
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps"], check=True, capture_output=True, text=True
        ).stdout
    )
    return [p["name"] for p in metadata["packages"] if any("lib" in t["kind"] for t in p["targets"])]


def graph_of(package):
    """cargo-modules' nodes (path -> kind) and item-to-item uses of `package`'s library."""
    dot = subprocess.run(
        ["cargo", "modules", "dependencies", "--package", package, "--lib", "--no-externs", "--no-sysroot"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    nodes, uses = {}, []
    for line in dot.splitlines():
        if match := NODE.match(line):
            nodes[match.group(1)] = match.group(2)
        elif match := EDGE.match(line):
            uses.append((match.group(1), match.group(2)))
    return nodes, uses


def module_of(path, modules):
    """The module an item is in (a module is its own)."""
    while path not in modules:
        path = path.rsplit("::", 1)[0]
    return path


def cycles(nodes, uses):
    """Each cycle found, as the list of sibling modules in it (`parent (itself)` for a parent's own items)."""
    modules = {path for path, kind in nodes.items() if kind in ("mod", "crate")}
    imports = defaultdict(set)  # parent -> {(child, child)}: edges among a parent's children
    for source, target in uses:
        if nodes.get(source) in ("mod", "crate") and target.startswith(source + "::"):
            continue  # a module re-exporting or importing from its own children
        a, b = module_of(source, modules).split("::"), module_of(target, modules).split("::")
        common = 0
        while common < min(len(a), len(b)) and a[common] == b[common]:
            common += 1
        if common == len(a) == len(b):
            continue  # within one module
        parent = "::".join(a[:common])
        side = lambda parts: parts[common] if len(parts) > common else "(itself)"  # noqa: E731
        imports[parent].add((side(a), side(b)))
    found = []
    for parent, edges in sorted(imports.items()):
        for component in strongly_connected(edges):
            if len(component) > 1:
                found.append([f"{parent}::{m}" if m != "(itself)" else f"{parent} (itself)" for m in sorted(component)])
    return found


def strongly_connected(edges):
    """Tarjan's components of the graph given by `edges`."""
    out = defaultdict(set)
    for a, b in edges:
        out[a].add(b)
        out[b]
    index, low, on_stack, stack, components, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in out[v]:
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
            components.append(component)

    sys.setrecursionlimit(10000)
    for v in list(out):
        if v not in index:
            visit(v)
    return components


def main(argv):
    tools = subprocess.run(
        [os.path.join(os.path.dirname(__file__), "cargo_modules.sh")], check=True, capture_output=True, text=True
    ).stdout.strip()
    os.environ["PATH"] = tools + os.pathsep + os.environ["PATH"]
    total = 0
    for package in argv or libraries():
        found = cycles(*graph_of(package))
        total += len(found)
        print(f"{package}: {len(found)} module cycle{'s' if len(found) != 1 else ''}")
        for cycle in found:
            print(f"  {len(cycle)} modules: " + ", ".join(cycle))
    print(f"{total} in all")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
