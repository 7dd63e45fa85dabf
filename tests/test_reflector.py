"""The reflector, scenario by scenario, as client-go's reflector_test.go specifies it.

Unit tests drive :class:`Reflector` against :class:`~helpers.testing.fakes.FakeSource`, an
in-process stand-in for :class:`helpers.listwatch.ListWatch` (like client-go's
``fakeControllerSource``: no HTTP, no fake API server), and are named
``test_<what>__<UpstreamTest>`` with the upstream test cited. Most call
``list_and_watch()`` synchronously, one round at a time, as upstream calls
``ListAndWatch``; the rest step a FakeClock. Tests marked ``cluster`` run
against the real API server.
"""

from __future__ import annotations

import copy
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from helpers.backoff import Backoff
from helpers.clock import FakeClock, RealClock
from helpers.cluster.info import describe
from helpers.decode import decode_list
from helpers.etcd import EtcdClient
from helpers.listwatch import (
    ListWatch,
    WatchDisconnected,
    WatchError,
    WatchExpired,
)
from helpers.reflector import (
    Reflector,
    VeryShortWatchError,
    forbidden_message,
    is_connection_refused,
    is_too_large_resource_version,
)
from helpers.testing.fakes import (
    GUARD,
    FakeSource,
    ListCall,
    ScriptedStream,
    WatchCall,
    api_error,
    instant_backoff,
    pod,
    pod_list,
    status,
)

# --- what the tests add to the fakes ------------------------------------------------


class EndOfScript(Exception):
    """Raised by a scripted call to end a synchronous ``list_and_watch`` round."""


