"""Checks for chapter 06's exercises: 06a's (the reconcile loop, live) and 06b's (the
controller's own writes), numbered apart as the two chapters share this module.

``check_1`` (06a, exercise 1) and ``check_3`` (06b, exercise 1) change part of the controller, and
run a Foo controller with the learner's function on the cluster, in the chapter's namespace
(brought back if Run All deleted it), with a :class:`helpers.timeline.TimelineRecorder` attached
to see what each sync wrote; each deletes the Foo it made, and says what it waits for.
``check_2`` (06a, exercise 2) runs sample-controller's two limiters on a fake clock, and
``check_4`` (06b, exercise 2) runs :func:`helpers.timeline.stale_reads` on the record the
exercise shows.
"""

from __future__ import annotations

import copy
import functools
import heapq
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

import kubernetes
from kubernetes.client.exceptions import ApiException

from .. import namespaces
from ..clock import FakeClock, StopEvent
from ..controller import (
    FOO_GROUP,
    FOO_PLURAL,
    FOO_VERSION,
    FooController,
    foo_body,
    new_deployment,
    run_controller,
)
from ..errors import CourseError
from ..foo_crd import extend_foo_status, restore_foo_status, status_is_extended
from ..timeline import FAILED, SYNCED, InformerEvent, Sync, TimelineRecorder, Write, stale_reads
from ..waiting import wait_for
from ..workqueue import BucketRateLimiter, ItemExponentialFailureRateLimiter
from . import Verdict, correct, not_attempted, wrong

TIMEOUT = 60.0
"""Seconds a check waits for the cluster (kind may pull an image)."""

QUIET = 1.5
"""Seconds of quiet that show a controller has stopped writing."""

REPAIR = 10.0
"""Seconds a check gives the controller to put a change right, or to go quiet (a second or two
does, on a loaded machine)."""

Deployment = dict[str, Any]
Foo = dict[str, Any]


def _foo(name: str, replicas: int, image: str = "nginx:latest") -> tuple[Foo, Deployment]:
    """A cached-looking Foo, and the Deployment it asks for, as an offline sanity test."""
    foo = foo_body(name, name, replicas)
    foo["metadata"].update(namespace="ns", uid=f"uid-{name}", generation=1, resourceVersion="1")
    deployment = new_deployment(foo)
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return foo, deployment


class _Run:
    """A controller of ``controller_class`` in the background, with a recorder; ``stop()``."""

    def __init__(self, controller: FooController) -> None:
        self.controller = controller
        self.recorder = TimelineRecorder(controller)
        self._stop = StopEvent()
        self._thread = threading.Thread(
            target=run_controller, args=(controller, 1, self._stop), name="foo-controller-check"
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT)
        self.recorder.detach()


