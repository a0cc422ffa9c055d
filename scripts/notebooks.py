"""Executes hearth's notebooks headless with the evcxr Rust kernel and checks what they show.

Each notebook runs in a kernel of its own, one after the other, all with one build directory (EVCXR_TMPDIR)
kept under --work, so the first notebook on a machine builds hearth and the others reuse it (the kernel resolves
its dependencies itself: its check of each `:dep` rewrites the directory's Cargo.lock); a failed cell fails the
run with the cell and its error. Every notebook must show HTML tables, and as many SVG plots as its
metadata's `hearth.min_svgs` says, and training must show its epochs as they end (lines such as
"MlpClassifier_…: epoch 1 of 20, loss …"). A notebook whose metadata says `hearth.fleet` runs against a fleet
that `hearth cluster start` starts for it (its master in HEARTH_MASTER) and `hearth cluster stop` ends. A cell
whose metadata says `hearth.interrupt_after_s` is interrupted after that long, as a user presses ■: it must have
shown training progress by then, and on a fleet every rank must stop and free its slot within
INTERRUPTED_STOP_S, the executors' logs saying why. The executed copies are written under --executed.
"""

import argparse
import datetime
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

CELL_TIMEOUT_S = 3600  # the first cell builds hearth for the kernel
INTERRUPTED_STOP_S = 60  # an interrupted job's ranks stop at their next epoch; the fleet frees their slots
LOG_LAG_S = 15  # how long after the slots are free an executor's log may still be catching up
# What a rank logs when it stops for an interrupted job: its driver went away, or the scheduler cancelled it.
STOP_REASONS = ("the driver is gone", "cancelled in epoch", "(the stage was cancelled)")
PROGRESS = re.compile(r"^\S+: epoch \d+ of \d+, loss ", re.MULTILINE)


def hearth_metadata(node):
    return node.get("metadata", {}).get("hearth", {})


def streamed(cell):
    """What a cell printed on standard output."""
    return "".join(
        output.get("text", "")
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream" and output.get("name") == "stdout"
    )


def shown(notebook, mime):
    """Every output of `mime` the notebook's cells produced."""
    return [
        "".join(output["data"][mime])
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if mime in output.get("data", {})
    ]


class Fleet:
    """A two-executor fleet started with `hearth cluster start` in a state directory of its own."""

    def __init__(self, hearth):
        self.hearth = hearth
        self.state = tempfile.mkdtemp(prefix="hearth-notebook-fleet-")

    def __enter__(self):
        started = subprocess.run(
            [self.hearth, "cluster", "start", "--executors", "2", "--slots", "1", "--state-dir", self.state],
            capture_output=True, text=True, timeout=120,
        )
        if started.returncode != 0:
            raise RuntimeError(f"hearth cluster start failed:\n{started.stdout}{started.stderr}")
        master = next(line[len("master: "):] for line in started.stdout.splitlines() if line.startswith("master: "))
        os.environ["HEARTH_MASTER"] = master.strip()
        # The fleet's secret, as a user gives it to a program that did not start the fleet.
        os.environ["HEARTH_SECRET_FILE"] = os.path.join(self.state, "secret")
        return self

    def busy_slots(self):
        """Task slots the fleet's two executors hold now, from `hearth status --json`."""
        shown = subprocess.run(
            [self.hearth, "--master", os.environ["HEARTH_MASTER"], "status", "--json"],
            capture_output=True, text=True, timeout=30, check=True,
        )
        executors = json.loads(shown.stdout)["executors"]
        if len(executors) != 2:
            raise RuntimeError(f"the fleet has {len(executors)} executors, not 2: {shown.stdout}")
        return sum(e["slots"] - e["free_slots"] for e in executors)

    def executor_logs(self):
        logs = pathlib.Path(self.state) / "logs"
        return "".join(log.read_text(errors="replace") for log in sorted(logs.glob("executor-*.log")))

    def __exit__(self, *_):
        os.environ.pop("HEARTH_MASTER", None)
        os.environ.pop("HEARTH_SECRET_FILE", None)
        subprocess.run([self.hearth, "cluster", "stop", "--state-dir", self.state], capture_output=True, timeout=120)
        shutil.rmtree(self.state, ignore_errors=True)


def run(path, work, executed, hearth):
    notebook = nbformat.read(path, as_version=4)
    if hearth_metadata(notebook).get("fleet"):
        with Fleet(hearth) as fleet:
            return execute(path, notebook, work, executed) and interrupted_jobs_stopped(path, notebook, fleet)
    return execute(path, notebook, work, executed)


def stop_reason(logs):
    """The first of STOP_REASONS the executors' logs give, if any."""
    return next((reason for reason in STOP_REASONS if reason in logs), None)