class RecordingSink:
    """A reflector store that remembers every call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.objects: dict[str, dict[str, Any]] = {}
        self._cond = threading.Condition()

    def replace(self, items: list[Any], resource_version: str) -> None:
        with self._cond:
            self.calls.append(
                ("replace", ([i["metadata"]["name"] for i in items], resource_version))
            )
            self.objects = {i["metadata"]["name"]: i for i in items}
            self._cond.notify_all()

    def add(self, obj: Any) -> None:
        self._record("add", obj)

    def update(self, obj: Any) -> None:
        self._record("update", obj)

    def delete(self, obj: Any) -> None:
        self._record("delete", obj)

    def bookmark(self, resource_version: str) -> None:
        with self._cond:
            self.calls.append(("bookmark", resource_version))
            self._cond.notify_all()

    def _record(self, what: str, obj: Any) -> None:
        name = obj["metadata"]["name"]
        with self._cond:
            self.calls.append((what, (name, obj["metadata"]["resourceVersion"])))
            if what == "delete":
                self.objects.pop(name, None)
            else:
                self.objects[name] = obj
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[RecordingSink], bool], timeout: float = GUARD) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)


def make_reflector(source: Any, sink: Any = None, **kwargs: Any) -> Reflector:
    kwargs.setdefault("backoff", instant_backoff())
    return Reflector(source, sink if sink is not None else RecordingSink(), name="test", **kwargs)


def stop_on_watch(call: WatchCall) -> ScriptedStream:
    """Stop the round as soon as the reflector starts watching (upstream: cancel in WatchFunc)."""
    raise EndOfScript


# --- LIST then WATCH --------------------------------------------------------------------


def test_list_then_watch_with_bookmarks__TestReflectorListAndWatch() -> None:
    """reflector_test.go TestReflectorListAndWatch (the LIST+WATCH case).

    LIST {RV "0", limit 500}, then WATCH {RV of the list, bookmarks}; ADDED,
    MODIFIED and DELETED reach the store in order; every event, bookmarks
    included, moves the last synced resourceVersion.
    """
    source = FakeSource()
    source.on_list = lambda call: pod_list(1, [])
    events = [
        {"type": "ADDED", "object": pod("foo", 2)},
        {"type": "MODIFIED", "object": pod("foo", 3)},
        {"type": "ADDED", "object": pod("bar", 4)},
        {"type": "BOOKMARK", "object": pod("", 5)},
        {"type": "DELETED", "object": pod("foo", 6)},
        {"type": "ERROR", "object": status(500, "InternalError", "etcdserver: no leader")},
    ]
    source.on_watch = lambda call: ScriptedStream(events)
    sink = RecordingSink()
    reflector = make_reflector(source, sink, min_watch_timeout=300.0)

    with pytest.raises(WatchError, match="no leader"):
        reflector.list_and_watch()

    assert source.list_calls == [ListCall("0", 500, None)]
    assert len(source.watch_calls) == 1
    watch = source.watch_calls[0]
    assert (watch.resource_version, watch.allow_bookmarks) == ("1", True)
    assert 300 <= watch.timeout_seconds <= 600
    assert sink.calls == [
        ("replace", ([], "1")),
        ("add", ("foo", "2")),
        ("update", ("foo", "3")),
        ("add", ("bar", "4")),
        ("bookmark", "5"),
        ("delete", ("foo", "6")),
    ]
    assert reflector.last_sync_resource_version == "6"
    assert reflector.has_synced
    assert (reflector.lists, reflector.watches, reflector.events) == (1, 1, 5)


def test_list_items_get_kind_and_api_version() -> None:
    """List items lack kind/apiVersion; watch objects have them. The sink sees one shape."""
    source = FakeSource()
    source.add("a")
    source.on_watch = stop_on_watch
    sink = RecordingSink()
    with pytest.raises(EndOfScript):
        make_reflector(source, sink).list_and_watch()
    assert sink.objects["a"]["kind"] == "Pod"
    assert sink.objects["a"]["apiVersion"] == "v1"


def test_watched_objects_share_their_keys_as_listed_ones_do() -> None:
    """Each watch event is decoded on its own, so two updated objects arrive with separate
    copies of every key; what the store keeps shares them (and the namespace, the kind and
    the apiVersion), as a LIST's items do. Without it the cache grew with every update
    (benchmarks/RESULTS.md)."""

    def decoded(name: str, rv: int) -> dict[str, Any]:
        # Built by concatenation and decoded alone: no string is shared before the reflector.
        text = '{"kind": "Config' + "Map" + '", "apiVersion": "v' + "1" + '"'
        text += ', "metadata": {"name": "' + name + '", "namespace": "ns-' + "a" + '"'
        text += ', "resourceVersion": "' + str(rv) + '"}, "data": {"colour": "' + "red" + '"}}'
        return json.loads(text)

    first, second = decoded("one", 2), decoded("two", 3)
    assert next(iter(first["data"])) is not next(iter(second["data"]))  # not shared yet
    assert first["kind"] is not second["kind"] and first["apiVersion"] is not second["apiVersion"]
    source = FakeSource()
    source.on_list = lambda call: pod_list(1, [])
    streams = [
        ScriptedStream(
            [{"type": "ADDED", "object": first}, {"type": "MODIFIED", "object": second}], end=True
        )
    ]

    def watch_once(call: WatchCall) -> ScriptedStream:
        if streams:
            return streams.pop()
        raise EndOfScript  # the round would watch again: stop it there

    source.on_watch = watch_once
    sink = RecordingSink()
    reflector = make_reflector(source, sink, min_watch_timeout=300.0)
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    one, two = sink.objects["one"], sink.objects["two"]
    key = next(iter(one["data"]))
    assert key is next(iter(two["data"]))
    assert [k for k in one["metadata"]] == [k for k in two["metadata"]]
    assert all(a is b for a, b in zip(one["metadata"], two["metadata"], strict=True))
    assert one["metadata"]["namespace"] is two["metadata"]["namespace"]
    assert (one["kind"], one["apiVersion"]) == ("ConfigMap", "v1")
    assert one["kind"] is two["kind"] and one["apiVersion"] is two["apiVersion"]
    assert one["data"]["colour"] is not two["data"]["colour"]  # data values are not shared


def test_relist_uses_last_synced_rv__TestReflectorResyncWithResourceVersion() -> None:
    """reflector_test.go TestReflectorResyncWithResourceVersion: LIST RVs ["0", "10"]."""
    pods = [pod(f"pod-{i}", i) for i in range(8)]
    answers = {"0": pod_list(10, pods[:4]), "10": pod_list(11, pods)}
    source = FakeSource()
    source.on_list = lambda call: copy.deepcopy(answers[call.resource_version or ""])
    source.on_watch = stop_on_watch
    sink = RecordingSink()
    reflector = make_reflector(source, sink)

    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert len(sink.objects) == 4
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert len(sink.objects) == 8
    assert [c.resource_version for c in source.list_calls] == ["0", "10"]
    assert (reflector.lists, reflector.relists) == (2, 1)


def test_expired_exact_rv_relists_from_etcd__TestReflectorExpiredExactResourceVersion() -> None:
    """reflector_test.go TestReflectorExpiredExactResourceVersion: ["0", "10", ""]."""
    pods = [pod(f"pod-{i}", i) for i in range(8)]

    def answer(call: ListCall) -> dict[str, Any]:
        if call.resource_version == "10":
            raise api_error(410, "Expired", "The resourceVersion for the provided list is too old.")
        return copy.deepcopy(
            {"0": pod_list(10, pods[:4]), "": pod_list(11, pods), "11": pod_list(11, pods)}[
                call.resource_version or ""
            ]
        )

    source = FakeSource()
    source.on_list = answer
    source.on_watch = stop_on_watch
    sink = RecordingSink()
    reflector = make_reflector(source, sink)

    for _ in range(2):
        with pytest.raises(EndOfScript):
            reflector.list_and_watch()
    assert len(sink.objects) == 8
    assert [c.resource_version for c in source.list_calls] == ["0", "10", ""]
    assert reflector.last_sync_resource_version == "11"

    # Once a list succeeded, the next relist uses the last RV again, not "".
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert source.list_calls[-1].resource_version == "11"


def test_expired_continue_token_falls_back_to_full_list__TestReflectorFullListIfExpired() -> None:
    """reflector_test.go TestReflectorFullListIfExpired (adapted to pages of the first list).

    Page 1 carries a continue token; the token expires before page 2; the
    reflector lists everything in one request at the original resourceVersion.
    """
    pods = [pod(f"pod-{i}", i) for i in range(8)]

    def answer(call: ListCall) -> dict[str, Any]:
        key = (call.resource_version, call.limit, call.continue_token)
        if key == ("0", 4, None):
            return pod_list(10, copy.deepcopy(pods[:4]), cont="C1")
        if key == (None, 4, "C1"):
            raise api_error(410, "Expired", "The provided continue parameter is too old")
        if key == ("0", None, None):
            return pod_list(11, copy.deepcopy(pods))
        raise AssertionError(f"unexpected list call {call}")

    source = FakeSource()
    source.on_list = answer
    source.on_watch = stop_on_watch
    sink = RecordingSink()
    reflector = make_reflector(source, sink, page_size=4)

    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert source.list_calls == [
        ListCall("0", 4, None),
        ListCall(None, 4, "C1"),
        ListCall("0", None, None),
    ]
    assert sorted(sink.objects) == [f"pod-{i}" for i in range(8)]
    assert reflector.last_sync_resource_version == "11"


def test_pages_are_joined_into_one_replace() -> None:
    """A paginated LIST reaches the store as one replace, at the first page's resourceVersion."""

    def answer(call: ListCall) -> dict[str, Any]:
        if call.continue_token is None:
            return pod_list(7, [pod("a", 1), pod("b", 2)], cont="next")
        assert call.resource_version is None, "a continue request must not carry an RV"
        return pod_list(7, [pod("c", 3)])

    source = FakeSource()
    source.on_list = answer
    source.on_watch = stop_on_watch
    sink = RecordingSink()
    with pytest.raises(EndOfScript):
        make_reflector(source, sink, page_size=2).list_and_watch()
    assert sink.calls == [("replace", (["a", "b", "c"], "7"))]


