"""The operating system's Chromium, driven by Playwright: found once for every browser test.

No browser is downloaded (Playwright's own would need the internet): the tests
drive ``$CFS_CHROMIUM``, else the first Chromium on PATH (Debian's
``chromium``). Without one, or without Playwright, a browser test is skipped
with one line that says how to enable it; under ``CI=true`` it fails instead
(``.ci/run`` installs Chromium with apt-get when it is missing).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
# The execution indicator of the notebook on show in JupyterLab (hidden tabs have one too).
IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle'] >> visible=true"
BUSY = ".jp-Notebook-ExecutionIndicator[data-status='busy'] >> visible=true"
ENABLE = (
    "install Chromium (`apt-get install chromium`, or set CFS_CHROMIUM to a Chromium binary) "
    "to run them"
)


def chromium() -> str | None:
    """The Chromium to drive: $CFS_CHROMIUM, else the first one on PATH."""
    named = os.environ.get("CFS_CHROMIUM")
    if named:
        return named if Path(named).exists() else None
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


def unavailable() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (`make setup` installs it from requirements.txt)"
    if chromium() is None:
        return "no Chromium was found"
    return None


def skip_or_fail(what: str) -> None:
    """Skip ``what`` with the reason when no browser can run here; under CI=true, fail."""
    problem = unavailable()
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} must run in CI, but {problem}; {ENABLE}")
    pytest.skip(f"{what} skipped: {problem}; {ENABLE}")


@contextmanager
def launched(what: str) -> Iterator[Any]:
    """A headless Chromium for ``what`` (skipped or failed as :func:`skip_or_fail` says)."""
    skip_or_fail(what)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def run_all(page: Any, attempts: int = 3) -> None:
    """Run > Run All Cells, until the kernel is busy.

    Right after the page loads, the front end may not have connected to the kernel the
    server already started; a click then runs nothing (every prompt stays ``[ ]:``) and
    the kernel never turns busy. Nothing has run then, so clicking again is safe.
    """
    for attempt in range(1, attempts + 1):
        page.click(".lm-MenuBar-itemLabel:text-is('Run')")
        page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
        try:
            page.wait_for_selector(BUSY, timeout=15_000)
            return
        except Exception:
            if attempt == attempts:
                raise