def interrupted_jobs_stopped(path, notebook, fleet):
    """After a notebook's interrupted cells: every rank stopped, its slot free, its log saying why."""
    if not any(hearth_metadata(cell).get("interrupt_after_s") for cell in notebook.cells):
        return True
    deadline = time.monotonic() + INTERRUPTED_STOP_S
    while (busy := fleet.busy_slots()) > 0 and time.monotonic() < deadline:
        time.sleep(1)
    if busy > 0:
        print(f"{path}: {busy} slots still busy {INTERRUPTED_STOP_S} s after the interrupt", file=sys.stderr)
        return False
    # An executor may write the failed task's reason a moment after the fleet reports its slot free.
    logged = time.monotonic() + LOG_LAG_S
    while not (said := stop_reason(logs := fleet.executor_logs())) and time.monotonic() < logged:
        time.sleep(0.5)
    if not said:
        print(f"{path}: no executor log says why its rank stopped ({', '.join(STOP_REASONS)})", file=sys.stderr)
        print("the executors' last log lines:\n" + "\n".join(logs.splitlines()[-20:]), file=sys.stderr)
        return False
    print(f"{path}: the interrupted job's ranks stopped and freed their slots")
    return True


def execute(path, notebook, work, executed):
    # One build directory for every notebook: they depend on the same crates, so the first builds them.
    kernel_dir = work / "kernel"
    kernel_dir.mkdir(parents=True, exist_ok=True)
    os.environ["EVCXR_TMPDIR"] = str(kernel_dir)
    client = NotebookClient(
        notebook,
        kernel_name="rust",
        timeout_func=lambda cell: hearth_metadata(cell).get("interrupt_after_s", CELL_TIMEOUT_S),
        # A cell past its time is interrupted and ends as an error: expected of a cell tagged
        # `raises-exception`, a failure of any other.
        interrupt_on_timeout=True,
        error_on_timeout={"ename": "CellTimeout", "evalue": "interrupted after its time", "traceback": []},
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    started = time.monotonic()
    try:
        client.execute()
    except CellExecutionError as error:
        print(f"{path}: a cell failed:\n{error}", file=sys.stderr)
        return False
    finally:
        executed.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, executed / path.name)
    seconds = time.monotonic() - started
    # evcxr reports a panic on standard error and goes on with a fresh process: count it as a failed cell.
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.get("name") == "stderr" and "panicked at" in output.get("text", ""):
                print(f"{path}: a cell panicked:\n{cell.source}\n{output['text'][:2000]}", file=sys.stderr)
                return False
    for cell in notebook.cells:
        if hearth_metadata(cell).get("interrupt_after_s") and not PROGRESS.search(streamed(cell)):
            print(f"{path}: the interrupted cell showed no training progress:\n{cell.source}", file=sys.stderr)
            return False
    progress_lines = sum(len(PROGRESS.findall(streamed(cell))) for cell in notebook.cells if cell.cell_type == "code")
    html = shown(notebook, "text/html")
    tables = sum(page.count('<table class="hearth">') for page in html)
    svgs = sum(page.count("<svg") for page in html)
    min_svgs = notebook.metadata.get("hearth", {}).get("min_svgs", 0)
    build = next(
        (cell_seconds(cell) for cell in notebook.cells if cell.cell_type == "code" and ":dep" in cell.source), 0.0
    )
    print(
        f"{path}: {len(notebook.cells)} cells in {seconds:.0f} s (the kernel's build {build:.0f} s); "
        f"{tables} HTML tables, {svgs} SVG plots, {progress_lines} lines of training progress"
    )
    if progress_lines == 0:
        print(f"{path}: no cell showed training progress", file=sys.stderr)
        return False
    if tables == 0:
        print(f"{path}: no cell showed an HTML table", file=sys.stderr)
        return False
    if svgs < min_svgs:
        print(f"{path}: {svgs} SVG plots shown, {min_svgs} expected", file=sys.stderr)
        return False
    return True


def cell_seconds(cell):
    """How long a cell ran, from the timestamps nbclient records."""
    timing = cell.get("metadata", {}).get("execution", {})
    started, replied = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not started or not replied:
        return 0.0
    parse = lambda stamp: datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return (parse(replied) - parse(started)).total_seconds()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", type=pathlib.Path, required=True)
    parser.add_argument("--executed", type=pathlib.Path, required=True)
    parser.add_argument("--hearth", required=True, help="the hearth program, for notebooks that need a fleet")
    parser.add_argument("notebooks", type=pathlib.Path, nargs="+")
    args = parser.parse_args()
    failed = [path for path in args.notebooks if not run(path, args.work, args.executed, args.hearth)]
    if failed:
        print(f"{len(failed)} of {len(args.notebooks)} notebooks failed: {', '.join(map(str, failed))}", file=sys.stderr)
        sys.exit(1)
    print(f"{len(args.notebooks)} notebooks executed; copies in {args.executed}")


if __name__ == "__main__":
    main()