def test_exact_rv_lists_in_one_go__TestReflectorNotPaginatingNotConsistentReads() -> None:
    """reflector_test.go TestReflectorNotPaginatingNotConsistentReads: a relist at an exact
    RV sends no limit, so the watch cache can answer it without touching etcd."""
    source = FakeSource()
    source.on_list = lambda call: pod_list(10, [pod(f"pod-{i}", i) for i in range(10)])
    source.on_watch = stop_on_watch
    sink = RecordingSink()
    reflector = make_reflector(source, sink)
    for _ in range(2):
        with pytest.raises(EndOfScript):
            reflector.list_and_watch()
    assert source.list_calls == [ListCall("0", 500, None), ListCall("10", None, None)]
    assert len(sink.objects) == 10


def test_keeps_paging__TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled() -> None:
    """reflector_test.go TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled: a "0"
    list that came back in pages means no watch cache, so later lists keep the 500 limit."""
    pods = [pod(f"pod-{i}", i) for i in range(10)]
    pages = {None: (pods[0:4], "C1"), "C1": (pods[4:8], "C2"), "C2": (pods[8:10], None)}

    def answer(call: ListCall) -> dict[str, Any]:
        assert call.limit == 500
        items, cont = pages[call.continue_token]
        return pod_list(10, copy.deepcopy(items), cont=cont)

    source = FakeSource()
    source.on_list = answer
    source.on_watch = stop_on_watch
    sink = RecordingSink()
    reflector = make_reflector(source, sink)
    for _ in range(2):
        with pytest.raises(EndOfScript):
            reflector.list_and_watch()
        assert len(sink.objects) == 10
    assert [(c.resource_version, c.continue_token) for c in source.list_calls] == [
        ("0", None),
        (None, "C1"),
        (None, "C2"),
        ("10", None),
        (None, "C1"),
        (None, "C2"),
    ]


