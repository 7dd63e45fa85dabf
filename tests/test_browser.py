"""The live widgets in a real JupyterLab, in a real (headless) browser.

Each test copies ``notebooks/`` to a temporary folder (so JupyterLab's autosave cannot touch the
stored outputs), opens a chapter in the JupyterLab the course installs (with a token made for the
run, never a fixed one), runs all its cells from the menu, and watches, from inside the page,
every change of a widget's image: a MutationObserver notes the time, which widget, and whether
the kernel was busy. It passes when the pictures moved while the kernel was busy, the finished
chapter shows static PNGs where the widgets were, and no cell shows an error or a stderr output.

The bounds come from the mechanism, not from the speed of the machine (a loaded 2-core machine
renders a frame in a second or more): a LiveFigure sends a frame every ``refresh`` seconds while
its cell runs, so a picture whose cell lasts several refresh periods by construction moves at
least once however slowly each frame renders (see each test for which pictures those are).

The browser is the operating system's Chromium, driven by Playwright (from PyPI, in
requirements.txt) through ``executable_path``: nothing is downloaded. Without Chromium the tests
are skipped with one line that says how to enable them; under ``CI=true`` they fail instead
(``.ci/run`` installs Chromium with apt-get when it is missing). ``CFS_CHROMIUM`` names another
Chromium binary.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.chromium import ENABLE, IDLE, launched, run_all, unavailable

ROOT = Path(__file__).resolve().parents[1]
TOKEN = secrets.token_urlsafe(32)
"""This run's JupyterLab token: made afresh, so no other user of the machine can guess it."""
# Notes every change of a widget image's src: the time, which widget, the kernel's state then.
WATCH_FRAMES = """
() => {
  window.__frames = [];
  const ids = new WeakMap();  // a widget's image element -> its number, in order of first change
  let next = 0;
  const status = () => {  // the indicator of the notebook on show
    const shown = [...document.querySelectorAll('.jp-Notebook-ExecutionIndicator')]
      .filter((el) => el.offsetParent !== null);
    return shown.length ? shown[0].getAttribute('data-status') : null;
  };
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      const el = m.target;
      if (el.tagName === 'IMG' && m.attributeName === 'src' && el.closest('.jupyter-widgets')) {
        if (!ids.has(el)) ids.set(el, next++);
        window.__frames.push([performance.now() / 1000, status(), ids.get(el)]);
      }
    }
  }).observe(document.body, {subtree: true, attributes: true, attributeFilter: ['src']});
}
"""


