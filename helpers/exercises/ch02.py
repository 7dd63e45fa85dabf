"""Checks for chapter 02's exercises: 02a (the store and backoff) and 02b (the reflector).

Both parts of the chapter use this module. Each verdict carries the number the
learner sees in the part that calls the check (``EXERCISE``): in 02a, check 5
is exercise 1 and check 3 exercise 2; in 02b, checks 1, 2 and 4 are exercises
1, 2 and 3.

Check 1 runs the course's reflector through seventeen scripted endings of a
LIST or a WATCH and compares what it asks for next (a WATCH or a LIST), and
the version of its next LIST, with the learner's two functions. Check 2 runs
the course's reflector against a scripted source and compares the versions it
watched from with the learner's answer.
Check 3 compares a backoff schedule with :class:`helpers.backoff.Backoff`.
Check 4 runs the learner's list-and-watch loop in a thread against the real
cluster and makes its version expire (etcd compaction of PodTemplates, which
have no watch cache on the course's clusters); without etcd access it says it
can't check. Check 5 runs the course's store through a scripted sequence of
writes and compares what it holds with the learner's prediction.

A wrong answer is told why, never what is right: check 1 says how many of its
endings are right, not which (some drawn afresh on each run; naming one would name its
answer); check 3 never prints the delays Backoff hands out, and tries one
setting made up afresh on every run, so remembered schedules do not pass.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import random
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import kubernetes
import urllib3
from kubernetes.client.exceptions import ApiException

from .. import namespaces
from ..backoff import Backoff
from ..clock import FakeClock
from ..cluster.info import describe
from ..etcd import EtcdClient
from ..listwatch import ListWatch, WatchDisconnected, WatchStream, error_from_status
from ..reflector import Reflector
from ..store import NAMESPACE_INDEX, DeletedFinalStateUnknown, Indexer, namespace_index_func
from ..testing.fakes import FakeSource, ListCall, ScriptedStream, StaticSource, WatchCall
from . import CannotCheck, Verdict, correct, not_attempted, wrong

EXERCISE = {1: "1", 2: "2", 3: "2", 4: "3", 5: "1"}
"""Check number -> the exercise number the learner sees (02b: 1, 2, 4; 02a: 5, 3)."""

# --- check 1 (02b, exercise 1): the reflector's two decisions, as functions ---


@dataclass(frozen=True)
class Ending:
    """How a LIST or a WATCH ended, as a reflector sees it (02b, exercise 1).

    ``stage``: ``"list"`` (the LIST failed), ``"watch request"`` (the request to
    open a watch failed) or ``"watch stream"`` (an open watch ended). ``cause``:
    an HTTP status (an error answer; in a stream, an ``ERROR`` event),
    ``"refused"`` (no connection), ``"reset"`` (the connection broke),
    ``"timeout"`` (nothing came for too long), or None (the server ended the
    stream). ``seconds`` and ``events``: how long a stream lasted, and how many
    events it delivered.
    """

    stage: str
    cause: int | str | None
    seconds: float = 0.0
    events: int = 0


def endings(rng: random.Random | None = None) -> list[Ending]:
    """The endings the check asks about; a stream's seconds and events are drawn afresh.

    The first five are those the chapter once listed (a timeout, a break, a 410,
    a 429 on the request, a very short watch); the rest it never lists.
    """
    rng = rng or random.Random()

    def long() -> float:
        return round(rng.uniform(1.5, 600.0), 1)

    def short() -> float:
        return round(rng.uniform(0.05, 0.9), 2)

    def some() -> int:
        return rng.randint(1, 40)

    return [
        Ending("watch stream", None, long(), some()),
        Ending("watch stream", "reset", long(), some()),
        Ending("watch stream", 410, long(), some()),
        Ending("watch request", 429),
        Ending("watch stream", None, short(), 0),
        Ending("watch request", 403),
        Ending("watch stream", 500, long(), some()),
        Ending("watch request", "refused"),
        Ending("watch stream", 429, long(), some()),
        Ending("watch request", "reset"),
        Ending("watch request", "timeout"),
        Ending("watch stream", "reset", short(), 0),
        Ending("watch stream", None, short(), some()),
        Ending("watch stream", "timeout", long(), 0),
        Ending("watch stream", None, long(), 0),
        Ending("list", "refused"),
        Ending("list", 500),
    ]


class _Decided(BaseException):
    """Ends a scripted run at the reflector's next request (the reflector's loop lets it pass)."""


_POOL = urllib3.HTTPConnectionPool("localhost")
"""The pool a failure names, as urllib3's do (it never connects)."""