def _delete_foo(
    api: kubernetes.client.ApiClient, namespace: str, name: str, *, force: bool = False
) -> None:
    """Delete Foo ``name`` if it exists; ``force``: take off a finalizer that holds it first."""
    custom = kubernetes.client.CustomObjectsApi(api)
    args = (FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, name)
    try:
        if force:
            custom.patch_namespaced_custom_object(*args, {"metadata": {"finalizers": None}})
        custom.delete_namespaced_custom_object(*args)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _foos(api: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    return {
        "group": FOO_GROUP,
        "version": FOO_VERSION,
        "namespace": namespace,
        "plural": FOO_PLURAL,
    }


# --- 06a, exercise 1 (check_1): repair image drift -----------------------------------------------


def _repairing(learners: Callable[[Foo, Deployment], bool]) -> type[FooController]:
    class Repairing(FooController):
        """Chapter 05's controller, deciding with the learner's ``needs_update``."""

        def needs_update(self, foo: Mapping[str, Any], deployment: Mapping[str, Any]) -> bool:
            # the informer's objects are dicts (read-only: _offline_1 checked it leaves them be)
            return bool(learners(cast(Foo, foo), cast(Deployment, deployment)))

    return Repairing


def _offline_1(needs_update: Callable[[Foo, Deployment], bool]) -> str | None:
    """Why ``needs_update`` is wrong on plain dicts, or None."""
    same_foo, same = _foo("same", 2)
    scaled_foo, scaled = _foo("scaled", 2)
    scaled["spec"]["replicas"] = 5
    drifted_foo, drifted = _foo("drifted", 2, image="nginx:1.27")
    cases = [
        (same_foo, same, False, "a Deployment exactly as the Foo asks"),
        (scaled_foo, scaled, True, "a Deployment scaled to 5 for a Foo of 2"),
        (drifted_foo, drifted, True, "a Deployment whose image is nginx:1.27"),
    ]
    for foo, deployment, expected, what in cases:
        before = copy.deepcopy((foo, deployment))
        answer = needs_update(foo, deployment)
        if (foo, deployment) != before:
            return "it changed the objects it was given: they are the cache's, read-only"
        if bool(answer) != expected:
            return f"it says {answer!r} for {what}; it should say {expected}"
    return None


def check_1(
    needs_update: Callable[[Foo, Deployment], bool] | None,
    api: kubernetes.client.ApiClient,
    namespace: str,
) -> Verdict:
    """``needs_update(foo, deployment)`` repairs replicas and image drift, and nothing else."""
    if needs_update is None:
        return not_attempted("1", "set needs_update to your function")
    try:
        problem = _offline_1(needs_update)
    except Exception as exc:  # reported to the learner, not swallowed
        return wrong("1", f"it raised {type(exc).__name__}: {exc}")
    if problem:
        return wrong("1", problem)
    namespace = namespaces.ensure_namespace(api, namespace)  # after Run All the chapter deleted it
    apps = kubernetes.client.AppsV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    name = "exercise-1-drift"
    _delete_foo(api, namespace, name)
    run = _Run(_repairing(needs_update).new(api, namespace=namespace))
    print(f"exercise 1: a controller with your needs_update runs; waiting for Deployment {name}")
    try:
        custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body(name, name, 1)
        )
        wait_for(
            apps.list_namespaced_deployment,
            lambda found: name in found,
            what=f"Deployment {name}",
            timeout=TIMEOUT,
            namespace=namespace,
        )
        container = {"name": "nginx", "image": "nginx:1.27"}
        image = {"spec": {"template": {"spec": {"containers": [container]}}}}
        apps.patch_namespaced_deployment(name, namespace, image)
        print(f"exercise 1: image set to nginx:1.27 by hand; waiting up to {REPAIR:g} s for a fix")
        try:
            repaired = wait_for(
                apps.list_namespaced_deployment,
                lambda found: _image(found.get(name)) == "nginx:latest",
                what=f"the image of Deployment {name} to be nginx:latest again",
                timeout=REPAIR,
                namespace=namespace,
            )[name]
        except CourseError:
            return wrong("1", "the image stayed nginx:1.27: the sync never updated it")
        # A change that is not about the Deployment: its sync must not update the Deployment.
        touched = custom.patch_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, name,
            {"metadata": {"annotations": {"exercise": "touched"}}},
        )  # fmt: skip
        sync = run.recorder.wait_saw("Foo", name, touched["metadata"]["resourceVersion"])
        if any(w.verb == "update Deployment" for w in sync.writes):
            return wrong("1", "a sync updated a Deployment that had not drifted at all")
    finally:
        run.stop()
        _delete_foo(api, namespace, name)
    return correct("1", f"image back to {_image(repaired)}; no update when nothing drifted")


def _image(deployment: Mapping[str, Any] | None) -> str | None:
    try:
        if deployment is None:
            return None
        return deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    except (KeyError, IndexError, TypeError):
        return None


# --- 06a, exercise 2 (check_2): both limiters at once --------------------------------------------

FOOS_3 = 400
"""Foos that fail at once, and on every retry after (each retry fails as soon as it runs)."""

FAILURES_3 = 12
"""The failure of Foo #1 whose retry delay the exercise asks about."""


def limiters_3() -> tuple[list[float], float, float]:
    """What sample-controller's two limiters say when ``FOOS_3`` Foos fail at once and on every
    retry: each first retry's delay, and for Foo #1 after its ``FAILURES_3``-th failure the
    per-item delay and the bucket's. They are the two parts of
    :func:`helpers.controller.foo_rate_limiter`, asked separately on a fake clock (its max-of
    asks both every time, as here)."""
    clock = FakeClock()
    item = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    bucket = BucketRateLimiter(qps=50, burst=300, clock=clock)
    waiting: list[tuple[float, int, str]] = []
    first = []
    for number in range(1, FOOS_3 + 1):
        key = f"ns/foo-{number}"
        delay = max(item.when(key), bucket.when(key))
        first.append(delay)
        heapq.heappush(waiting, (delay, number, key))
    failures = 1
    while True:
        due, number, key = heapq.heappop(waiting)
        clock.step(due - clock.now())  # its retry runs, and fails again
        per_item, shared = item.when(key), bucket.when(key)
        if number == 1:
            failures += 1
            if failures == FAILURES_3:
                return first, per_item, shared
        heapq.heappush(waiting, (due + max(per_item, shared), number, key))