PROBLEM = unavailable()
if PROBLEM is not None and os.environ.get("CI") != "true":  # one line in the summary in all
    pytest.skip(f"browser tests skipped: {PROBLEM}; {ENABLE}", allow_module_level=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched("the browser tests") as chromium_browser:
        yield chromium_browser


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    """JupyterLab on a copy of notebooks/; yields its base URL."""
    if "KUBECONFIG" not in os.environ:
        pytest.fail("the browser tests need the course's cluster (run them with `make test`)")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "root"
        shutil.copytree(ROOT / "notebooks", root / "notebooks")
        # Render every cell, not only those in view (JupyterLab 4 skips the others by default,
        # and a widget that is not rendered cannot be seen to move).
        settings = Path(folder) / "settings" / "@jupyterlab" / "notebook-extension"
        settings.mkdir(parents=True)
        (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        # The course's Jupyter settings, as `make lab` uses them (no news pop-up over outputs).
        env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_CONFIG_PATH": str(ROOT / "jupyter")}
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser",
                f"--port={port}", "--ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={root}",
                f"--LabApp.user_settings_dir={folder}/settings",
                *(["--allow-root"] if os.geteuid() == 0 else []),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=5)
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        pytest.fail("JupyterLab did not start within 60 s")
                    time.sleep(0.2)  # a server starting up announces nothing we could wait on
            yield url
        finally:
            server.terminate()
            server.wait(30)


@dataclass
class Run:
    """What the browser saw while a chapter ran."""

    frames: list[tuple[float, str | None, int]]  # (seconds, kernel status, widget) per change
    static_images: int
    errors: list[str]
    seconds: float

    def busy_frames(self) -> list[float]:
        return [t for t, status, _widget in self.frames if status == "busy"]

    def moved_while_busy(self) -> int:
        """How many different widgets changed their picture while the kernel was busy."""
        return len({widget for _t, status, widget in self.frames if status == "busy"})


def wait_for_kernel(lab: str, chapter: str, timeout: float = 90) -> None:
    """Until the server has an idle kernel for ``chapter`` (the page shows "idle" sooner)."""
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(f"{lab}/api/sessions?token={TOKEN}", timeout=5) as answer:
            sessions = json.load(answer)
        if any(
            s["path"].endswith(chapter) and (s.get("kernel") or {}).get("execution_state") == "idle"
            for s in sessions
        ):
            return
        if time.monotonic() > deadline:
            pytest.fail(f"no idle kernel for {chapter} after {timeout:g} s: {sessions}")
        time.sleep(0.2)  # a kernel starting announces nothing the test could wait on


def cluster_state(chapter: str) -> str:
    """What the chapter's namespace holds, for a failure message: a cell that timed out waiting
    on the cluster says only what it waited for; this says where the chain stopped."""
    import kubernetes

    from helpers import kube

    api = kube.connect()
    core, apps = kubernetes.client.CoreV1Api(api), kubernetes.client.AppsV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    prefix = f"ch{chapter}-"  # "07", "06a"
    lines = []
    for ns in core.list_namespace().items:
        name = ns.metadata.name
        if not name.startswith(prefix):
            continue
        lines.append(f"namespace {name}:")
        foos = custom.list_namespaced_custom_object(
            "samplecontroller.k8s.io", "v1alpha1", name, "foos"
        )["items"]
        for foo in foos:
            lines.append(f"  Foo {foo['metadata']['name']} spec={foo.get('spec')} "
                         f"status={foo.get('status')}")  # fmt: skip
        for d in apps.list_namespaced_deployment(name).items:
            lines.append(f"  Deployment {d.metadata.name} replicas={d.spec.replicas} "
                         f"available={d.status.available_replicas}")  # fmt: skip
        for pod in core.list_namespaced_pod(name).items:
            ready = [c.status for c in pod.status.conditions or [] if c.type == "Ready"]
            lines.append(f"  Pod {pod.metadata.name} {pod.status.phase} "
                         f"node={pod.spec.node_name} ready={ready}")  # fmt: skip
        events = sorted(
            core.list_namespaced_event(name).items,
            key=lambda e: str(e.last_timestamp or e.event_time or ""),
        )
        for event in events[-15:]:
            lines.append(f"  Event {event.type} {event.reason} {event.involved_object.kind}/"
                         f"{event.involved_object.name}: {event.message}")  # fmt: skip
    return "\n".join(lines) or f"no namespace {prefix}*"


def run_chapter(browser: Any, lab: str, chapter: str, limit: float) -> Run:
    """Open ``chapter`` in JupyterLab, run all cells, watch until the kernel is idle again."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        # ?reset: a workspace with this notebook only, not the tabs an earlier test left open
        page.goto(f"{lab}/lab/tree/notebooks/{chapter}?reset&token={TOKEN}")
        page.wait_for_selector(IDLE, timeout=90_000)
        wait_for_kernel(lab, chapter)
        page.evaluate(WATCH_FRAMES)
        started = time.monotonic()
        run_all(page)
        try:
            page.wait_for_selector(IDLE, timeout=limit * 1000)
        except Exception:
            shot = Path(tempfile.gettempdir()) / f"browser-{chapter}.png"
            page.screenshot(path=str(shot), full_page=True)
            raise AssertionError(f"{chapter} did not finish in {limit:g} s; see {shot}") from None
        seconds = time.monotonic() - started
        frames = [tuple(frame) for frame in page.evaluate("window.__frames")]
        static = page.locator(".jp-OutputArea-output.jp-RenderedImage img").count()
        errors = page.locator(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
        ).all_inner_texts()
        return Run(frames, static, errors, seconds)  # type: ignore[arg-type]
    finally:
        page.close()


TIMELINES_06 = {"06a_reconcile_loop.ipynb": 6, "06b_own_writes.ipynb": 4}
"""Live timelines chapters 06a and 06b show (each left as a static PNG), the playground's
among them."""
LONG_CELLS_06 = {"06a_reconcile_loop.ipynb": 2, "06b_own_writes.ipynb": 1}
"""Their pictures whose cells last, by the mechanism they show, at least 4 s on any machine:
in 06a forty failures paced by a bucket of 5 a second after a burst of 10 (6 s), and the
playground, live across three cells; in 06b thirty status writes paced by the client's bucket
of 5 a second after its burst of 10 (4 s). A frame is due every 0.4 s; rendering one takes up
to 2 s on a loaded 2-core machine (measured): each of these gets at least one frame while it
runs."""


@pytest.mark.cluster
@pytest.mark.parametrize("chapter", sorted(TIMELINES_06))
def test_chapter_06_timeline_moves_while_the_kernel_works(
    browser: Any, lab: str, chapter: str
) -> None:
    run = run_chapter(browser, lab, chapter, limit=300)
    print(
        f"chapter {chapter[:3]} in JupyterLab: {run.seconds:.0f} s, {len(run.busy_frames())} "
        f"timeline frames while busy, from {run.moved_while_busy()} pictures; "
        f"{run.static_images} static"
    )
    if run.errors:
        state = cluster_state(chapter[:3])
        pytest.fail(f"error output in the chapter: {run.errors[0][:500]}\n{state}")
    assert run.moved_while_busy() >= LONG_CELLS_06[chapter], "the timelines did not move"
    assert run.static_images >= TIMELINES_06[chapter], "each timeline should be left as a PNG"


SWIMLANES_07 = 5
"""Swimlane pictures chapter 07 shows. Each replays its chain before the cell ends, and the cell
waits until the replay's last frame is drawn: so each moves while its cell runs, by
construction, however slow the machine."""


@pytest.mark.cluster
def test_chapter_07_swimlanes_replay_while_the_kernel_works(browser: Any, lab: str) -> None:
    run = run_chapter(browser, lab, "07_from_deployment_to_pod.ipynb", limit=300)
    print(
        f"chapter 07 in JupyterLab: {run.seconds:.0f} s, {len(run.busy_frames())} swimlane "
        f"frames while busy, from {run.moved_while_busy()} pictures; {run.static_images} static"
    )
    if run.errors:
        state = cluster_state("07")
        pytest.fail(f"error output in the chapter: {run.errors[0][:500]}\n{state}")
    assert run.moved_while_busy() >= SWIMLANES_07, "a picture did not replay while its cell ran"
    assert run.static_images >= SWIMLANES_07, "each picture should be left as a static PNG"


@pytest.mark.cluster
def test_chapter_04_queue_plot_moves_while_the_kernel_works(browser: Any, lab: str) -> None:
    """Chapter 04's check, once a manual script (tests/manual/jupyterlab_widget.py)."""
    run = run_chapter(browser, lab, "04_workqueue.ipynb", limit=150)
    print(f"chapter 04 in JupyterLab: {len(run.busy_frames())} queue plot frames while busy")
    if run.errors:
        state = cluster_state("04")
        pytest.fail(f"error output in the chapter: {run.errors[0][:500]}\n{state}")
    assert len(run.busy_frames()) >= 3, "the queue plot did not move while the burst ran"
    assert run.static_images >= 2


DIRTY_TAB = ".lm-TabBar-tab.jp-mod-dirty"
TWO_FRAMES = "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def put_notebook(lab: str, path: str, notebook: dict[str, Any]) -> None:
    """Save ``notebook`` at ``path`` through JupyterLab's server, as the file browser would."""
    body = json.dumps({"type": "notebook", "format": "json", "content": notebook}).encode()
    request = urllib.request.Request(
        f"{lab}/api/contents/{path}?token={TOKEN}", data=body, method="PUT",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    urllib.request.urlopen(request, timeout=30).close()


@pytest.mark.cluster
def test_every_chapter_opens_unmodified(browser: Any, lab: str) -> None:
    """Opening a chapter changes nothing a learner would be asked to save. When the kernel
    connects, JupyterLab writes the kernel's name and language (its Python version) into the
    notebook's metadata, on the kernel's info reply; a stored value that differs marks the
    notebook modified. So each chapter is opened, the kernel's info reply awaited on the
    websocket (and two frames for the page to apply it), and its tab must carry no modified
    mark. One more notebook is stored as from another machine ("Python 3", Python 3.12.0): the
    course's server hands it out as this kernel reports itself (jupyter/), so it opens unmodified
    too."""
    chapters = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
    other = json.loads(chapters[0].read_text())
    other["metadata"]["kernelspec"]["display_name"] = "Python 3"
    other["metadata"]["language_info"]["version"] = "3.12.0"
    put_notebook(lab, "notebooks/zz_another_python.ipynb", other)
    dirty = []
    for name in [path.name for path in chapters] + ["zz_another_python.ipynb"]:
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        replies: list[bool] = []

        def on_frame(payload: bytes | str, replies: list[bool] = replies) -> None:
            data = payload if isinstance(payload, bytes) else payload.encode()
            if b"kernel_info_reply" in data:
                replies.append(True)

        page.on("websocket", lambda socket: socket.on("framereceived", on_frame))
        try:
            page.goto(f"{lab}/lab/tree/notebooks/{name}?reset&token={TOKEN}")
            page.wait_for_selector(IDLE, timeout=90_000)
            deadline = time.monotonic() + 60
            while not replies:  # Playwright delivers frames while the page waits
                assert time.monotonic() < deadline, f"{name}: no kernel info reply in 60 s"
                page.wait_for_timeout(50)
            page.evaluate(TWO_FRAMES)
            if page.locator(DIRTY_TAB).count():
                dirty.append(name)
        finally:
            page.close()
    assert dirty == [], f"marked modified as they opened: {dirty}"