def _failure(cause: int | str | None) -> BaseException:
    """The exception the course's client raises for a failed request."""
    url = "/api/v1/configmaps"
    if cause == "refused":
        refused = urllib3.exceptions.NewConnectionError(
            urllib3.connection.HTTPConnection("localhost"),  # made, never connected
            "Failed to establish a new connection: [Errno 111] Connection refused",
        )
        return urllib3.exceptions.MaxRetryError(_POOL, url, refused)
    if cause == "reset":
        reset = ConnectionResetError(104, "Connection reset by peer")
        return urllib3.exceptions.ProtocolError("Connection aborted.", reset)
    if cause == "timeout":
        return urllib3.exceptions.ReadTimeoutError(_POOL, url, "Read timed out.")
    assert isinstance(cause, int), cause
    return ApiException(status=cause, reason=HTTPStatus(cause).phrase)


class _EndingStream:
    """One open watch: ``events`` events over ``seconds`` of the fake clock, then the ending."""

    def __init__(self, ending: Ending, clock: FakeClock) -> None:
        self._ending = ending
        self._clock = clock
        self._left = ending.events

    def __iter__(self) -> _EndingStream:
        return self

    def __next__(self) -> dict[str, Any]:
        if self._left:
            self._left -= 1
            event = copy.deepcopy(SCRIPT_WATCH[0])
            event["object"]["metadata"]["resourceVersion"] = str(200 - self._left)
            return event
        self._clock.step(self._ending.seconds)
        cause = self._ending.cause
        if cause in ("reset", "timeout"):
            raise WatchDisconnected(f"watch of configmaps broke: {_failure(cause)}")
        if isinstance(cause, int):
            phrase = HTTPStatus(cause).phrase
            raise error_from_status({"code": cause, "reason": phrase, "message": phrase})
        raise StopIteration

    def close(self) -> None:
        pass


def _ending_source(ending: Ending, clock: FakeClock) -> FakeSource:
    """A source that plays one ending; its second LIST or WATCH (the next request) ends the run."""
    source = FakeSource(kind="ConfigMap")

    def on_list(call: ListCall) -> dict[str, Any]:
        if len(source.list_calls) == 2:
            raise _Decided
        if ending.stage == "list":
            raise _failure(ending.cause)
        return copy.deepcopy(SCRIPT_LIST)

    def on_watch(call: WatchCall) -> _EndingStream:
        if len(source.watch_calls) == 2:
            raise _Decided
        if ending.stage == "watch request":
            raise _failure(ending.cause)
        return _EndingStream(ending, clock)

    source.on_list, source.on_watch = on_list, on_watch
    return source


def reflector_next_action(ending: Ending) -> str:
    """Run the course's reflector through ``ending``: ``"watch"`` or ``"list"`` comes next."""
    clock = FakeClock()
    source = _ending_source(ending, clock)
    backoff = Backoff(initial=0.0, jitter=0.0, clock=clock)  # no wait: the script is instant
    reflector = Reflector(source, Indexer(), name="exercise-1", backoff=backoff)
    logger = logging.getLogger("helpers.reflector")
    was_disabled, logger.disabled = logger.disabled, True  # the scripted errors are not news
    try:
        with contextlib.suppress(_Decided):
            reflector.run()
    finally:
        logger.disabled = was_disabled
    return (
        "list" if len(source.list_calls) == 2 else "watch" if len(source.watch_calls) == 2 else ""
    )


def reflector_relist_resource_version(last: str, unavailable: bool) -> str:
    """The resourceVersion the course's reflector LISTs at, in that state."""
    reflector = Reflector(StaticSource(), Indexer(), name="exercise-1")
    reflector._last_sync_rv, reflector._rv_unavailable = last, unavailable
    return reflector._relist_resource_version()


def relist_states(rng: random.Random | None = None) -> list[tuple[str, bool]]:
    """(last version seen, unavailable) pairs, with a version drawn afresh."""
    last = str((rng or random.Random()).randint(1_000, 99_999_999))
    return [("", False), (last, False), (last, True), ("", True)]


def _as_request(value: Any) -> str:
    text = str(value).strip().lower().replace("-", "")
    return {"watch": "watch", "rewatch": "watch", "list": "list", "relist": "list"}.get(text, "")