def test_too_large_rv_relists_from_etcd__TestReflectorFullListIfTooLarge() -> None:
    """reflector_test.go TestReflectorFullListIfTooLarge: ["0", "20", "", "30", "", "40", ""].

    The three error shapes API servers have used for "too large resource version".
    """
    version = 30

    def answer(call: ListCall) -> dict[str, Any]:
        nonlocal version
        rv = call.resource_version
        if rv == "0":
            return pod_list(20, [])
        if rv == "20":
            raise api_error(
                504,
                "Timeout",
                "too large resource version",
                causes=[{"type": "ResourceVersionTooLarge"}],
            )
        if rv == "30":
            raise api_error(
                504,
                "Timeout",
                "too large resource version",
                causes=[{"message": "Too large resource version"}],
            )
        if rv == "40":
            raise api_error(504, "Timeout", "Too large resource version")
        assert rv == ""
        version += 10
        return pod_list(version - 10, [])

    source = FakeSource()
    source.on_list = answer
    source.on_watch = stop_on_watch
    reflector = make_reflector(source)
    for _ in range(4):
        with pytest.raises(EndOfScript):
            reflector.list_and_watch()
    assert [c.resource_version for c in source.list_calls] == ["0", "20", "", "30", "", "40", ""]


def test_the_retry_at_empty_rv_keeps_the_first_requests_limit__client_go_list() -> None:
    """client-go's ``list`` retries at "" with the pager it made for the first request: after
    a LIST at an exact version (page size 0) the retry is one unpaged request; after a "0"
    list came back in pages (no watch cache: page size 500) it stays paged. A new round at ""
    gets a new pager, and pages of 500 again."""

    def expired_at_exact_rv(call: ListCall) -> dict[str, Any] | None:
        if call.resource_version not in ("", "0", None):
            raise api_error(410, "Expired", "The resourceVersion for the provided list is too old.")
        return None  # the FakeSource's objects

    source = FakeSource()
    source.add("a")
    source.on_list = expired_at_exact_rv
    source.on_watch = stop_on_watch
    reflector = make_reflector(source)
    for _ in range(2):
        with pytest.raises(EndOfScript):
            reflector.list_and_watch()
    assert source.list_calls == [
        ListCall("0", 500, None),
        ListCall("1", None, None),
        ListCall("", None, None),
    ]

    # Without a watch cache: the "0" list came back in pages, so every LIST is paged, the retry too.
    pages = {None: "C1", "C1": None}

    def paged(call: ListCall) -> dict[str, Any]:
        if call.resource_version not in ("", "0", None):
            raise api_error(410, "Expired", "The resourceVersion for the provided list is too old.")
        return pod_list(10, [pod(f"pod-{call.continue_token}", 1)], cont=pages[call.continue_token])

    source = FakeSource()
    source.on_list = paged
    source.on_watch = stop_on_watch
    reflector = make_reflector(source)
    for _ in range(2):
        with pytest.raises(EndOfScript):
            reflector.list_and_watch()
    assert [(c.resource_version, c.limit) for c in source.list_calls if not c.continue_token] == [
        ("0", 500),
        ("10", 500),
        ("", 500),
    ]

    # A "" retry that fails for another reason: the next round lists at "" with a fresh pager.
    answers = iter([None, "expired", "fails", None])

    def then_fails(call: ListCall) -> dict[str, Any] | None:
        answer = next(answers)
        if answer == "expired":
            raise api_error(410, "Expired", "The resourceVersion for the provided list is too old.")
        if answer == "fails":
            raise api_error(500, "InternalError", "etcd is unavailable")
        return None

    source = FakeSource()
    source.add("a")
    source.on_list = then_fails
    source.on_watch = stop_on_watch
    reflector = make_reflector(source)
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    with pytest.raises(ApiException):
        reflector.list_and_watch()
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert source.list_calls == [
        ListCall("0", 500, None),
        ListCall("1", None, None),
        ListCall("", None, None),
        ListCall("", 500, None),
    ]


def test_is_too_large_resource_version_needs_the_right_shape() -> None:
    assert not is_too_large_resource_version(api_error(504, "Timeout", "request timed out"))
    assert not is_too_large_resource_version(
        api_error(500, "InternalError", "Too large resource version")
    )
    assert not is_too_large_resource_version(ValueError("Too large resource version"))


# --- watch errors: which ones re-list, which ones only re-watch -----------------------


def test_429_backs_off_without_relist__TestBackoffOnTooManyRequests() -> None:
    """reflector_test.go TestBackoffOnTooManyRequests: a 429 on the watch call, then a 429
    ERROR event in the stream: two backoffs, and still only one LIST."""
    too_many = status(429, "TooManyRequests", "too many requests")
    source = FakeSource()

    def answer(call: WatchCall) -> ScriptedStream:
        n = len(source.watch_calls)
        if n == 1:
            raise api_error(429, "TooManyRequests", "too many requests")
        if n == 2:
            return ScriptedStream([{"type": "ERROR", "object": too_many}])
        raise EndOfScript

    source.on_watch = answer
    reflector = make_reflector(source)
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert reflector.backoff_waits == 2
    assert len(source.list_calls) == 1
    assert "429" in (reflector.last_error_message or "")


