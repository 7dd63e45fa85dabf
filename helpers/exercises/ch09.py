"""Checks for chapter 09's exercises, in its two parts: tests that catch planted bugs.

09a (unit and API-server tests), checks 1 to 4, and 09b (fault drills), check
6, hand the learner a Foo controller with one bug planted in it, described in
the chapter. The learner writes a test: a function that takes
``controller_class`` (and ``api`` and ``namespace``, if it needs the cluster)
and fails, by raising, when that controller is wrong. A check runs the test
twice: on a controller without the bug, where it must pass, and on the planted
bug, where it must fail. A test that always passes, or always fails, or one
that only repeats what the chapter's own tests check, gets "wrong".

Both controllers come *disguised*: each run gets two classes made afresh, under
made-up names, that define the same methods (each calling chapter 05's
``FooController`` or the planted bug's), so a test cannot tell them apart by
name, by ancestry or by which methods they define (``assert
controller_class.__name__ != "ComparesWholeSpec"`` would otherwise "catch" the
bug). Only what the controller does tells them apart.

Check 5 (09b's first exercise) asks for a prediction: what a re-list after a
``410`` hands the handlers when the object behind a name was replaced.

Verdicts name the exercise as its notebook numbers it (checks 5 and 6 are
09b's exercises 1 and 2). A check that runs the learner's test on the cluster
says so before it starts, and again every few seconds while the test runs.
"""

from __future__ import annotations

import inspect
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import kubernetes
import urllib3
from kubernetes.client.exceptions import ApiException

from .. import namespaces
from ..controller import (
    ERR_RESOURCE_EXISTS,
    MESSAGE_RESOURCE_EXISTS,
    MESSAGE_RESOURCE_SYNCED,
    NORMAL,
    SUCCESS_SYNCED,
    WARNING,
    FooController,
    ResourceExistsError,
    is_controlled_by,
    new_deployment,
)
from ..lister import NotFoundError
from ..store import split_meta_namespace_key
from . import Verdict, correct, not_attempted, wrong

log = logging.getLogger("helpers.exercises.ch09")

# --- the planted bugs ----------------------------------------------------------------------------
# Written without super(): a disguised class calls these functions on an object that is a
# FooController, not an instance of the class that defines them.


class ComparesWholeSpec(FooController):
    """Exercise 1 (09a): updates the Deployment whenever its spec differs from what it builds.

    It looks stricter than comparing replicas, and every hand-made test agrees.
    But the API server fills in defaults (a strategy, a revision history limit,
    a restart policy...), so the spec it keeps never equals the one we build:
    every sync of every Foo sends an update, for ever.
    """

    def sync_handler(self, key: str) -> None:
        try:
            namespace, name = split_meta_namespace_key(key)
            foo = self.foos_lister.namespace(namespace).get(name)
        except (ValueError, NotFoundError):
            return
        spec = foo.get("spec") or {}
        deployment_name = spec.get("deploymentName")
        if not deployment_name:
            return
        try:
            deployment = self.deployments_lister.namespace(namespace).get(deployment_name)
        except NotFoundError:
            deployment = self.clients.create_deployment(namespace, new_deployment(foo))
        if not is_controlled_by(deployment, foo):
            message = MESSAGE_RESOURCE_EXISTS.format(name=deployment_name)
            self.clients.record_event(foo, WARNING, ERR_RESOURCE_EXISTS, message)
            raise ResourceExistsError(message)
        wanted = new_deployment(foo)
        if wanted["spec"] != deployment.get("spec"):  # the bug: the server's defaults differ
            deployment = self.clients.update_deployment(namespace, wanted)
        self.update_foo_status(foo, deployment)
        self.clients.record_event(foo, NORMAL, SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED)