def check_1(
    next_action: Callable[[Ending], str] | None,
    relist_resource_version: Callable[[str, bool], str] | None,
) -> Verdict:
    """Both functions, against the course's reflector run through each ending and state.

    ``next_action`` is judged as a whole: the verdict says how many endings are
    right, not which, because with two choices naming a wrong one would name
    its answer.
    """
    missing = [
        name
        for name, function in (
            ("next_action", next_action),
            ("relist_resource_version", relist_resource_version),
        )
        if function is None
    ]
    if missing:
        functions = "your functions" if len(missing) > 1 else "your function"
        return not_attempted(EXERCISE[1], f"set {' and '.join(missing)} to {functions}")
    assert next_action is not None and relist_resource_version is not None
    rng = random.Random()
    cases = endings(rng)
    given = []
    for ending in cases:
        try:
            answer = next_action(ending)
        except Exception as exc:
            return wrong(EXERCISE[1], f"next_action({ending}) raised {type(exc).__name__}: {exc}")
        if not _as_request(answer):
            return wrong(
                EXERCISE[1], f"next_action({ending}) returned {answer!r}, not 'watch' or 'list'"
            )
        given.append(_as_request(answer))
    right = sum(g == reflector_next_action(e) for g, e in zip(given, cases, strict=True))
    if right < len(cases):
        return wrong(
            EXERCISE[1],
            f"next_action has {right} of {len(cases)} endings right. For each, ask: is the "
            "resourceVersion still good, so that a WATCH from it works? Did it fail on an open "
            "stream, or before there was one? Would a LIST help a server that is overloaded? "
            "And is a watch that ends at once without a single event a healthy one?",
        )
    for last, unavailable in relist_states(rng):
        call = f"relist_resource_version({last!r}, {unavailable})"
        try:
            answer = relist_resource_version(last, unavailable)
        except Exception as exc:
            return wrong(EXERCISE[1], f"{call} raised {type(exc).__name__}: {exc}")
        if str(answer) != reflector_relist_resource_version(last, unavailable):
            return wrong(
                EXERCISE[1],
                f"{call} returned {answer!r}, not the version the reflector lists at: a first "
                "LIST takes any cached state, a re-list must not go back in time, and a version "
                "the server called unavailable is no use",
            )
    return correct(
        EXERCISE[1],
        f"{len(cases)} endings and 4 LISTs decided as the course's Reflector decides them",
    )


# --- check 2 (02b, exercise 2): which version does the reflector watch from? ---


class _ScriptDone(Exception):
    """Ends the scripted round once the second watch has been asked for."""


def _config_map(name: str, version: str) -> dict[str, Any]:
    return {"metadata": {"namespace": "shop", "name": name, "resourceVersion": version}}


SCRIPT_LIST = {
    "kind": "ConfigMapList",
    "apiVersion": "v1",
    "metadata": {"resourceVersion": "120"},
    "items": [_config_map("apple", "101"), _config_map("banana", "115")],
}
SCRIPT_WATCH: list[dict[str, Any]] = [
    {"type": "MODIFIED", "object": _config_map("apple", "130")},
    {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "metadata": {"resourceVersion": "150"}}},
]


def _scripted_source() -> FakeSource:
    """A source that plays exercise 2's script (its LIST, then a watch that ends); the second
    WATCH ends the round."""
    source = FakeSource(kind="ConfigMap")

    def on_watch(call: WatchCall) -> ScriptedStream:
        if len(source.watch_calls) == 2:
            raise _ScriptDone
        return ScriptedStream(SCRIPT_WATCH, end=True)

    source.on_list = lambda call: copy.deepcopy(SCRIPT_LIST)
    source.on_watch = on_watch
    return source


def scripted_watch_versions() -> list[str]:
    """Run the course's reflector on exercise 2's script: the versions of its two watches."""
    source = _scripted_source()
    reflector = Reflector(source, Indexer(), name="exercise-2")
    with contextlib.suppress(_ScriptDone):
        reflector.list_and_watch()
    return [call.resource_version for call in source.watch_calls]