def test_no_relist_on_429__TestNoRelistOnTooManyRequests() -> None:
    """reflector_test.go TestNoRelistOnTooManyRequests: four 429s -> 1 LIST, 5 WATCHes."""
    source = FakeSource()

    def answer(call: WatchCall) -> ScriptedStream:
        if len(source.watch_calls) < 5:
            raise api_error(429, "TooManyRequests", "too many requests")
        raise EndOfScript

    source.on_watch = answer
    reflector = make_reflector(source)
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert (len(source.list_calls), len(source.watch_calls)) == (1, 5)
    assert reflector.backoff_waits == 4


def test_refused_watch_backs_off_exponentially__TestReflectorListAndWatchInitConnBackoff() -> None:
    """reflector_test.go TestReflectorListAndWatchInitConnBackoff: 5 refused connections with
    backoff 1 ms x2 take 1+2+4+8+16 ms of (fake) time, and no re-list."""
    clock = FakeClock()
    source = FakeSource()
    refusals = 5

    def answer(call: WatchCall) -> ScriptedStream:
        if len(source.watch_calls) <= refusals:
            raise ConnectionRefusedError(111, "Connection refused")
        raise EndOfScript

    source.on_watch = answer
    backoff = Backoff(initial=0.001, factor=2.0, jitter=0.0, cap=0.05, clock=clock)
    reflector = make_reflector(source, backoff=backoff, clock=clock)
    outcome: list[BaseException] = []

    def round_() -> None:
        try:
            reflector.list_and_watch()
        except BaseException as err:
            outcome.append(err)

    runner = threading.Thread(target=round_, name="list-and-watch")
    runner.start()
    start = clock.now()
    for i in range(refusals):
        assert clock.wait_for_waiters(1, timeout=GUARD), f"no backoff wait #{i + 1}"
        assert len(source.watch_calls) == i + 1, "re-watched without waiting"
        clock.step(0.001 * 2**i)
    runner.join(GUARD)
    assert [type(e) for e in outcome] == [EndOfScript]
    assert clock.now() - start == pytest.approx(0.031)
    assert (len(source.list_calls), len(source.watch_calls)) == (1, refusals + 1)
    assert "refused the connection" in (reflector.last_error_message or "")


def test_watch_expired_relists_from_last_rv() -> None:
    """reflector.go watch(): after 410 the LIST asks for the last RV first (not "")."""
    source = FakeSource()
    source.add("a")
    reflector = make_reflector(source)
    source.on_watch = lambda call: ScriptedStream(
        [
            {"type": "MODIFIED", "object": pod("a", 5)},
            {"type": "ERROR", "object": status(410, "Expired", "too old resource version: 1 (5)")},
        ]
    )
    with pytest.raises(WatchExpired):
        reflector.list_and_watch()
    source.on_watch = stop_on_watch
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert [c.resource_version for c in source.list_calls] == ["0", "5"]


def test_normal_close_rewatches_without_relist() -> None:
    """A watch the server ends normally is resumed from the last RV: no LIST."""
    source = FakeSource()
    source.add("a")
    source.on_watch = lambda call: (
        ScriptedStream([{"type": "ADDED", "object": pod("b", 2)}], end=True)
        if len(source.watch_calls) == 1
        else stop_on_watch(call)
    )
    reflector = make_reflector(source)
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert [c.resource_version for c in source.watch_calls] == ["1", "2"]
    assert len(source.list_calls) == 1
    assert reflector.errors == 0


class BreakingStream(ScriptedStream):
    """Delivers its events, then breaks the way a dead connection does."""

    def __init__(self, events: list[dict[str, Any]], why: str) -> None:
        super().__init__(events)
        self.why = why

    def __next__(self) -> dict[str, Any]:
        with self._cond:
            if not self._events and not self._closed:
                raise WatchDisconnected(self.why)
        return super().__next__()


@pytest.mark.parametrize(
    "why",
    [
        "watch broke: Response ended prematurely",  # io.ErrUnexpectedEOF
        "watch broke: Connection broken: ConnectionResetError(104, 'Connection reset by peer')",
        "watch broke: Read timed out. (read timeout=330)",  # a silent connection
    ],
    ids=["unexpected-eof", "reset", "read-timeout"],
)
def test_broken_stream_rewatches_from_last_rv_without_relist(why: str) -> None:
    """reflector.go + watch.StreamWatcher: a stream that breaks ends the watch quietly;
    the reflector watches again from the last RV it saw. No LIST, no error, no backoff."""
    source = FakeSource()
    source.add("a")
    source.on_watch = lambda call: (
        BreakingStream([{"type": "MODIFIED", "object": pod("a", 7)}], why)
        if len(source.watch_calls) == 1
        else stop_on_watch(call)
    )
    reflector = make_reflector(source)
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert [c.resource_version for c in source.watch_calls] == ["1", "7"]
    assert len(source.list_calls) == 1
    assert (reflector.broken_watches, reflector.errors, reflector.backoff_waits) == (1, 0, 0)


