"""Checks for chapter 09's exercises (testing a controller): tests that catch planted bugs.

Each exercise hands the learner a Foo controller with one bug planted in it,
described in the chapter. The learner writes a test, a function that takes
``controller_class`` (and ``api`` and ``namespace``, if it needs the cluster)
and fails, by raising, when that controller is wrong. A check runs the test
twice: on chapter 05's :class:`~helpers.controller.FooController`, where it
must pass, and on the planted bug, where it must fail. A test that always
passes, or always fails, or one that only repeats what the chapter's own
tests check, gets "wrong".
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
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


class ComparesWholeSpec(FooController):
    """Exercise 1: updates the Deployment whenever its spec differs from ``new_deployment(foo)``.

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


class SwallowsConflicts(FooController):
    """Exercise 2: a status write that meets 409 Conflict is logged and forgotten.

    The sync returns as if it had succeeded, so its key is never retried: the
    status the Foo should have is lost until something else changes.
    """

    def update_foo_status(self, foo: Mapping[str, Any], deployment: Mapping[str, Any]) -> None:
        try:
            super().update_foo_status(foo, deployment)
        except ApiException as err:
            if err.status != 409:
                raise
            log.info("conflict writing the status of %s; never mind", foo["metadata"]["name"])


class WritesIntoTheCache(FooController):
    """Exercise 3: writes the status into the Foo it got from the lister, not into a copy.

    Every reader of the informer's cache now sees a status the API server may
    never have accepted (the write can still fail), and the next sync compares
    against it.
    """

    def update_foo_status(self, foo: Mapping[str, Any], deployment: Mapping[str, Any]) -> None:
        available = (deployment.get("status") or {}).get("availableReplicas", 0)
        foo.setdefault("status", {})["availableReplicas"] = available  # type: ignore[attr-defined]
        self.clients.update_foo_status(foo["metadata"]["namespace"], dict(foo))


class IgnoresDeploymentChanges(FooController):
    """Exercise 4: only a Deployment's add and delete reach the Foo; its updates do not.

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


# --- running a learner's test --------------------------------------------------------------------

PLANTED = {
    "1": ComparesWholeSpec,
    "2": SwallowsConflicts,
    "3": WritesIntoTheCache,
    "4": IgnoresDeploymentChanges,
}

HINTS = {
    "1": "sync a Foo that has converged once more (run.resync) and look at what that sync "
    "wrote: a Deployment that already matches needs no update",
    "2": "give sync_once clients that answer the status write with a 409 "
    '(fail={"update_foo_status": ApiException(status=409)}): what must the sync do so '
    "that its key is retried?",
    "3": "keep a deep copy of the Foo you put in the cache, run one sync, and compare the cached "
    "Foo (outcome.controller.foos_lister) with the copy",
    "4": "change the Deployment alone, once the Foo has converged: scale it to 1 yourself "
    "(AppsV1Api.patch_namespaced_deployment), then wait until it is back at the Foo's replicas "
    "with that many Pods available (kube-controller-manager and kwok make them), and the Foo "
    "says so",
}

WHAT = {
    "1": "compares the whole spec",
    "2": "forgets the key after a 409",
    "3": "writes into the lister's Foo",
    "4": "ignores Deployment updates",
}


def _run_test(
    test: Callable[..., Any],
    controller_class: type[FooController],
    api: kubernetes.client.ApiClient | None,
    namespace: str,
) -> BaseException | None:
    """Call the learner's ``test`` with the arguments it asks for; what it raised, or None."""
    offered = {"controller_class": controller_class, "api": api, "namespace": namespace}
    wanted = inspect.signature(test).parameters
    try:
        test(**{name: value for name, value in offered.items() if name in wanted})
    except Exception as raised:  # a failing test is what we look for
        return raised
    return None


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:160]}" if text else type(error).__name__


def _check(
    exercise: str,
    test: Callable[..., Any] | None,
    api: kubernetes.client.ApiClient | None,
    namespace: str,
) -> Verdict:
    if test is None:
        return not_attempted(exercise, f"set test_{exercise} to your test function")
    if not callable(test):
        return wrong(exercise, f"test_{exercise} should be a function, got {type(test).__name__}")
    parameters = set(inspect.signature(test).parameters)
    unknown = parameters - {"controller_class", "api", "namespace"}
    if "controller_class" not in parameters or unknown:
        return wrong(
            exercise,
            "the test must take controller_class (and api, namespace if it uses the cluster), "
            f"nothing else; it takes {sorted(parameters)}",
        )
    if parameters & {"api", "namespace"}:
        if api is None:
            return wrong(exercise, "this test uses the cluster: pass api to the check")
        namespace = namespaces.ensure_namespace(api, namespace)
    on_fixed = _run_test(test, FooController, api, namespace)
    if on_fixed is not None:
        return wrong(
            exercise,
            f"your test fails on chapter 05's FooController too ({_one_line(on_fixed)}): a test "
            "must pass on a controller without the bug",
        )
    planted = PLANTED[exercise]
    on_planted = _run_test(test, planted, api, namespace)
    if on_planted is None:
        return wrong(
            exercise,
            f"your test passes on {planted.__name__}, the controller that {WHAT[exercise]}: it "
            f"does not catch the bug. Hint: {HINTS[exercise]}",
        )
    return correct(
        exercise,
        f"passes on FooController, fails on {planted.__name__} with {_one_line(on_planted)}",
    )


def check_1(
    test_1: Callable[..., Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """Exercise 1: a test that catches :class:`ComparesWholeSpec`."""
    return _check("1", test_1, api, namespace)


def check_2(
    test_2: Callable[..., Any] | None,
    api: kubernetes.client.ApiClient | None = None,
    namespace: str = "",
) -> Verdict:
    """Exercise 2: a test that catches :class:`SwallowsConflicts`."""
    return _check("2", test_2, api, namespace)


def check_3(
    test_3: Callable[..., Any] | None,
    api: kubernetes.client.ApiClient | None = None,
    namespace: str = "",
) -> Verdict:
    """Exercise 3: a test that catches :class:`WritesIntoTheCache`."""
    return _check("3", test_3, api, namespace)


def check_4(
    test_4: Callable[..., Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """Exercise 4: a test that catches :class:`IgnoresDeploymentChanges`."""
    return _check("4", test_4, api, namespace)