def check_2(answer: tuple[float, str] | None) -> Verdict:
    """When the last of 400 first retries runs, and which limiter sets Foo #1's delay after its
    12th failure; asked of sample-controller's two limiters on a fake clock."""
    if answer is None:
        return not_attempted("2", 'set prediction to (seconds, "per-item" or "bucket")')
    if (
        not isinstance(answer, tuple | list)
        or len(answer) != 2
        or type(answer[0]) not in (int, float)  # not a bool, nor a number that equals anything
        or type(answer[1]) is not str
        or answer[1] not in ("per-item", "bucket")
    ):
        return wrong("2", 'prediction should be a pair: (seconds, "per-item" or "bucket")')
    seconds, which = float(answer[0]), answer[1]
    first, per_item, shared = limiters_3()
    last = max(first)
    if abs(seconds - last) > 0.02:
        return wrong(
            "2",
            f"the last first retry does not run {seconds:g} s after the failures: how many of "
            f"the {FOOS_3} find a token in the burst, and how long does the last of the others "
            "wait for one at 50 a second?",
        )
    decides = "per-item" if per_item >= shared else "bucket"
    if which != decides:
        return wrong(
            "2",
            f"the {which} limiter does not decide Foo #1's 12th delay: compare its per-item delay "
            f"after {FAILURES_3} failures with the longest the bucket can make a Foo wait, when "
            f"{FOOS_3} Foos each hold at most one place in the bucket's line",
        )
    return correct(
        "2",
        f"the last first retry waits {last:g} s ({sum(d > 0.005 for d in first)} Foos "
        f"beyond the burst); after Foo #1's 12th failure the per-item delay is {per_item:g} s, "
        f"the bucket's {shared:g} s",
    )


# --- 06b, exercise 1 (check_3): the predicate that stops the runaway -----------------------------

FINALIZER = "exercise.controllers-from-scratch.dev/hold"


class _Stamping(FooController):
    """The chapter's runaway: observedGeneration and the time of each sync, in every status."""

    def update_foo_status(self, foo: Mapping[str, Any], deployment: Mapping[str, Any]) -> None:
        foo_copy = copy.deepcopy(dict(foo))
        status = foo_copy.setdefault("status", {})
        status["availableReplicas"] = (deployment.get("status") or {}).get("availableReplicas", 0)
        status["observedGeneration"] = foo["metadata"]["generation"]
        status["lastSyncTime"] = datetime.now(UTC).isoformat(timespec="microseconds")[:26] + "Z"
        self.clients.update_foo_status(foo_copy["metadata"]["namespace"], foo_copy)


class _Filtered:
    """A Foo informer whose controller handler sees only the updates ``wakes`` lets through.

    Every other use (starting, stopping, the lister, the recorder's own handler)
    goes to the real informer. What the learner's function raised is kept in
    ``raised``: it runs in the informer's thread, where nobody would see it.
    """

    def __init__(self, informer: Any, wakes: Callable[[Foo, Foo], bool]) -> None:
        self._informer = informer
        self._wakes = wakes
        self.raised: Exception | None = None

    def add_event_handler(self, handler: Any = None, **kwargs: Any) -> Any:
        on_update = kwargs.get("on_update")
        if on_update is not None and kwargs.get("name") == "foo-controller":

            def filtered(old: Any, new: Any) -> None:
                try:
                    wake = self._wakes(copy.deepcopy(old), copy.deepcopy(new))
                except Exception as exc:
                    self.raised = exc
                    return
                if wake:
                    on_update(old, new)

            kwargs["on_update"] = filtered
        return self._informer.add_event_handler(handler, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._informer, name)


def _offline_2(wakes: Callable[[Foo, Foo], bool]) -> str | None:
    """Why ``wakes`` is wrong on plain dicts, or None."""
    old, _ = _foo("offline", 1)
    old["status"] = {"availableReplicas": 1, "observedGeneration": 1}

    def changed(change: Callable[[Foo], None]) -> Foo:
        new = copy.deepcopy(old)
        new["metadata"]["resourceVersion"] = "2"
        change(new)
        return new

    def status(foo: Foo) -> None:
        foo["status"]["lastSyncTime"] = "2026-12-04T10:00:00.000001Z"

    def spec(foo: Foo) -> None:
        foo["spec"]["replicas"] = 2
        foo["metadata"]["generation"] = 2

    def deletion(foo: Foo) -> None:
        foo["metadata"].update(deletionTimestamp="2026-12-04T10:00:00Z", generation=2,
                               finalizers=[FINALIZER])  # fmt: skip

    def by_hand(foo: Foo) -> None:
        foo["status"]["availableReplicas"] = 7

    cases = [
        (status, False, "a Foo whose status alone changed (the controller's own write)"),
        (spec, True, "a Foo whose spec.replicas changed from 1 to 2"),
        (deletion, True, "a Foo being deleted while a finalizer holds it"),
        (by_hand, True, "a Foo whose status someone else wrote by hand (availableReplicas: 7, "
                        "no lastSyncTime of ours): nothing would ever put it right"),
    ]  # fmt: skip
    for change, expected, what in cases:
        new = changed(change)
        before = copy.deepcopy((old, new))
        answer = wakes(old, new)
        if (old, new) != before:
            return "it changed the objects it was given: they are the cache's, read-only"
        if bool(answer) != expected:
            return f"it says {answer!r} for {what}; it should say {expected}"
    return None