def test_stream_broken_at_once_is_a_very_short_watch() -> None:
    """A connection that breaks before any event, within a second, is an error: no hot loop."""
    source = FakeSource()
    source.on_watch = lambda call: (
        BreakingStream([], "watch broke: Response ended prematurely")
        if len(source.watch_calls) < 3
        else stop_on_watch(call)
    )
    with pytest.raises(VeryShortWatchError):
        make_reflector(source).list_and_watch()
    assert len(source.watch_calls) == 1


def test_very_short_watch_is_an_error() -> None:
    """reflector.go handleAnyWatch: closed within 1 s with 0 events -> VeryShortWatchError."""
    source = FakeSource()
    source.on_watch = lambda call: (
        ScriptedStream(end=True) if len(source.watch_calls) < 3 else stop_on_watch(call)
    )
    with pytest.raises(VeryShortWatchError, match="very short watch"):
        make_reflector(source).list_and_watch()
    assert len(source.watch_calls) == 1, "a very short watch must not be retried at once"


# --- the run loop: backoff on every error, and a prompt stop ------------------------------


def test_run_backs_off_on_every_error_never_a_hot_loop() -> None:
    """A 403 on LIST: one attempt per backoff, logged as the missing permission."""
    clock = FakeClock()
    source = FakeSource()
    forbidden = api_error(
        403,
        "Forbidden",
        'configmaps is forbidden: User "system:serviceaccount:demo:ctl" cannot list '
        'resource "configmaps" in API group "" in the namespace "demo"',
    )

    def refuse(call: ListCall) -> dict[str, Any]:
        raise forbidden

    source.on_list = refuse
    backoff = Backoff(initial=1.0, jitter=0.0, clock=clock)
    reflector = make_reflector(source, backoff=backoff, clock=clock)
    reflector.start()
    try:
        for attempt in range(1, 4):
            assert clock.wait_for_waiters(1, timeout=GUARD)
            assert len(source.list_calls) == attempt, "listed again without backing off"
            clock.step(2.0 ** (attempt - 1))
        assert source.wait_for(lambda s: len(s.list_calls) == 4)
    finally:
        reflector.stop()
        assert reflector.join(GUARD)
    assert reflector.errors >= 3
    assert reflector.last_error_message == (
        "forbidden: the service account demo/ctl may not list configmaps in namespace demo; "
        'grant the "list" verb on configmaps with a Role and RoleBinding in that namespace'
    )


def test_stop_interrupts_a_blocked_watch() -> None:
    """stop() closes the open stream: the thread ends at once, not after the watch timeout."""
    source = FakeSource()
    reflector = make_reflector(source, backoff=Backoff(clock=RealClock()), clock=RealClock())
    reflector.start()
    assert reflector.wait_for(lambda r: r.watches == 1, timeout=GUARD)
    assert source.wait_for(lambda s: len(s.open_streams()) == 1)
    started = time.monotonic()
    reflector.stop()
    assert reflector.join(GUARD)
    assert time.monotonic() - started < GUARD / 2  # the fake watch never ends by itself
    assert reflector.errors == 0
    assert threading.current_thread().name != f"reflector-{reflector.name}"


def test_thread_is_named_and_not_a_daemon() -> None:
    source = FakeSource()
    reflector = make_reflector(source)
    reflector.start()
    try:
        assert reflector.wait_for(lambda r: r.watches == 1, timeout=GUARD)
        thread = next(t for t in threading.enumerate() if t.name == "reflector-test")
        assert not thread.daemon
        with pytest.raises(RuntimeError, match="already started"):
            reflector.start()
    finally:
        reflector.stop()
        assert reflector.join(GUARD)


# --- error sentences -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "sentence"),
    [
        (
            'configmaps is forbidden: User "system:serviceaccount:ns1:bot" cannot watch resource '
            '"configmaps" in API group "" in the namespace "ns1"',
            "forbidden: the service account ns1/bot may not watch configmaps in namespace ns1; "
            'grant the "watch" verb on configmaps with a Role and RoleBinding in that namespace',
        ),
        (
            'foos.samplecontroller.k8s.io is forbidden: User "alice" cannot list resource "foos" '
            'in API group "samplecontroller.k8s.io" at the cluster scope',
            'forbidden: the user "alice" may not list foos.samplecontroller.k8s.io at the cluster '
            'scope; grant the "list" verb on foos.samplecontroller.k8s.io with a ClusterRole and '
            "ClusterRoleBinding",
        ),
    ],
)
def test_forbidden_message_names_the_missing_permission(message: str, sentence: str) -> None:
    assert forbidden_message(api_error(403, "Forbidden", message)) == sentence


