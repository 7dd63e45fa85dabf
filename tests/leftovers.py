"""What a stopped cluster may leave behind: a support module of the tests (the cluster's
lifecycle tests and run_all's), not a test module."""

from __future__ import annotations

import psutil

from helpers.home import CourseHome


def strays(home: CourseHome) -> list[str]:
    """Processes still running from this course folder (a cluster's leftovers), as commands."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        if str(home.root) in command and "helpers.cluster" not in command:
            found.append(f"{process.pid}: {command[:120]}")
    return found
