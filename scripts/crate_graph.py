#!/usr/bin/env python3
"""Prints the workspace's crate graph and fails when a crate imports one that comes later in hearth's order.

Each crate may import only the crates before it in ORDER (the layout table in docs/src/architecture.md says what
each owns), so a cycle between crates cannot start. Every workspace crate must be in ORDER: a new crate takes its
place there.

usage: scripts/crate_graph.py        # from the project's root; exit status 1 on an upward edge or an unplaced crate
"""

import json
import subprocess
import sys

# hearth's crates, lowest first: the libtorch side, the DataFusion engine over it, the fleet, the Spark Connect
# server and the command line,
# and the facade that re-exports them.
ORDER = ["hearth-common", "hearth-collective", "hearth-stats", "hearth-optim", "hearth-torch", "hearth-exec", "hearth-engine", "hearth-sql", "hearth-display", "hearth-fleet", "hearth-connect", "hearth-cli", "hearth"]

KINDS = {None: "", "dev": " (dev)", "build": " (build)"}


def main():
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps"], check=True, capture_output=True, text=True
        ).stdout
    )
    crates = {package["name"]: package for package in metadata["packages"]}
    problems = [f"crate {name} has no place in ORDER (scripts/crate_graph.py)" for name in crates if name not in ORDER]
    problems += [f"ORDER names {name}, which is not in the workspace" for name in ORDER if name not in crates]
    rank = {name: i for i, name in enumerate(ORDER)}
    for name in sorted(crates, key=lambda n: rank.get(n, len(ORDER))):
        edges = [d for d in crates[name]["dependencies"] if d["name"] in crates]
        shown = ", ".join(d["name"] + KINDS.get(d["kind"], f" ({d['kind']})") for d in edges) or "-"
        print(f"{name} -> {shown}")
        for dependency in edges:
            if name in rank and dependency["name"] in rank and rank[dependency["name"]] >= rank[name]:
                problems.append(f"{name} imports {dependency['name']}, which comes after it in ORDER")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