def test_forbidden_message_falls_back_to_explain() -> None:
    text = forbidden_message(api_error(403, "Forbidden", "no way"))
    assert text.startswith("Forbidden: no way.")


def test_is_connection_refused_looks_inside_wrapped_errors() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as inner:
            raise RuntimeError("request failed") from inner
    except RuntimeError as outer:
        assert is_connection_refused(outer)
    assert not is_connection_refused(TimeoutError("timed out"))


# --- against the real cluster ----------------------------------------------------------------


def configmap_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


@pytest.mark.cluster
def test_real_list_then_watch_and_prompt_stop(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """A real reflector sees create, update, delete in order; stop() ends a 5-minute watch now."""
    core = kubernetes.client.CoreV1Api(api)
    sink = RecordingSink()
    reflector = Reflector(ListWatch(api, configmap_path(namespace)), sink, name="real")
    reflector.start()
    try:
        assert reflector.wait_for(lambda r: r.has_synced and r.watches == 1, timeout=GUARD)
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": "a"}, "data": {"k": "1"}}
        )
        core.patch_namespaced_config_map("a", namespace, {"data": {"k": "2"}})
        core.delete_namespaced_config_map("a", namespace)
        assert sink.wait_for(lambda s: any(c[0] == "delete" for c in s.calls))
    finally:
        started = time.monotonic()
        reflector.stop()
        assert reflector.join(GUARD)
        stop_took = time.monotonic() - started
    # (kube-root-ca.crt may show up too: the controller manager adds it to new namespaces.)
    changes = [
        (what, args[1])
        for what, args in sink.calls
        if what in ("add", "update", "delete") and args[0] == "a"
    ]
    assert [what for what, _ in changes] == ["add", "update", "delete"]
    versions = [int(rv) for _, rv in changes]
    assert versions == sorted(versions)
    assert int(reflector.last_sync_resource_version) >= versions[-1]
    assert (reflector.lists, reflector.errors) == (1, 0)
    assert stop_took < 30  # a tenth of the shortest watch timeout (300 s): closed, not waited


