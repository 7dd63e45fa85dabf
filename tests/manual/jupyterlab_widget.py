"""Chapter 04's queue-depth widget in a real JupyterLab, in a real (headless) browser.

Not part of ``make test``: it needs Chromium and Playwright, which the course
does not install. A maintainer changing ``helpers/widgets.py`` runs it by hand:

    apt-get install chromium          # or any Chromium; pass its path with --chromium
    python3 -m venv /tmp/pw && /tmp/pw/bin/pip install playwright
    export KUBECONFIG=$(.venv/bin/python -m helpers.cluster kubeconfig)
    /tmp/pw/bin/python tests/manual/jupyterlab_widget.py

It copies ``notebooks/`` to a temporary folder (so JupyterLab's autosave cannot
touch the stored outputs), starts JupyterLab on it with the course's Python,
opens chapter 04, runs all cells from the menu, and samples the widget's image
while the kernel is busy. It passes when the image changed at least three times
while the burst cell ran (the plot moves; the kernel was not blocked) and the
finished chapter shows the static PNGs with no error output. A screenshot of the
final plot is written to ``--screenshot``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "notebooks/04_workqueue.ipynb"
TOKEN = "cfs-widget-check"
WIDGET_IMAGES = ".jupyter-widgets img, img.widget-image"


def start_lab(folder: Path, port: int) -> subprocess.Popen[bytes]:
    lab = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/jupyter"), "lab", "--no-browser", f"--port={port}",
            f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={folder}",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={TOKEN}")
            return lab
        except OSError:
            time.sleep(0.3)  # polling a server that is starting: there is nothing to wait on
    lab.terminate()
    raise SystemExit("JupyterLab did not start within 60 s")


def frames_while_busy(page: Page, limit: float) -> list[str]:
    """Hashes of the widget image each time it changes, until the kernel is idle again."""
    frames: list[str] = []
    started = time.monotonic()
    while time.monotonic() - started < limit:
        status = page.get_attribute(".jp-Notebook-ExecutionIndicator", "data-status")
        for source in page.eval_on_selector_all(WIDGET_IMAGES, "els => els.map(e => e.src)"):
            frame = hashlib.sha1(source.encode()).hexdigest()
            if status == "busy" and (not frames or frames[-1] != frame):
                frames.append(frame)
        if status == "idle" and time.monotonic() - started > 5:
            return frames
        time.sleep(0.1)  # sampling what the browser shows, at 10 Hz, is the measurement
    raise SystemExit(f"the chapter did not finish within {limit:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--port", type=int, default=8899)
    parser.add_argument("--screenshot", type=Path, default=Path("/tmp/queue-monitor.png"))
    args = parser.parse_args()
    if "KUBECONFIG" not in os.environ:
        raise SystemExit("set KUBECONFIG to the course's cluster first (see the docstring)")

    with tempfile.TemporaryDirectory() as folder:
        shutil.copytree(ROOT / "notebooks", Path(folder) / "notebooks")
        lab = start_lab(Path(folder), args.port)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=args.chromium, args=["--no-sandbox"]
                )
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(f"http://127.0.0.1:{args.port}/lab/tree/{CHAPTER}?token={TOKEN}")
                page.wait_for_selector(
                    ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000
                )
                page.click("text=Run")
                page.click("text=Run All Cells")
                frames = frames_while_busy(page, limit=150)
                images = page.query_selector_all(".jp-OutputArea-output img")
                errors = page.query_selector_all(
                    ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                )
                if images:
                    images[-1].scroll_into_view_if_needed()
                    images[-1].screenshot(path=str(args.screenshot))
                browser.close()
        finally:
            lab.terminate()
            lab.wait()

    print(f"widget image changed {len(frames)} times while the kernel was busy")
    print(f"static images in the finished chapter: {len(images)}; error outputs: {len(errors)}")
    print(f"final plot: {args.screenshot}")
    ok = len(frames) >= 3 and len(images) >= 2 and not errors
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