def check_2(answer: tuple[str, str] | None) -> Verdict:
    """``(first, second)``: the resourceVersions of the reflector's first two watches."""
    if answer is None:
        return not_attempted(
            EXERCISE[2], "set answer_2 to a tuple of two versions, such as ('101', '130')"
        )
    try:
        first, second = (str(version) for version in answer)
    except (TypeError, ValueError):
        return wrong(EXERCISE[2], f"{answer!r} is not a tuple of two versions")
    expected_first, expected_second = scripted_watch_versions()
    if first != expected_first:
        return wrong(
            EXERCISE[2],
            f"the first watch does not start at {first}: which version names the moment the "
            "whole list shows, not just one item?",
        )
    if second != expected_second:
        return wrong(
            EXERCISE[2],
            f"the second watch does not start at {second}: every event moves the reflector's "
            "version forward, bookmarks too",
        )
    return correct(EXERCISE[2], f"from the list's {first}, then from the bookmark's {second}")


# --- check 3 (02a, exercise 2): a backoff schedule ---

_SCHEDULE_CASES = [
    (0.8, 2.0, 30.0, 8),
    (0.5, 3.0, 10.0, 6),
    (5.0, 2.0, 3.0, 3),
    (1.0, 1.0, 10.0, 3),
]
"""Settings every run tries; :func:`_random_case` adds one made up afresh each run."""


def backoff_schedule(initial: float, factor: float, cap: float, n: int) -> list[float]:
    """The first ``n`` delays of :class:`Backoff` without jitter (on a clock that never moves)."""
    backoff = Backoff(initial=initial, factor=factor, jitter=0.0, cap=cap, clock=FakeClock())
    return [backoff.next_delay() for _ in range(n)]


def _random_case() -> tuple[float, float, float, int]:
    """Settings nobody has seen before, so that a table of remembered schedules does not pass."""
    initial = random.choice((0.1, 0.2, 0.25, 0.3, 0.4))
    factor = random.choice((1.5, 2.0, 3.0))
    return initial, factor, round(initial * factor ** random.randint(2, 4), 3), 7


def _first_difference(got: list[float], expected: list[float]) -> str:
    """Where a schedule goes wrong, without giving the right numbers away."""
    if len(got) != len(expected):
        return f"it has {len(got)} delays; n asks for {len(expected)}"
    for number, (mine, right) in enumerate(zip(got, expected, strict=True), start=1):
        if not math.isclose(mine, right):
            return f"delay {number} ({mine:g} s) is not what Backoff hands out"
    return ""


def check_3(schedule: Callable[[float, float, float, int], Iterable[float]] | None) -> Verdict:
    """``schedule(initial, factor, cap, n)`` lists the first n un-jittered delays."""
    if schedule is None:
        return not_attempted(EXERCISE[3], "set schedule to your function")
    cases = [*_SCHEDULE_CASES, _random_case()]
    for initial, factor, cap, n in cases:
        call = f"schedule({initial}, {factor}, {cap}, {n})"
        expected = backoff_schedule(initial, factor, cap, n)
        try:
            got = [float(delay) for delay in schedule(initial, factor, cap, n)]
        except Exception as exc:
            return wrong(EXERCISE[3], f"{call} raised {type(exc).__name__}: {exc}")
        difference = _first_difference(got, expected)
        if difference:
            return wrong(
                EXERCISE[3],
                f"in {call}, {difference}. Hint: each delay is the last one times the factor, "
                "at most the cap; for the first one, do what client-go's delay() does with "
                "Backoff.Duration",
            )
    return correct(EXERCISE[3], f"{len(cases)} settings, the cap included, one new on this run")


# --- check 4 (02b, exercise 3): recover from a 410 ---

GUARD = 10.0
"""Real seconds the check waits for each step before it declares the loop wrong."""


class _Observed:
    """One Condition that the store, the source and the learner's thread all notify."""

    def __init__(self) -> None:
        self.changed = threading.Condition()

    def notify(self) -> None:
        with self.changed:
            self.changed.notify_all()

    def wait_for(self, predicate: Callable[[], bool], timeout: float = GUARD) -> bool:
        with self.changed:
            return self.changed.wait_for(predicate, timeout)


class _ObservedStore(Indexer):
    """The course's store, notifying on every write, so that the check waits without polling."""

    def __init__(self, observed: _Observed) -> None:
        super().__init__()
        self._observed = observed

    def add(self, obj: Any) -> None:
        super().add(obj)
        self._observed.notify()

    def update(self, obj: Any) -> None:
        super().update(obj)
        self._observed.notify()

    def delete(self, obj: Any) -> None:
        super().delete(obj)
        self._observed.notify()

    def replace(self, objs: Iterable[Any], resource_version: str) -> None:
        super().replace(objs, resource_version)
        self._observed.notify()


