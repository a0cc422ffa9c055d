#!/usr/bin/env python3
"""Deletes hearth's own build outputs from cargo target directories, keeping every dependency's.

A clean clone recompiles each hearth crate (its files are new to cargo), so the executables and libraries an
earlier checkout left are never used again; each test binary or example is hundreds of megabytes, and a few runs
fill a disk. Dependencies' outputs are kept: they are what makes a later build warm.

What is deleted, under each profile of each target directory given (`debug`, `release`, `<triple>/debug`, ...):
the files in the profile itself, `deps/` and `examples/` whose name is one of the workspace's crate or target names,
or begins with `hearth_` (a crate since renamed), hashed (`it-0123456789abcdef`, `libhearth_exec-….rlib`) or not
(`hearth`); and the folders of those names in `incremental/` that no build touched for a day (the recent ones
still speed up the recompiling). A workspace name that is also a dependency's is left alone (no dependency's
begins with `hearth_`). A file another process removes meanwhile is passed over.

usage: scripts/prune_target.py TARGET_DIR...     # from the project's root; prints what it freed
"""

import json
import pathlib
import re
import shutil
import subprocess
import sys
import time

HASHED = re.compile(r"^(?:lib)?(?P<stem>[A-Za-z0-9_]+?)-[0-9a-f]{16}(?:\..*)?$")
INCREMENTAL = re.compile(r"^(?P<stem>[A-Za-z0-9_]+)-[0-9a-z]{13}$")
PLAIN = re.compile(r"^(?:lib)?(?P<stem>[A-Za-z0-9_]+?)(?:\.(?:rlib|rmeta|so|a|d))?$")
OUTPUT_FOLDERS = ("deps", "examples")
INCREMENTAL_KEPT_SECONDS = 24 * 3600
LIBRARY_KINDS = {"lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro"}


def workspace_names():
    """The workspace's crate and target names as rustc spells them, less any a dependency also has."""
    manifest = pathlib.Path(__file__).resolve().parent.parent / "Cargo.toml"
    command = ["cargo", "metadata", "--format-version", "1", "--all-features", "--manifest-path", str(manifest)]
    metadata = json.loads(subprocess.check_output(command))
    members = set(metadata["workspace_members"])
    ours, theirs = set(), set()
    for package in metadata["packages"]:
        if package["id"] in members:
            names = {package["name"]} | {target["name"] for target in package["targets"]}
            ours.update(name.replace("-", "_") for name in names)
        else:  # a dependency builds its libraries only
            libraries = [target["name"] for target in package["targets"] if LIBRARY_KINDS & set(target["kind"])]
            theirs.update(name.replace("-", "_") for name in [package["name"], *libraries])
    return ours - theirs


def stem(name, patterns):
    """The crate or target name a build output's file or folder name carries, or None."""
    found = next((match for match in map(lambda pattern: pattern.match(name), patterns) if match), None)
    return found["stem"] if found else None


def ours(found, names):
    """Whether a crate or target name is one of hearth's (or was: `hearth_*` covers crates since renamed)."""
    return found is not None and (found in names or found.startswith("hearth_"))


def profiles(target):
    """The profile folders of one target directory: those holding a `deps/` folder, one or two levels down."""
    return sorted({deps.parent for deps in [*target.glob("*/deps"), *target.glob("*/*/deps")] if deps.is_dir()})


def outputs(profile, names):
    """Hearth's own outputs in one profile folder: files, and incremental-cache folders."""
    for folder in (profile, *(profile / name for name in OUTPUT_FOLDERS)):
        if folder.is_dir():
            for path in folder.iterdir():
                if path.is_file() and ours(stem(path.name, (HASHED, PLAIN)), names):
                    yield path
    incremental = profile / "incremental"
    if incremental.is_dir():
        for path in incremental.iterdir():
            stale = time.time() - path.stat().st_mtime > INCREMENTAL_KEPT_SECONDS
            if path.is_dir() and stale and ours(stem(path.name, (INCREMENTAL,)), names):
                yield path


def size(path, counted):
    """Bytes under a file or folder whose inodes are not yet in `counted` (cargo hard-links what it uplifts)."""
    files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file() and not f.is_symlink()]
    fresh = 0
    for file in files:
        try:
            status = file.stat()
        except FileNotFoundError:
            continue
        if (status.st_dev, status.st_ino) not in counted:
            counted.add((status.st_dev, status.st_ino))
            fresh += status.st_size
    return fresh


def remove(path):
    """Deletes one file or folder tree; what is already gone is passed over."""
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def main(targets):
    names = workspace_names()
    freed, counted = 0, set()
    for target in map(pathlib.Path, targets):
        for profile in profiles(target):
            for path in list(outputs(profile, names)):
                freed += size(path, counted)
                remove(path)
    print(f"prune_target: freed {freed / 2**30:.1f} GiB of hearth's own build outputs in {', '.join(targets)}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
