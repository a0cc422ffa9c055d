#!/usr/bin/env python3
"""Prints the workspace's crate graph and fails when it breaks hearth's order or its tiers.

Each crate may import only the crates before it in ORDER (the layout table in docs/src/architecture.md says what
each owns), so a cycle between crates cannot start. Every workspace crate must be in ORDER: a new crate takes its
place there.

The top-level folders are the tiers, lowest first, and a crate's tier is the folder it lives in:

  ml/          no DataFusion beneath it (Arrow's arrays are allowed where tensors are made from them);
               libtorch only in hearth-torch
  engine/      DataFusion; hearth-exec and hearth-preprocessing link no libtorch (TORCH_FREE)
  executors/   the fleet, the Spark Connect server and the command line
  (the root)   the facade

The tier rules are checked over what each crate builds with (its normal and build dependencies, resolved), not only
what its manifest names. Each crate also keeps line tables only in debug builds (its `[profile.dev.package.*]`), and
none builds with a link-time registry (LINK_TIME_REGISTRIES): a session's extensions are listed where it is built.

usage: scripts/crate_graph.py        # from the project's root; exit status 1 on any broken rule
"""

import json
import subprocess
import sys
import tomllib

# hearth's crates, lowest first, tier by tier: the std-only helpers and the libtorch side, the DataFusion engine
# over them, the fleet, the Spark Connect server and the command line, and the facade that re-exports them.
ORDER = [
    "hearth-common", "hearth-collective", "hearth-stats", "hearth-optim", "hearth-torch",
    "hearth-exec", "hearth-preprocessing", "hearth-training", "hearth-sql", "hearth-display",
    "hearth-fleet", "hearth-connect", "hearth-cli",
    "hearth",
]

# Each tier's folder, lowest first ("" is the workspace's root, the facade's).
TIERS = ["ml/", "engine/", "executors/", ""]

# Crates (of any tier) that must build without libtorch: a Rust program of Spark-exact preprocessing needs none.
TORCH_FREE = {"hearth-common", "hearth-collective", "hearth-stats", "hearth-optim", "hearth-exec", "hearth-preprocessing"}

# What DataFusion and libtorch are, as crates.
DATAFUSION = ("datafusion",)
LIBTORCH = ("torch-sys", "tch")

# Crates that collect items at link time: what a session can do would depend on which crates a program links.
LINK_TIME_REGISTRIES = ("inventory", "linkme", "ctor")

KINDS = {None: "", "dev": " (dev)", "build": " (build)"}


def tier_of(package, root):
    """The tier whose folder holds the package's manifest."""
    folder = package["manifest_path"][len(root) + 1:]
    return next(tier for tier in TIERS if folder.startswith(tier))


def built_with(resolve, package_id):
    """The ids of every package `package_id` builds with: its normal and build dependencies, transitively."""
    nodes = {node["id"]: node for node in resolve["nodes"]}
    seen, stack = set(), [package_id]
    while stack:
        for dep in nodes[stack.pop()]["deps"]:
            if any(kind["kind"] != "dev" for kind in dep["dep_kinds"]) and dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                stack.append(dep["pkg"])
    return seen


def line_tables_only(root, crates):
    """Problems of the root manifest's debug profile: each crate keeps line tables only in debug builds, as the
    dependencies do (a crate missing there builds test binaries with full debug info, a gigabyte each)."""
    with open(f"{root}/Cargo.toml", "rb") as manifest:
        packages = tomllib.load(manifest).get("profile", {}).get("dev", {}).get("package", {})
    return [
        f"Cargo.toml has no [profile.dev.package.{name}] with debug = \"line-tables-only\""
        for name in sorted(crates)
        if packages.get(name, {}).get("debug") != "line-tables-only"
    ]


def main():
    metadata = json.loads(
        subprocess.run(["cargo", "metadata", "--format-version", "1"], check=True, capture_output=True, text=True).stdout
    )
    root = metadata["workspace_root"]
    by_id = {package["id"]: package for package in metadata["packages"]}
    crates = {by_id[i]["name"]: by_id[i] for i in metadata["workspace_members"]}
    problems = [f"crate {name} has no place in ORDER (scripts/crate_graph.py)" for name in crates if name not in ORDER]
    problems += [f"ORDER names {name}, which is not in the workspace" for name in ORDER if name not in crates]
    rank = {name: i for i, name in enumerate(ORDER)}
    tier = {name: tier_of(package, root) for name, package in crates.items()}
    for name in sorted(crates, key=lambda n: rank.get(n, len(ORDER))):
        edges = [d for d in crates[name]["dependencies"] if d["name"] in crates]
        shown = ", ".join(d["name"] + KINDS.get(d["kind"], f" ({d['kind']})") for d in edges) or "-"
        print(f"{name} [{tier[name] or 'root'}] -> {shown}")
        for dependency in edges:
            if name in rank and dependency["name"] in rank and rank[dependency["name"]] >= rank[name]:
                problems.append(f"{name} imports {dependency['name']}, which comes after it in ORDER")
        below = [by_id[pkg]["name"] for pkg in built_with(metadata["resolve"], crates[name]["id"])]
        if tier[name] == "ml/":
            problems += [f"{name} (ml/) builds with {dep}: the ml tier has no DataFusion" for dep in below if dep.startswith(DATAFUSION)]
            if name != "hearth-torch":
                problems += [f"{name} (ml/) builds with {dep}: only hearth-torch links libtorch in ml/" for dep in below if dep in LIBTORCH]
        problems += [f"{name} builds with {dep}: list extensions in code, not at link time" for dep in below if dep in LINK_TIME_REGISTRIES]
        if name in TORCH_FREE:
            problems += [f"{name} builds with {dep}, but must build without libtorch (TORCH_FREE)" for dep in below if dep in LIBTORCH]
    # A crate's place in ORDER follows its tier: no crate comes before one of a lower tier.
    for lower, higher in zip(ORDER, ORDER[1:]):
        if lower in tier and higher in tier and TIERS.index(tier[lower]) > TIERS.index(tier[higher]):
            problems.append(f"ORDER puts {lower} ({tier[lower]}) before {higher} ({tier[higher] or 'root'}), a lower tier")
    problems += line_tables_only(root, crates)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
