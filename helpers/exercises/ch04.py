"""Checks for chapter 04's exercises (the workqueue).

No cluster is needed: each check runs the learner's answer against the real
``helpers.workqueue`` queues and limiters and compares what they do. Exercise 2
prints two tables of what a limiter did, then probes the learner's limiter on a
fake clock where no table looked (other keys, time passing, ``forget``), so a
limiter that replays the tables is wrong. Exercise 3 runs the learner's worker
function in a thread with a deadline, so a function that blocks gets a
sentence, not a hung notebook.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..clock import FakeClock
from ..workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    Queue,
    RateLimiter,
    RateLimitingQueue,
)
from . import Verdict, correct, not_attempted, wrong

DEADLINE_SECONDS = 10.0

# --- exercise 1: predict the queue ----------------------------------------------------------


def _exercise_1_run() -> tuple[int, list[str]]:
    """The sequence of exercise 1 on a real queue: len() before done(), then the drain order."""
    q: Queue[str] = Queue()
    q.add("a")
    q.add("b")
    q.add("a")
    item, _ = q.get()
    assert item is not None  # a queue not shut down hands out an item
    q.add("a")
    q.add("c")
    q.add("b")
    waiting = q.len()
    q.done(item)
    order = []
    while q.len():
        got, _ = q.get()
        assert got is not None
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


# --- exercise 2: rebuild a limiter from what it did ---------------------------------------


def _team_limiter(clock: FakeClock) -> MaxOfRateLimiter:
    """The limiter exercise 2 describes; the learner rebuilds it from the two tables."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.02, 5.0), BucketRateLimiter(4, 10, clock=clock)
    )


ONE_KEY_2 = 12
MANY_KEYS_2 = 16


def show_2() -> None:
    """Print what the team's limiter did, each table on a fresh limiter and a still clock."""
    one_key = _team_limiter(FakeClock())
    many = _team_limiter(FakeClock())
    delays = [one_key.when("shop/web") for _ in range(ONE_KEY_2)]
    print(f"one key failing {ONE_KEY_2} times, its delays (s):")
    print("   ", ", ".join(f"{d:g}" for d in delays))
    delays = [many.when(f"shop/cm-{n}") for n in range(MANY_KEYS_2)]
    print(f"{MANY_KEYS_2} keys failing once each, all at the same moment (s):")
    print("   ", ", ".join(f"{d:g}" for d in delays))


# What the check asks of the learner's limiter: none of it printed by the chapter. Each step is
# (what it probes, action, argument): "when" a key fails, "forget" a key, "step" the clock.
_PROBE_2: list[tuple[str, str, Any]] = [
    *[("a key failing again and again", "when", "shop/web")] * 3,
    *[("many keys failing at the same moment", "when", f"app/k{n}") for n in range(12)],
    ("time passing", "step", 2.0),
    ("time passing", "when", "shop/web"),
    ("forget()", "forget", "shop/web"),
    ("forget()", "when", "shop/web"),
    ("time passing", "step", 30.0),
    *[("a key failing again and again", "when", "shop/db")] * 9,
    *[("many keys failing at the same moment", "when", f"app/j{n}") for n in range(6)],
]

_HINTS_2 = {
    "a key failing again and again": "one key's delays double up to a cap: read the base and "
    "the cap off the first table",
    "many keys failing at the same moment": "keys that fail together wait for each other: "
    "which limiter do all keys share, and what do its burst and its pace read in the "
    "second table?",
    "time passing": "does your limiter know that time passed? Hand the clock you are given "
    "to whatever reads the time",
    "forget()": "forget() must clear a key's failures, in every limiter it combines",
}


def check_2(make_limiter: Callable[[Any], RateLimiter | None] | None) -> Verdict:
    """``make_limiter(clock)`` returns the team's limiter: probed where no table looked."""
    if make_limiter is None:
        return not_attempted("2", "write make_limiter_2(clock)")
    clock, reference_clock = FakeClock(), FakeClock()
    try:
        limiter = make_limiter(clock)
    except Exception as error:  # the learner's code: say what it raised
        return wrong("2", f"make_limiter_2(clock) raised {type(error).__name__}: {error}")
    if limiter is None:
        return not_attempted("2", "make_limiter_2 returns None: return your rate limiter")
    if not all(callable(getattr(limiter, m, None)) for m in ("when", "forget", "num_requeues")):
        return wrong(
            "2",
            f"make_limiter_2 returned a {type(limiter).__name__}, not a rate limiter: build one "
            "from this chapter's classes (it needs when(), forget() and num_requeues())",
        )
    reference = _team_limiter(reference_clock)
    failures: Counter[str] = Counter()
    delays = 0
    for what, action, argument in _PROBE_2:
        if action == "step":
            clock.step(argument)
            reference_clock.step(argument)
            continue
        if action == "forget":
            limiter.forget(argument)
            reference.forget(argument)
            failures[argument] = 0
            continue
        failures[argument] += 1
        got, want = limiter.when(argument), reference.when(argument)
        delays += 1
        if not isinstance(got, int | float):
            return wrong("2", f"when() returned {got!r}, not a number of seconds")
        if not math.isclose(got, want, abs_tol=1e-9):
            hint = _HINTS_2["time passing" if abs(got - want) < 0.01 else what]
            return wrong(
                "2",
                f"probing {what}: failure {failures[argument]} of {argument!r}, "
                f"{clock.now():g} s into the check, waited {got:g} s; the team's limiter waits "
                f"{want:g} s there. Hint: {hint}",
            )
    requeues = limiter.num_requeues("shop/web")
    if requeues != reference.num_requeues("shop/web"):
        return wrong(
            "2",
            f"num_requeues('shop/web') is {requeues!r} after forget() and one more failure: "
            "it counts that key's failures on record",
        )
    return correct("2", f"{type(limiter).__name__} matched all {delays} delays the check asked for")


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