def check_3(
    wakes: Callable[[Foo, Foo], bool] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """The stamping controller with ``wakes`` in front of its Foo updates: reconciled, quiet, and
    still told about a deletion."""
    if wakes is None:
        return not_attempted("1", "set wakes to your function")
    try:
        problem = _offline_2(wakes)
    except Exception as exc:  # reported to the learner, not swallowed
        return wrong("1", f"it raised {type(exc).__name__}: {exc}")
    if problem:
        return wrong("1", problem)
    namespace = namespaces.ensure_namespace(api, namespace)
    extended = status_is_extended(api)
    extend_foo_status(api, namespace)
    custom = kubernetes.client.CustomObjectsApi(api)
    name = "exercise-2-wakes"
    _delete_foo(api, namespace, name, force=True)
    controller = _Stamping.new(api, namespace=namespace)
    filtered = _Filtered(controller.foo_informer, wakes)
    # _Filtered stands in for the Foo informer (it hides some events); FooController is typed
    # for a SharedInformer, hence the ignore.
    controller = _Stamping(controller.clients, filtered, controller.deployment_informer)  # type: ignore[arg-type]
    run = _Run(controller)
    try:
        verdict = _run_2(run, custom, namespace, name)
        if filtered.raised is not None:
            raised = filtered.raised
            return wrong("1", f"it raised {type(raised).__name__} on the cluster: {raised}")
        return verdict
    finally:
        run.stop()
        _delete_foo(api, namespace, name, force=True)
        if not extended:
            restore_foo_status(api, namespace)


def _run_2(
    run: _Run, custom: kubernetes.client.CustomObjectsApi, namespace: str, name: str
) -> Verdict:
    args = (FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL)
    custom.create_namespaced_custom_object(*args, foo_body(name, name, 1))
    print(f"exercise 1: the stamping controller runs with your wakes; waiting for Foo {name}")
    _wait_reconciled(custom, namespace, name, 1)
    custom.patch_namespaced_custom_object(*args, name, {"spec": {"replicas": 2}})
    try:
        _wait_reconciled(custom, namespace, name, 2)
    except AssertionError:
        return wrong("1", "after spec.replicas changed to 2 the Foo was never reconciled")
    key = f"{namespace}/{name}"
    print(f"exercise 1: reconciled; waiting up to {REPAIR:g} s for {QUIET:g} s without a sync")
    quiet_from = _quiet(run.recorder, key)
    if quiet_from is None:
        return wrong("1", f"the controller kept syncing: no {QUIET:g} s went by without a sync")
    syncs = len(run.recorder.syncs(key))
    custom.patch_namespaced_custom_object_status(*args, name, {"status": {"availableReplicas": 7}})
    print(f"exercise 1: status set to 7 by hand; waiting up to {REPAIR:g} s for it to be put right")
    try:
        _wait_reconciled(custom, namespace, name, 2, timeout=REPAIR)
    except AssertionError:
        return wrong("1", "a status written by hand (availableReplicas: 7) was never put right")
    custom.patch_namespaced_custom_object(*args, name, {"metadata": {"finalizers": [FINALIZER]}})
    deleted = custom.delete_namespaced_custom_object(*args, name)
    version = (deleted.get("metadata") or {}).get("resourceVersion", "")
    try:
        run.recorder.wait_saw("Foo", name, version, timeout=TIMEOUT)
    except TimeoutError:
        return wrong("1", "the Foo was deleted (a finalizer held it) and the controller never knew")
    return correct(
        "1", f"reconciled in {syncs} syncs, then quiet; a deletion still woke the controller"
    )


def _wait_reconciled(
    custom: kubernetes.client.CustomObjectsApi,
    namespace: str,
    name: str,
    replicas: int,
    timeout: float = TIMEOUT,
) -> dict[str, Any]:
    def done(foos: dict[str, Any]) -> bool:
        foo = foos.get(name) or {}
        status = foo.get("status") or {}
        return (
            status.get("observedGeneration") == foo["metadata"]["generation"]
            and status.get("availableReplicas") == replicas
        )

    try:
        return wait_for(
            custom.list_namespaced_custom_object,
            done,
            what=f"Foo {name} to be reconciled with {replicas} available",
            timeout=timeout,
            **_foos(custom.api_client, namespace),
        )[name]
    except CourseError as exc:
        raise AssertionError(
            f"Foo {name} never showed observedGeneration == generation and "
            f"{replicas} available replicas: {exc}"
        ) from exc


def _synced_since(recorder: TimelineRecorder, *, key: str, since: float) -> bool:
    return bool(recorder.syncs(key, since))


def _quiet(recorder: TimelineRecorder, key: str) -> float | None:
    """The time from which ``key`` had no sync for ``QUIET`` seconds, within ``REPAIR``; None if
    it never went quiet. Waiting for what must not happen: a timeout is the good outcome."""
    deadline = recorder.now() + REPAIR
    while recorder.now() < deadline:
        since = recorder.now()
        try:
            recorder.wait_for(
                functools.partial(_synced_since, key=key, since=since), "a sync", QUIET
            )
        except TimeoutError:
            return since
    return None


# --- 06b, exercise 2 (check_4): the stale reads --------------------------------------------------

EVENTS_4 = [("10", 0.0), ("12", 1.1), ("15", 3.2), ("16", 4.6)]
"""The versions of Foo x the informer delivered, and when; 16 is someone else's write."""

SYNCS_4: dict[str, tuple[str, float, list[tuple[str, str | None, str]]]] = {
    "a": ("10", 1.0, [("update Foo status", None, "12")]),
    "b": ("10", 1.05, [("update Foo status", "409 Conflict: the object has been modified", "")]),
    "c": ("12", 3.0, [("update Foo status", None, "15")]),
    "d": ("12", 3.1, [("create Deployment", "500 InternalError: etcd leader changed", "")]),
    "e": ("15", 4.5, [("update Foo status", "409 Conflict: the object has been modified", "")]),
}
"""Each sync, in the order they started: the version of x it read, when it started, and its
writes (verb, error, version)."""

HINTS_4 = {
    "a": "a read 10 before the controller had written anything",
    "c": "c read 12, the very version a's status write had made",
    "e": "e read 15, its own last write; its 409 came from someone else's write (16)",
    "b": "b read 10 just after a's status write had made 12: our own write was not back yet",
    "d": "d read 12 after c's write had made 15; it failed before it could meet a 409, but it "
    "read stale data all the same",
}


def record_4() -> tuple[list[Sync], list[InformerEvent]]:
    """The exercise's table as a recorder would have kept it."""
    syncs = []
    for read, started, writes in SYNCS_4.values():
        error = next((e for _, e, _ in writes if e), None)
        written = [Write(started + 0.01, "foo-worker-1", verb, "x", e, version)
                   for verb, e, version in writes]  # fmt: skip
        syncs.append(Sync("foo-worker-1", "ns/x", started, started + 0.02,
                          FAILED if error else SYNCED, error, writes=written,
                          seen={"Foo": read}))  # fmt: skip
    events = [InformerEvent(at, "Foo", "update", "x", ("status",), version, "ns/x")
              for version, at in EVENTS_4]  # fmt: skip
    return syncs, events


def check_4(answer: set[str] | None) -> Verdict:
    """The syncs of the exercise's record that read a Foo older than the controller's own write."""
    if answer is None:
        return not_attempted("2", 'set stale_letters to a set of letters, for example {"a"}')
    if not isinstance(answer, (set, frozenset, list, tuple)) or not set(answer) <= set(SYNCS_4):
        return wrong("2", f"stale_letters should be a set of the letters {sorted(SYNCS_4)}")
    syncs, events = record_4()
    letters = dict(zip((s.started for s in syncs), SYNCS_4, strict=True))
    stale = {letters[s.started] for s in stale_reads(syncs, events)}
    extra, missing = sorted(set(answer) - stale), sorted(stale - set(answer))
    if extra:
        return wrong("2", f"not {extra[0]}: {HINTS_4[extra[0]]}")
    if missing:
        return wrong("2", f"{missing[0]} is missing: {HINTS_4[missing[0]]}")
    return correct("2", f"{' and '.join(sorted(stale))}: a 409 is not the proof, the versions are")