class _ShortWatches(ListWatch):
    """The real ListWatch, counting its calls, with every watch shortened to one second."""

    def __init__(self, observed: _Observed, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._observed = observed
        self.lists = 0
        self.watches = 0

    def list(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        result = super().list(*args, **kwargs)
        self.lists += 1
        self._observed.notify()
        return result

    def watch(
        self,
        resource_version: str,
        timeout_seconds: int = 1,
        allow_bookmarks: bool = True,
        read_timeout: float | None = None,
    ) -> WatchStream:
        self.watches += 1
        self._observed.notify()
        return super().watch(resource_version, 1, allow_bookmarks, read_timeout)


def _pod_template(prefix: str, label: str) -> dict[str, Any]:
    return {
        "metadata": {"generateName": prefix, "labels": {"exercise-run": label}},
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }


def check_4(
    follow: Callable[[ListWatch, Indexer, threading.Event], None] | None,
    api: kubernetes.client.ApiClient,
    namespace: str,
) -> Verdict:
    """``follow(list_watch, store, stop)`` lists, watches, re-watches, and re-lists after a 410."""
    if follow is None:
        return not_attempted(EXERCISE[4], "set follow to your function")
    if describe().etcd_url is None:
        return CannotCheck(
            EXERCISE[4],
            "not attempted yet",
            "can't check this on a cluster without etcd access (the check compacts etcd to make "
            "a real 410); compare your function with solutions/ch02.py",
        )
    namespaces.ensure_namespace(api, namespace)  # after Run All the chapter has deleted it
    core = kubernetes.client.CoreV1Api(api)
    run = uuid.uuid4().hex[:6]  # so that the check can run again in the same namespace
    first = core.create_namespaced_pod_template(namespace, _pod_template("exercise-a-", run))
    observed = _Observed()
    store = _ObservedStore(observed)
    source = _ShortWatches(
        observed,
        api,
        f"/api/v1/namespaces/{namespace}/podtemplates",
        label_selector=f"exercise-run={run}",
    )
    stop = threading.Event()
    failure: list[BaseException] = []

    def target() -> None:
        try:
            follow(source, store, stop)
        except BaseException as exc:  # reported to the learner, not swallowed
            failure.append(exc)
        finally:
            observed.notify()

    worker = threading.Thread(target=target, name="exercise-4-follow", daemon=True)
    worker.start()
    try:
        verdict = _judge_follow(
            core, namespace, run, first.metadata.name, observed, store, source, worker
        )
    finally:
        stop.set()
        worker.join(GUARD)
    if failure and verdict.state == "wrong":
        raised = failure[0]
        return wrong(EXERCISE[4], f"{verdict.detail} (it raised {type(raised).__name__}: {raised})")
    if verdict.correct and worker.is_alive():
        return wrong(EXERCISE[4], f"it did not return within {GUARD:.0f} s of stop being set")
    return verdict


def _judge_follow(
    core: kubernetes.client.CoreV1Api,
    namespace: str,
    run: str,
    first: str,
    observed: _Observed,
    store: _ObservedStore,
    source: _ShortWatches,
    worker: threading.Thread,
) -> Verdict:
    """Walk the learner's loop through sync, re-watch, 410 and recovery; the first miss is wrong."""

    def has(name: str) -> bool:
        return store.get_by_key(f"{namespace}/{name}") is not None

    def ended() -> str:
        return "your function ended before stop was set"

    if not observed.wait_for(lambda: has(first) or not worker.is_alive()):
        return wrong(
            EXERCISE[4], f"the store never got {first}: list, then store.replace the items"
        )
    if not worker.is_alive():
        return wrong(EXERCISE[4], ended())
    if not observed.wait_for(lambda: source.watches >= 2 or not worker.is_alive()):
        return wrong(EXERCISE[4], "it did not watch again after the first (one-second) watch ended")
    if not worker.is_alive():
        return wrong(EXERCISE[4], ended())
    if source.lists != 1:
        return wrong(
            EXERCISE[4],
            "it listed again after a watch ended normally; then watch again from the last "
            "version seen, and keep LIST for a 410",
        )
    # Two writes that the watch does not see move etcd past its version; compaction
    # then forgets that version, and the next watch from it gets a 410.
    tick = core.create_namespaced_config_map(
        namespace, {"metadata": {"generateName": "exercise-tick-"}}
    ).metadata.name
    core.patch_namespaced_config_map(tick, namespace, {"data": {"n": "1"}})
    etcd_url = describe().etcd_url
    assert etcd_url is not None, "the check makes sure the cluster gives etcd access first"
    etcd = EtcdClient(etcd_url)
    etcd.compact(etcd.revision())
    if not observed.wait_for(lambda: source.lists >= 2 or not worker.is_alive()):
        return wrong(
            EXERCISE[4], "no LIST after the watch's resourceVersion expired (410): list again"
        )
    if not worker.is_alive():
        return wrong(EXERCISE[4], "it ended at the 410; catch WatchExpired and list again")
    second = core.create_namespaced_pod_template(namespace, _pod_template("exercise-b-", run))
    if not observed.wait_for(lambda: has(second.metadata.name) or not worker.is_alive()):
        return wrong(EXERCISE[4], "after the re-list it did not see a new PodTemplate: watch again")
    core.delete_namespaced_config_map(tick, namespace)
    return correct(
        EXERCISE[4], "it re-watched after normal closes, re-listed after the 410, carried on"
    )


# --- check 5 (02a, exercise 1): what does the store hold? ---


def _fruit(namespace: str, name: str, colour: str) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name}, "data": {"colour": colour}}