class CreatesOrUpdates(FooController):
    """Exercise 2 (09a): a create that finds the Deployment already there becomes an update.

    "Create or update: idempotent." A create answered ``409 AlreadyExists`` means
    a Deployment of that name exists, though the cache does not show it: the
    cache is behind, or somebody else made it. This controller then replaces it
    with the one its Foo asks for, owner reference and all, and skips the
    ownership check: it takes over a Deployment that may be somebody else's.
    ``FooController`` fails the sync instead; the next one finds the Deployment
    in the cache and checks whose it is.
    """

    def sync_handler(self, key: str) -> None:
        try:
            namespace, name = split_meta_namespace_key(key)
            foo = self.foos_lister.namespace(namespace).get(name)
        except (ValueError, NotFoundError):
            return
        spec = foo.get("spec") or {}
        deployment_name = spec.get("deploymentName")
        if not deployment_name:
            return
        try:
            deployment = self.deployments_lister.namespace(namespace).get(deployment_name)
        except NotFoundError:
            try:
                deployment = self.clients.create_deployment(namespace, new_deployment(foo))
            except ApiException as err:
                if err.status != 409:
                    raise
                # the bug: it exists, so make it ours (whoever's it was)
                deployment = self.clients.update_deployment(namespace, new_deployment(foo))
        if not is_controlled_by(deployment, foo):
            message = MESSAGE_RESOURCE_EXISTS.format(name=deployment_name)
            self.clients.record_event(foo, WARNING, ERR_RESOURCE_EXISTS, message)
            raise ResourceExistsError(message)
        wanted, have = spec.get("replicas"), (deployment.get("spec") or {}).get("replicas")
        if wanted is not None and wanted != have:
            deployment = self.clients.update_deployment(namespace, new_deployment(foo))
        self.update_foo_status(foo, deployment)
        self.clients.record_event(foo, NORMAL, SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED)


class WritesIntoTheCache(FooController):
    """Exercise 3 (09a): writes the status into the Foo it got from the lister, not into a copy.

    Every reader of the informer's cache now sees a status the API server may
    never have accepted (the write can still fail), and the next sync compares
    against it.
    """

    def update_foo_status(self, foo: Mapping[str, Any], deployment: Mapping[str, Any]) -> None:
        available = (deployment.get("status") or {}).get("availableReplicas", 0)
        foo.setdefault("status", {})["availableReplicas"] = available  # type: ignore[attr-defined]
        self.clients.update_foo_status(foo["metadata"]["namespace"], dict(foo))


class IgnoresDeploymentChanges(FooController):
    """Exercise 4 (09a): only a Deployment's add and delete reach the Foo; its updates do not.

    Creating, repairing a deleted Deployment and scaling the Foo still work,
    since they start from a Foo event or a Deployment's add or delete. But a
    Deployment changed behind the Foo's back (scaled by hand) is left as it is,
    and its status changes (Pods becoming available) never wake the Foo up, so
    its status stays what it was at the last sync. That sync may come late
    enough to read the Pods available, so only a change to the Deployment alone
    shows the bug every time.
    """

    def handle_deployment_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        return  # the bug: Deployment updates are dropped


class GivesUpOnBrokenConnections(FooController):
    """Exercise 6 (09b's second): a sync whose request got no answer ends as if it had succeeded.

    "A broken connection is the network's fault; the next event brings the Foo
    back." After a ``409`` that is true: the Foo changed, and its event is on the
    way. A request that got no answer at all (connection refused, reset, cut)
    changed nothing on the server, so no event comes: if the Deployment's create
    was what broke, the Foo waits without a Deployment until something else
    happens to it. The bug catches urllib3's errors, what the Python client
    raises when no answer came (``MaxRetryError`` for a refused connection,
    ``ProtocolError`` for one cut mid-answer).
    """

    def sync_handler(self, key: str) -> None:
        try:
            FooController.sync_handler(self, key)
        except urllib3.exceptions.HTTPError as err:  # the bug: forget the key
            log.warning("no answer from the API server syncing %s (%s); never mind", key, err)


# --- running a learner's test --------------------------------------------------------------------

PLANTED: dict[str, type[FooController]] = {
    "1": ComparesWholeSpec,
    "2": CreatesOrUpdates,
    "3": WritesIntoTheCache,
    "4": IgnoresDeploymentChanges,
    "6": GivesUpOnBrokenConnections,
}

NUMBERED = {"1": "1", "2": "2", "3": "3", "4": "4", "5": "1", "6": "2"}
"""The exercise's number in its notebook, as verdicts name it (09b numbers checks 5 and 6 1, 2)."""

