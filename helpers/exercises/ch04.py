"""Checks for chapter 04's exercises (the workqueue).

No cluster is needed: each check runs the learner's answer against the real
``helpers.workqueue`` queues and limiters and compares what they do. Exercise 3
runs the learner's worker function in a thread with a deadline, so a function
that blocks gets a sentence, not a hung notebook.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..workqueue import ItemExponentialFailureRateLimiter, Queue, RateLimiter, RateLimitingQueue
from . import Verdict, correct, not_attempted, wrong

DEADLINE_SECONDS = 10.0

SCHEDULE_2 = (0.2, 0.2, 0.2, 10.0, 10.0, 10.0, 10.0, 10.0, 12.8, 25.6, 51.2, 60.0, 60.0)
"""Exercise 2: the delays, in seconds, before each retry of one key that keeps failing."""


# --- exercise 1: predict the queue ----------------------------------------------------------


def _exercise_1_run() -> tuple[int, list[str]]:
    """The sequence of exercise 1 on a real queue: len() before done(), then the drain order."""
    q: Queue[str] = Queue()
    q.add("a")
    q.add("b")
    q.add("a")
    item, _ = q.get()
    q.add("a")
    q.add("c")
    q.add("b")
    waiting = q.len()
    q.done(item)
    order = []
    while q.len():
        got, _ = q.get()
        order.append(got)
        q.done(got)
    q.shut_down()
    return waiting, order


def check_1(answer: tuple[int, list[str]] | None) -> Verdict:
    """``(len() just before done(), the order in which the keys are then handed out)``."""
    if answer is None:
        return not_attempted("1", "set answer_1 to a tuple such as (3, ['a', 'b', 'c'])")
    try:
        waiting, order = answer
        order = list(order)
    except (TypeError, ValueError):
        return wrong("1", "answer_1 should be a tuple: (a number, a list of keys)")
    expected_waiting, expected_order = _exercise_1_run()
    if waiting != expected_waiting:
        return wrong(
            "1",
            f"len() is not {waiting} just before done(): it counts keys waiting in line, "
            "once each, and not the key a worker holds",
        )
    if order != expected_order:
        return wrong(
            "1",
            f"the queue does not hand out {order}: where does done() put a key that was "
            "added again while a worker held it?",
        )
    return correct("1", f"{waiting} waiting, then {expected_order}")


# --- exercise 2: choose a rate limiter ------------------------------------------------------


def check_2(limiter: RateLimiter | None) -> Verdict:
    """A limiter whose delays for one failing key are ``SCHEDULE_2``, per key, reset by forget."""
    if limiter is None:
        return not_attempted("2", "set limiter_2 to a rate limiter")
    if not all(callable(getattr(limiter, name, None)) for name in ("when", "forget")):
        return wrong(
            "2",
            f"limiter_2 is a {type(limiter).__name__}, not a rate limiter: build one from this "
            "chapter's classes (it needs when() and forget())",
        )
    delays = [limiter.when("shop/web") for _ in SCHEDULE_2]
    for failure, (got, want) in enumerate(zip(delays, SCHEDULE_2, strict=True), start=1):
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12):
            hint = (
                "the first eight delays, 0.2 s three times and then 10 s, are what a fast-slow "
                "limiter gives"
                if failure <= 8
                else "from the 9th failure on the delays double up to a cap, as an exponential "
                "limiter's do: which base delay reaches 12.8 s at the 9th failure?"
            )
            return wrong("2", f"failure {failure} waits {got:g} s, not {want:g} s; hint: {hint}")
    other = limiter.when("shop/db")
    if not math.isclose(other, SCHEDULE_2[0]):
        return wrong("2", f"another key's first failure waits {other:g} s: the schedule is per key")
    limiter.forget("shop/web")
    again = limiter.when("shop/web")
    if not math.isclose(again, SCHEDULE_2[0]):
        return wrong("2", f"after forget() the key waits {again:g} s, not {SCHEDULE_2[0]:g} s")
    return correct("2", f"{type(limiter).__name__} matches all {len(SCHEDULE_2)} delays")


# --- exercise 3: a worker that gives up -----------------------------------------------------

MAX_RETRIES_3 = 3
KEYS_3 = ("ok", "flaky", "broken")
EXPECTED_SYNCS_3 = {"ok": 1, "flaky": 3, "broken": 1 + MAX_RETRIES_3}


class _Flaky:
    """The sync of exercise 3: 'flaky' fails twice, 'broken' always, 'ok' never."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def __call__(self, key: str) -> None:
        self.calls[key] += 1
        if key == "broken" or (key == "flaky" and self.calls[key] <= 2):
            raise RuntimeError(f"sync of {key} failed")


def _within_deadline(fn: Callable[[], Any]) -> tuple[bool, Any, BaseException | None]:
    """Run ``fn`` in a thread; (finished, result, exception)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = fn()
        except BaseException as exc:  # reported to the learner, not swallowed
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="exercise-3-worker", daemon=True)
    thread.start()
    thread.join(DEADLINE_SECONDS)
    return not thread.is_alive(), outcome.get("result"), outcome.get("error")


def check_3(process: Callable[..., bool] | None) -> Verdict:
    """``process(queue, sync, max_retries) -> bool``: one key per call, gives up after retries."""
    if process is None:
        return not_attempted("3", "set process_with_retries to your function")
    limiter = ItemExponentialFailureRateLimiter(0.0, 0.0)  # no waiting: retries come back at once
    q: RateLimitingQueue[str] = RateLimitingQueue(limiter)
    sync = _Flaky()
    for key in KEYS_3:
        q.add(key)
    results: list[Any] = []

    def drive() -> None:
        while q.len() and len(results) < 50:  # each call finds a key waiting: get() won't block
            results.append(process(q, sync, MAX_RETRIES_3))

    try:
        finished, _, error = _within_deadline(drive)
        if not finished:
            return wrong("3", f"it was still running after {DEADLINE_SECONDS:.0f} s")
        if error is not None:
            return wrong(
                "3", f"it raised {type(error).__name__}: {error} (a worker must outlive a sync)"
            )
        if any(result is not True for result in results):
            return wrong("3", f"it returned {results[-1]!r} for a key it processed, not True")
        if q.in_flight():
            return wrong("3", "some keys were never marked done(), so no worker gets them again")
        calls = {key: sync.calls[key] for key in KEYS_3}
        if calls != EXPECTED_SYNCS_3:
            return wrong("3", f"the keys were synced {calls} times; expected {EXPECTED_SYNCS_3}")
        remembered = [key for key in KEYS_3 if q.num_requeues(key)]
        if remembered:
            return wrong("3", f"the limiter still counts failures of {remembered}: call forget()")
    finally:
        q.shut_down()
    finished, result, error = _within_deadline(lambda: process(q, sync, MAX_RETRIES_3))
    if not finished or error is not None or result is not False:
        return wrong("3", "once the queue has shut down it should return False")
    return correct("3", "ok once, flaky until it worked, broken dropped after 3 retries")