@pytest.mark.cluster
def test_real_forbidden_watch_names_the_missing_permission(
    api: kubernetes.client.ApiClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A service account that may list but not watch: the log says which grant is missing."""
    core = kubernetes.client.CoreV1Api(api)
    rbac = kubernetes.client.RbacAuthorizationV1Api(api)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "reader"}})
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "list-only"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "list-only"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "list-only",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
        },
    )
    token = core.create_namespaced_service_account_token(
        "reader", namespace, {"spec": {"expirationSeconds": 600}}
    ).status.token
    configuration = copy.deepcopy(api.configuration)
    configuration.cert_file = configuration.key_file = None
    configuration.api_key = {"authorization": f"Bearer {token}"}
    as_reader = kubernetes.client.ApiClient(configuration)

    clock = FakeClock()
    reflector = Reflector(
        ListWatch(as_reader, configmap_path(namespace)),
        RecordingSink(),
        name="forbidden",
        backoff=Backoff(initial=1.0, jitter=0.0, clock=clock),
        clock=clock,
    )
    caplog.set_level(logging.WARNING, logger="helpers.reflector")
    reflector.start()
    try:
        # RBAC takes a moment to see the new binding; until then the LIST may
        # be refused too, and the reflector backs off: step past those.
        assert _step_until(
            clock, reflector, lambda r: "may not watch" in (r.last_error_message or "")
        )
        assert clock.wait_for_waiters(1, timeout=GUARD), "must back off after a 403"
        lists = reflector.lists
        assert not reflector.wait_for(lambda r: r.lists > lists, timeout=0.3), "no backoff"
    finally:
        reflector.stop()
        assert reflector.join(GUARD)
        as_reader.close()
    expected = (
        f"forbidden: the service account {namespace}/reader may not watch configmaps in "
        f'namespace {namespace}; grant the "watch" verb on configmaps with a Role and '
        "RoleBinding in that namespace"
    )
    assert reflector.last_error_message == expected
    assert expected in caplog.text


def _step_until(
    clock: FakeClock, reflector: Reflector, predicate: Callable[[Reflector], bool]
) -> bool:
    """Step the fake clock past each backoff until ``predicate`` holds (at most 20 steps)."""
    for _ in range(20):
        seen = reflector.backoff_waits
        reflector.wait_for(lambda r, s=seen: predicate(r) or r.backoff_waits > s, timeout=GUARD)
        if predicate(reflector):
            return True
        assert clock.wait_for_waiters(1, timeout=GUARD)
        clock.step(60.0)
    return predicate(reflector)


@pytest.mark.cluster
def test_real_refused_connection_backs_off(api: kubernetes.client.ApiClient) -> None:
    """Nothing listens on the port: one attempt per backoff step, not a hot loop."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    configuration = copy.deepcopy(api.configuration)
    configuration.host = f"https://127.0.0.1:{port}"
    nowhere = kubernetes.client.ApiClient(configuration)
    clock = FakeClock()
    reflector = Reflector(
        ListWatch(nowhere, "/api/v1/configmaps"),
        RecordingSink(),
        name="refused",
        backoff=Backoff(initial=1.0, jitter=0.0, clock=clock),
        clock=clock,
    )
    reflector.start()
    try:
        for attempt in range(1, 3):
            assert clock.wait_for_waiters(1, timeout=GUARD)
            assert (reflector.lists, reflector.backoff_waits) == (attempt, attempt)
            clock.step(2.0 ** (attempt - 1))
        assert reflector.wait_for(lambda r: r.lists == 3, timeout=GUARD)
    finally:
        reflector.stop()
        assert reflector.join(GUARD)
        nowhere.close()
    assert "refused the connection" in (reflector.last_error_message or "")


class CompactingListWatch(ListWatch):
    """The real ListWatch, with a hook after the first page; its watch ends the round."""

    def __init__(self, *args: Any, after_first_page: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.after_first_page = after_first_page
        self.calls: list[ListCall] = []

    def list(
        self,
        resource_version: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        transform: Any = None,
    ) -> dict[str, Any]:
        self.calls.append(ListCall(resource_version, limit, continue_token))
        result = super().list(resource_version, limit, continue_token, transform)
        if len(self.calls) == 1:
            self.after_first_page()
        return result

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        raise EndOfScript  # this test is about the LIST


@pytest.mark.cluster
def test_real_expired_continue_token_falls_back_to_full_list(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """A continue token outlived by an etcd compaction (410) -> one full LIST, nothing lost.

    Events are used because the API server serves them from etcd (no watch
    cache), so their continue tokens really expire.
    """
    info = describe()
    assert info.etcd_url, f"compaction needs etcd on loopback (local control plane); got {info}"
    etcd = EtcdClient(info.etcd_url)
    core = kubernetes.client.CoreV1Api(api)
    for i in range(5):
        core.create_namespaced_event(namespace, _event(namespace, f"ev{i}"))

    def compact_past_the_snapshot() -> None:
        # A newer revision first: compacting *at* the snapshot's revision keeps it readable.
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "bump"}})
        etcd.compact(etcd.revision())

    lw = CompactingListWatch(
        api, f"/api/v1/namespaces/{namespace}/events", after_first_page=compact_past_the_snapshot
    )
    sink = RecordingSink()
    reflector = Reflector(lw, sink, name="events", page_size=2)
    with pytest.raises(EndOfScript):
        reflector.list_and_watch()
    assert lw.calls[0] == ListCall("0", 2, None)
    assert lw.calls[1].continue_token is not None
    assert lw.calls[2] == ListCall("0", None, None)
    assert len(lw.calls) == 3
    assert sorted(sink.objects) == [f"ev{i}" for i in range(5)]


def _event(namespace: str, name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "involvedObject": {
            "kind": "ConfigMap",
            "name": "x",
            "namespace": namespace,
            "apiVersion": "v1",
        },
        "reason": "Test",
        "message": name,
        "type": "Normal",
    }


@pytest.mark.parametrize(
    "document",
    [
        '{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}',
        '{"kind": "List", "items": [ {"metadata": {"name": "a", "managedFields": [1]}},\n'
        ' {"metadata": {"name": "b"}, "data": {"x": "[]{},"}} ], "metadata": {"continue": "t"}}',
        '{"items":[{"metadata":{"name":"a"},"spec":{"list":[1,2,{"y":[]}]}}]}',
    ],
)
def test_decode_list_matches_json_loads_and_transforms_each_item(document: str) -> None:
    """decode_list reads what json.loads reads; the transform sees every item once."""
    assert decode_list(document.encode()) == json.loads(document)
    seen = []

    def transform(item: dict) -> dict:
        seen.append(item["metadata"]["name"])
        item["metadata"].pop("managedFields", None)
        return item

    decoded = decode_list(document.encode(), transform)
    expected = json.loads(document)
    for item in expected.get("items", []):
        item["metadata"].pop("managedFields", None)
    assert decoded == expected
    assert seen == [item["metadata"]["name"] for item in expected.get("items", [])]