HINTS = {
    "1": "sync a Foo that has converged once more (run.resync) and look at what that sync "
    "wrote: a Deployment that already matches needs no update",
    "2": "when does a create find the Deployment already there, though the cache has none? Give "
    "sync_once what the cache shows then, and clients that answer that create as the API server "
    "would; then ask what the sync may and may not write",
    "3": "keep a deep copy of the Foo you put in the cache, run one sync, and compare the cached "
    "Foo (outcome.controller.foos_lister) with the copy",
    "4": "change the Deployment alone, once the Foo has converged and the controller is idle "
    "(run.wait_idle(): no retry left to sync the Foo for another reason): scale it to 1 yourself "
    "(AppsV1Api.patch_namespaced_deployment), then wait until it is back at the Foo's replicas "
    "with that many Pods available (kube-controller-manager and kwok make them), and the Foo "
    "says so",
    "6": "let the controller's writes, and only those, go through a proxy (clients=KubeClients("
    "proxied)); refuse and cut its connections before the Foo's first sync can create the "
    "Deployment, then let them through again: which controller still converges?",
}

WHAT = {
    "1": "compares the whole spec",
    "2": "turns a create that finds the Deployment there into an update",
    "3": "writes into the lister's Foo",
    "4": "ignores Deployment updates",
    "6": "gives up on a request that got no answer",
}

WAITS_FOR = {
    "1": "the Foo's Deployment and status",
    "4": "Pods: kube-controller-manager makes them, kwok makes them Ready",
    "6": "the Foo's Deployment and status",
}
"""What a test of each cluster exercise waits for on the cluster, as the check tells the learner."""

PROGRESS_EVERY = 10.0
"""Seconds between two "still running" lines while a learner's test runs on the cluster."""


def _calling(function: Callable[..., Any], method: str, owner: str) -> Callable[..., Any]:
    """A method named ``method`` of class ``owner`` that calls ``function``."""

    def call(self: FooController, *args: Any, **kwargs: Any) -> Any:
        return function(self, *args, **kwargs)

    call.__name__, call.__qualname__ = method, f"{owner}.{method}"
    return call


def disguised(behaviour: type[FooController], methods: Iterable[str]) -> type[FooController]:
    """A new FooController subclass under a made-up name whose ``methods`` do what
    ``behaviour``'s do: nothing in its name, ancestry or attributes says which it is."""
    name = f"Controller{secrets.token_hex(3).upper()}"
    body: dict[str, Any] = {
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": "A Foo controller: with the bug, or without it.",
    }
    for method in methods:
        body[method] = _calling(getattr(behaviour, method), method, name)
    return type(name, (FooController,), body)


def disguised_pair(exercise: str) -> tuple[type[FooController], type[FooController]]:
    """(without the bug, with it): two fresh classes that define the same methods."""
    planted = PLANTED[exercise]
    methods = sorted(name for name, value in vars(planted).items()
                     if inspect.isfunction(value) and not name.startswith("__"))  # fmt: skip
    return disguised(FooController, methods), disguised(planted, methods)


def _run_test(
    test: Callable[..., Any],
    controller_class: type[FooController],
    api: kubernetes.client.ApiClient | None,
    namespace: str,
    say: Callable[[float], str] | None = None,
) -> BaseException | None:
    """Call the learner's ``test`` with the arguments it asks for; what it raised, or None.

    With ``say``, the test runs in a thread of its own and ``say(seconds)`` is
    printed every :data:`PROGRESS_EVERY` seconds while it runs.
    """
    offered = {"controller_class": controller_class, "api": api, "namespace": namespace}
    wanted = inspect.signature(test).parameters
    arguments = {name: value for name, value in offered.items() if name in wanted}
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            test(**arguments)
        except Exception as raised:  # a failing test is what we look for
            outcome.append(raised)
        else:
            outcome.append(None)

    if say is None:
        run()
        return outcome[0]
    started = time.monotonic()
    runner = threading.Thread(target=run, name="exercise-test")
    runner.start()
    while True:
        runner.join(PROGRESS_EVERY)
        if not runner.is_alive():
            return outcome[0]
        print(say(time.monotonic() - started), flush=True)


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:160]}" if text else type(error).__name__