def run_store_script() -> Indexer:
    """Exercise 1 of 02a, as the chapter shows it: the course's store after the script."""
    store = Indexer({NAMESPACE_INDEX: namespace_index_func})
    store.add(_fruit("shop", "apple", "red"))
    store.add(_fruit("shop", "banana", "yellow"))
    store.replace([_fruit("farm", "cherry", "dark red"), _fruit("shop", "banana", "green")], "42")
    store.add({"metadata": {"name": "kwok-node-0"}})  # a Node: cluster-scoped
    store.delete(DeletedFinalStateUnknown("shop/banana", _fruit("shop", "banana", "yellow")))
    store.delete(_fruit("shop", "apple", "red"))
    return store


def _strings(value: Any) -> list[str] | None:
    """``value`` as a list of strings, or None if it is not a list, tuple or set of them."""
    if not isinstance(value, list | tuple | set | frozenset):
        return None
    if not all(isinstance(item, str) for item in value):
        return None
    return list(value)


def _keys_hint(given: set[str], expected: set[str]) -> str:
    """Why the predicted keys differ from what the store holds: the first lesson missed."""
    if "shop/apple" in given:
        return (
            "replace swaps the whole content for the list's items: an object that is not in "
            "the list (the apple) is gone"
        )
    if "shop/banana" in given:
        return "a tombstone (DeletedFinalStateUnknown) deletes by the key it carries"
    if any(key.endswith("/kwok-node-0") for key in given):
        return "a cluster-scoped object has no namespace, and its key is its name alone, no slash"
    if expected - given:
        return "the store holds a key you left out: which write did you skip?"
    return "the store does not hold every key you listed: which write removes one?"


def _values_hint(given: set[str]) -> str:
    """Why the predicted namespace index values are wrong."""
    if "shop" in given:
        return (
            "once the last key indexed under a value leaves, the store drops the value "
            "(an empty set would grow the index forever)"
        )
    if "" not in given:
        return "a cluster-scoped object is indexed under the namespace '' (the empty string)"
    return "each value is the namespace of an object still in the store"


def check_5(answer: tuple[Any, Any] | None) -> Verdict:
    """``(keys, namespaces)``: ``store.list_keys()`` and the namespace index's values."""
    if answer is None:
        return not_attempted(
            EXERCISE[5], "set answer_store to a pair of lists, such as (['shop/apple'], ['shop'])"
        )
    try:
        keys, values = answer
    except (TypeError, ValueError):
        return wrong(EXERCISE[5], f"{answer!r} is not a pair (keys, namespaces)")
    given_keys, given_values = _strings(keys), _strings(values)
    if given_keys is None or given_values is None:
        return wrong(EXERCISE[5], "give each half as a list of strings, such as ['farm/x']")
    store = run_store_script()
    expected_keys = store.list_keys()
    expected_values = store.list_index_func_values(NAMESPACE_INDEX)
    if sorted(given_keys) != expected_keys:
        return wrong(EXERCISE[5], _keys_hint(set(given_keys), set(expected_keys)))
    if sorted(given_values) != expected_values:
        return wrong(EXERCISE[5], _values_hint(set(given_values)))
    return correct(
        EXERCISE[5],
        f"the store holds {expected_keys}, indexed under the namespaces {expected_values}",
    )
