"""How the time the Foos take to be created moves a controller run's syncs, over recorded runs.

A drill run by hand (benchmarks/RESULTS.md records it), not part of run_all.
controller_bench creates its 200 Foos from 8 threads while the controller
under test already runs, and the clock starts before the first. A Foo synced
before the last Foo exists is queued again behind fewer keys than the others,
so its second sync comes early, and its third (which writes nothing new)
comes before the run ends: each such Foo costs one more sync, at the default
pacing one more Foo-status token (0.2 s). This reads the controller rows of
benchmarks/results.json as recorded at each commit given (``git show``) and,
for one pacing, fits the syncs to the creation time and the wall time to the
syncs (least-squares slopes; over runs this alike, the intercepts mean little),
then gives each controller's medians.

Run: .venv/bin/python -m benchmarks.creation_window COMMIT... [--pacing default]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

from benchmarks.report import ROOT


def recorded_rows(commit: str) -> list[dict[str, Any]]:
    """The controller rows of benchmarks/results.json at ``commit``."""
    text = subprocess.run(
        ["git", "show", f"{commit}:benchmarks/results.json"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return json.loads(text).get("controllers") or []


def summary(rows: list[dict[str, Any]], pacing: str) -> list[str]:
    """The fits over every run at ``pacing`` that recorded its creation time, then medians."""
    runs = [row for row in rows if row["pacing"] == pacing and "create_seconds" in row]
    if len(runs) < 3:
        return [
            f"runs at {pacing} pacing that recorded their creation time: {len(runs)}; "
            "a fit needs 3 or more"
        ]
    created = [row["create_seconds"] for row in runs]
    syncs = [row["syncs"] for row in runs]
    walls = [row["wall_seconds"] for row in runs]
    per_second = statistics.linear_regression(created, syncs)
    per_sync = statistics.linear_regression(syncs, walls)
    lines = [
        f"{len(runs)} runs at {pacing} pacing.",
        f"Each second more to create the Foos: {per_second.slope:+.1f} syncs "
        f"(r = {statistics.correlation(created, syncs):.2f}).",
        f"Each sync more: {per_sync.slope:+.3f} s of wall time "
        f"(r = {statistics.correlation(syncs, walls):.2f}).",
        "| controller | runs | Foos created in (median) | syncs (median) | wall time (median) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in dict.fromkeys(row["controller"] for row in runs):
        mine = [row for row in runs if row["controller"] == name]
        lines.append(
            f"| {name} | {len(mine)} "
            f"| {statistics.median(row['create_seconds'] for row in mine):.2f} s "
            f"| {statistics.median(row['syncs'] for row in mine):g} "
            f"| {statistics.median(row['wall_seconds'] for row in mine):.2f} s |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commits", nargs="+", help="commits whose results.json to read")
    parser.add_argument("--pacing", default="default", help="'default' or 'QPS 50'")
    args = parser.parse_args(argv)
    rows = [row for commit in args.commits for row in recorded_rows(commit)]
    print("\n".join(summary(rows, args.pacing)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
