"""benchmarks/thread_hops.py's shapes: each hands updates to the handler on the thread it says.

Each shape is made in a child process (it replaces methods of the informer's
class), which runs an informer over tests/test_reflector.py's FakeSource and
prints the name of the thread the handler heard an update on, and which
decoder ``--decoder`` left installed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import sys, threading
from benchmarks import informer_bench
from benchmarks.thread_hops import prepare
impl = prepare(sys.argv[1], sys.argv[2])
informer_bench.use_fast_json(impl)  # as measure_events does
from helpers import fastjson
from helpers.informer import SharedInformer, wait_for_cache_sync
from tests.test_informer import informer_on
from tests.test_reflector import FakeSource
source = FakeSource()
source.add("pod1")
heard = threading.Event()
threads = []
def on_update(old, new):
    threads.append(threading.current_thread().name)
    heard.set()
informer = informer_on(source, name="hops")
informer.add_event_handler(on_update=on_update)
with informer:
    assert wait_for_cache_sync(informer, timeout=10)
    source.modify("pod1")
    assert heard.wait(10), "no update reached the handler"
print(threads[0], "orjson" if fastjson.installed() else "json")
"""


@pytest.mark.parametrize("decoder", ["json", "orjson"])
@pytest.mark.parametrize(
    ("shape", "thread"),
    [
        ("course", "informer-hops-handler-1"),
        ("no-handler-thread", "informer-hops"),
        ("one-thread", "reflector-hops"),
    ],
)
def test_each_shape_calls_the_handler_on_its_thread(shape: str, thread: str, decoder: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, shape, decoder],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [thread, decoder]