def _check(
    exercise: str,
    test: Callable[..., Any] | None,
    api: kubernetes.client.ApiClient | None,
    namespace: str,
) -> Verdict:
    number = NUMBERED[exercise]
    if test is None:
        return not_attempted(number, f"set test_{exercise} to your test function")
    if not callable(test):
        return wrong(number, f"test_{exercise} should be a function, got {type(test).__name__}")
    parameters = set(inspect.signature(test).parameters)
    unknown = parameters - {"controller_class", "api", "namespace"}
    if "controller_class" not in parameters or unknown:
        return wrong(
            number,
            "the test must take controller_class (and api, namespace if it uses the cluster), "
            f"nothing else; it takes {sorted(parameters)}",
        )
    say: Callable[[str], Callable[[float], str]] | None = None
    if parameters & {"api", "namespace"}:
        if api is None:
            return wrong(number, "this test uses the cluster: pass api to the check")
        namespace = namespaces.ensure_namespace(api, namespace)
        waits = WAITS_FOR.get(exercise, "what it waits for")
        print(f"Exercise {number}: running your test on the cluster, on a controller without "
              f"the bug, then on one with it (each run waits for {waits}; seconds, or as long "
              "as your test's timeouts when it waits in vain) ...", flush=True)  # fmt: skip

        def say(which: str) -> Callable[[float], str]:
            return lambda seconds: (
                f"  ... still running on the controller {which} after {seconds:.0f} s: your test "
                f"waits for {waits}, or for a timeout of its own"
            )

    fixed, planted = disguised_pair(exercise)
    on_fixed = _run_test(test, fixed, api, namespace, say and say("without the bug"))
    if on_fixed is not None:
        return wrong(
            number,
            f"your test fails on a controller without the bug too ({_one_line(on_fixed)}): a "
            "test must pass on a controller without the bug",
        )
    on_planted = _run_test(test, planted, api, namespace, say and say("with the bug"))
    name = PLANTED[exercise].__name__
    if on_planted is None:
        return wrong(
            number,
            f"your test passes on {name}, the controller that {WHAT[exercise]}: it does not "
            f"catch the bug. Hint: {HINTS[exercise]}",
        )
    return correct(
        number,
        f"passes on a controller without the bug, fails on {name} with {_one_line(on_planted)}",
    )


def check_1(
    test_1: Callable[..., Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """09a, exercise 1: a test that catches :class:`ComparesWholeSpec`."""
    return _check("1", test_1, api, namespace)


def check_2(
    test_2: Callable[..., Any] | None,
    api: kubernetes.client.ApiClient | None = None,
    namespace: str = "",
) -> Verdict:
    """09a, exercise 2: a test that catches :class:`CreatesOrUpdates`."""
    return _check("2", test_2, api, namespace)


def check_3(
    test_3: Callable[..., Any] | None,
    api: kubernetes.client.ApiClient | None = None,
    namespace: str = "",
) -> Verdict:
    """09a, exercise 3: a test that catches :class:`WritesIntoTheCache`."""
    return _check("3", test_3, api, namespace)


def check_4(
    test_4: Callable[..., Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """09a, exercise 4: a test that catches :class:`IgnoresDeploymentChanges`."""
    return _check("4", test_4, api, namespace)


# --- 09b, exercise 1: a name taken over while the watch was away ---------------------------------

ANSWER_5 = "c"
WHY_NOT_5 = {
    "a": "a re-list says only which names exist now. The informer compares the list with its "
    "cache name by name: a name it has and the list has is not a delete, whatever happened "
    "to the object behind it",
    "b": "the update does reach handle_deployment_update, and the versions differ, so "
    "handle_object gets the new Deployment. Which Foo does handle_object look up for it?",
    "d": "the listed web-deployment is a new object: a new resourceVersion (and UID), so the "
    "informer does tell its handlers",
}


def check_5(answer: str | None) -> Verdict:
    """09b, exercise 1: after the re-list, an update whose new object has no owner."""
    if answer is None:
        return not_attempted("1", 'set answer_5 to "a", "b", "c" or "d"')
    choice = str(answer).strip().lower()
    if choice not in ("a", "b", "c", "d"):
        return wrong("1", f'answer with one letter, "a" to "d" (got {answer!r})')
    if choice != ANSWER_5:
        return wrong("1", WHY_NOT_5[choice])
    return correct(
        "1",
        "the informer hands its handlers an update (ours as old, theirs as new); handle_object "
        "follows the new object's controller owner reference, and it has none, so no Foo key is "
        "queued. Nothing says web's Deployment is no longer its own until the Foo is synced for "
        "another reason: with main.go's periodic resync, within 30 s, and then ErrResourceExists",
    )


def check_6(
    test_6: Callable[..., Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """09b, exercise 2: a fault drill that catches :class:`GivesUpOnBrokenConnections`."""
    return _check("6", test_6, api, namespace)
