"""Every chapter runs top to bottom on a cluster whose etcd the course cannot reach.

On kind or a learner's own cluster the course has no etcd client, so the
sections that compact etcd or read it directly must say so in one sentence and
go on. ``CFS_WITHOUT_ETCD=1`` makes the local control plane look like that
(:func:`helpers.cluster.info.describe` reports no etcd URL), so ``make test``
proves it here: each chapter is executed in a fresh kernel with the switch on,
its outputs are kept in memory only (the stored outputs come from the normal
run), and the test fails listing every cell that printed an error or wrote to
stderr. Nothing is skipped: a chapter that cannot run is a failure.

Run as ``python -m tests.test_any_cluster NN_name.ipynb`` it executes one
chapter the same way and prints the problems (for a person fixing a chapter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = sorted(path.name for path in NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb"))
CELL_TIMEOUT_SECONDS = 300


def error_outputs(notebook: dict) -> list[str]:
    """One line per cell output that is an error or stderr text: ``cell N: first lines``."""
    problems = []
    for index, cell in enumerate(notebook["cells"]):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                text = f"{output.get('ename')}: {output.get('evalue')}"
            elif output.get("output_type") == "stream" and output.get("name") == "stderr":
                text = "".join(output.get("text", "")).strip()
            else:
                continue
            first = " | ".join(text.splitlines()[:4])[:400]
            problems.append(f"cell {index} ({output['output_type']}): {first}")
    return problems


def execute(chapter: str) -> list[str]:
    """Run ``chapter`` in a fresh kernel with etcd withheld; its error outputs (not stored)."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(NOTEBOOKS / chapter, as_version=4)
    os.environ["CFS_WITHOUT_ETCD"] = "1"  # the kernel inherits this process's environment
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_SECONDS,
        kernel_name="python3",
        allow_errors=True,  # run on after an error, so one run lists every failing cell
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
    return error_outputs(notebook)


@pytest.mark.cluster
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_without_etcd(chapter: str) -> None:
    # A child process: the kernel gets CFS_WITHOUT_ETCD without touching this process.
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tests.test_any_cluster", chapter, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    took = time.monotonic() - started
    assert done.returncode in (0, 1), f"{chapter} could not be executed:\n{done.stderr[-3000:]}"
    problems = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{chapter}: {took:.0f} s without etcd")
    assert not problems, f"{chapter} printed error output with CFS_WITHOUT_ETCD=1:\n" + "\n".join(
        problems
    )


def test_error_outputs_lists_errors_and_stderr() -> None:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": "x"},
            {"cell_type": "code", "outputs": [{"output_type": "stream", "name": "stdout",
                                                "text": "fine"}]},
            {"cell_type": "code", "outputs": [
                {"output_type": "error", "ename": "KeyError", "evalue": "'code'",
                 "traceback": []},
                {"output_type": "stream", "name": "stderr", "text": "W1203 warning\nmore"},
            ]},
        ]
    }  # fmt: skip
    assert error_outputs(notebook) == [
        "cell 2 (error): KeyError: 'code'",
        "cell 2 (stream): W1203 warning | more",
    ]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in CHAPTERS:
        print(f"usage: python -m tests.test_any_cluster CHAPTER [--json]; CHAPTER is one of "
              f"{', '.join(CHAPTERS)}")  # fmt: skip
        return 2
    problems = execute(argv[0])
    if "--json" in argv:
        print(json.dumps(problems))
    else:
        print("\n".join(problems) or f"{argv[0]}: no error output without etcd")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
