"""Checks for chapter 00's exercises (setup and a tour of the API).

Exercise 1 asks for a prediction and the check makes the two writes for real;
exercises 2 and 3 are judged against the paths the Python client itself
requests (recorded with :class:`RequestLog`), so they cannot drift from it.
Exercise 2 asks for two paths the chapter never prints (a subresource, and a
cluster-scoped object of a named group), so none of its printed paths passes.
None of them needs etcd access. Exercise 1 brings the chapter's namespace back
first: after "Run All" its last cell has deleted it.

A wrong answer is told why it is wrong, never what is right: exercise 1 says
the same sentence for every wrong pair (with two booleans, naming the wrong
half would name the answer), and exercise 3 asks for new names on every run
and never prints the path the client requested, so a table of paths copied
from an earlier run does not pass.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from .. import namespaces
from ..request_log import RequestLog
from . import Verdict, correct, not_attempted, wrong

# --- exercise 1: predict what a write does to resourceVersion ---------------------------------


def _versions_after_patches(api: kubernetes.client.ApiClient, namespace: str) -> list[str]:
    """resourceVersions of a fresh ConfigMap: created, after a no-op PATCH, after a label PATCH."""
    namespaces.ensure_namespace(api, namespace)
    core = kubernetes.client.CoreV1Api(api)
    created = core.create_namespaced_config_map(
        namespace,
        {"metadata": {"generateName": "exercise-1-"}, "data": {"message": "hello"}},
    )
    name = created.metadata.name
    try:
        same = core.patch_namespaced_config_map(name, namespace, {"data": {"message": "hello"}})
        label = core.patch_namespaced_config_map(
            name, namespace, {"metadata": {"labels": {"seen": "yes"}}}
        )
    finally:
        core.delete_namespaced_config_map(name, namespace)
    return [
        created.metadata.resource_version,
        same.metadata.resource_version,
        label.metadata.resource_version,
    ]


def check_1(
    answer: tuple[bool, bool] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``(does a PATCH that changes nothing change resourceVersion, does a label-only PATCH)``."""
    if answer is None:
        return not_attempted("1", "set answer_1 to a tuple of two booleans, such as (True, False)")
    try:
        no_op, label_only = answer
    except (TypeError, ValueError):
        return wrong("1", "answer_1 should be a tuple of two booleans: (no-op PATCH, label PATCH)")
    created, same, labelled = _versions_after_patches(api, namespace)
    if (bool(no_op), bool(label_only)) != (same != created, labelled != same):
        # One sentence for every wrong pair: saying which half is wrong would say the answer.
        return wrong(
            "1",
            "at least one of the two predictions is not what the cluster did. Hints: before it "
            "writes to etcd, the API server compares the patched object with the stored one "
            "(what would a PATCH that changes nothing write?); and are labels part of the "
            "stored object, like data?",
        )
    return correct(
        "1",
        f"measured {created} -> {same} (no-op: nothing stored, no new version) -> {labelled} "
        "(a label is a change like any other)",
    )


# --- exercises 2 and 3: request paths -------------------------------------------------------


def _recorded_path(api: kubernetes.client.ApiClient, call: Callable[[], Any]) -> str:
    """The path of the one request ``call`` makes; a 404 is fine, only the path matters."""
    with RequestLog(api) as log, contextlib.suppress(ApiException):
        call()
    return log.requests[0].path


def _path_hint(answer: str, expected: str) -> str:
    """One hint at the first part of a path that differs from what the client requests."""
    if expected.startswith("/apis/") and answer.startswith("/api/"):
        return (
            "only the core group (ConfigMaps, Pods, Nodes) lives under /api/v1; "
            "every other group under /apis/<group>/<version>"
        )
    if expected.startswith("/api/") and answer.startswith("/apis/"):
        return "the core group (apiVersion 'v1', no group name) lives under /api/v1, not /apis"
    if ("/namespaces/" in expected) != ("/namespaces/" in answer):
        return (
            "a namespaced object's path has /namespaces/<namespace>/ before the resource; "
            "a cluster-scoped one, or a list across all namespaces, has none"
        )
    return (
        "the order is /apis/<group>/<version>/namespaces/<namespace>/<resource>/<name>, "
        "with the resource in the plural"
    )


EXERCISE_2_CALLS: tuple[str, str] = (
    'AppsV1Api(api).read_namespaced_deployment_scale("web", "shop")',
    'ApiextensionsV1Api(api).read_custom_resource_definition("foos.samplecontroller.k8s.io")',
)
"""Exercise 2: two calls whose paths the chapter never prints, a subresource of a namespaced
object and a cluster-scoped object of a named group."""


def _exercise_2_paths(api: kubernetes.client.ApiClient) -> tuple[str, str]:
    """The paths the client requests for the two calls of exercise 2."""
    apps = kubernetes.client.AppsV1Api(api)
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    return (
        _recorded_path(api, lambda: apps.read_namespaced_deployment_scale("web", "shop")),
        _recorded_path(
            api,
            lambda: extensions.read_custom_resource_definition("foos.samplecontroller.k8s.io"),
        ),
    )


def _subresource_hint(answer: str, expected: str) -> str:
    """A hint for (a): the object without its subresource, or a wrong subresource, or the rest."""
    object_path = expected.rpartition("/")[0]
    if answer == object_path:
        return (
            "that is the Deployment itself; a subresource (like foos/status) is one more "
            "segment after the object's name"
        )
    if answer.startswith(object_path + "/"):
        return "the segment after the object's name is the subresource's name, as the method says"
    return _path_hint(answer, expected)


def _group_hint(answer: str, expected: str) -> str:
    """A hint for (b): where the path parts wrong, or which group a CRD is in."""
    if answer.startswith("/apis/") and "/namespaces/" not in answer:
        return (
            "CustomResourceDefinitions are in a named group, at its preferred version (the "
            "chapter's list of API groups printed both), and the resource is the plural, lower "
            "case, as /apis/<group>/<version> lists it"
        )
    return _path_hint(answer, expected)


def check_2(answer: tuple[str, str] | None, api: kubernetes.client.ApiClient) -> Verdict:
    """``(a, b)``: the request paths of the two calls in :data:`EXERCISE_2_CALLS`."""
    if not answer:
        return not_attempted(
            "2", "set answer_2 to a tuple of two paths, such as ('/apis/...', '/apis/...')"
        )
    if isinstance(answer, str) or not isinstance(answer, tuple | list) or len(answer) != 2:
        return wrong("2", "answer_2 should be a tuple of two paths: (the scale, the CRD)")
    if not all(isinstance(path, str) for path in answer):
        return wrong("2", "both paths should be strings, such as '/apis/...'")
    expected = _exercise_2_paths(api)
    given = [path.strip().rstrip("/") for path in answer]
    misses = []
    if given[0] != expected[0]:
        misses.append(
            f"(a) is not the path the client requests. Hint: "
            f"{_subresource_hint(given[0], expected[0])}"
        )
    if given[1] != expected[1]:
        misses.append(
            f"(b) is not the path the client requests. Hint: {_group_hint(given[1], expected[1])}"
        )
    if misses:
        return wrong("2", "; ".join(misses))
    return correct(
        "2", f"{expected[0]} (a subresource) and {expected[1]} (cluster-scoped, no namespace)"
    )


EXERCISE_3_CASES: list[tuple[str, str, bool, bool, str]] = [
    ("v1", "configmaps", True, True, "read_namespaced_config_map"),
    ("apps/v1", "deployments", True, False, "list_namespaced_deployment"),
    ("v1", "nodes", False, True, "read_node"),
    ("samplecontroller.k8s.io/v1alpha1", "foos", True, True, "get_foo"),
    ("apps/v1", "deployments", False, False, "list_deployment_for_all_namespaces"),
]
"""Exercise 3: (api_version, resource, with a namespace, with a name, the client call).

The namespace and the name are made up afresh on every run, so that only a
function that builds paths passes, not a table of the paths of an earlier run.
"""


def _client_call(
    api: kubernetes.client.ApiClient, call: str, namespace: str | None, name: str | None
) -> Callable[[], Any]:
    core, apps = kubernetes.client.CoreV1Api(api), kubernetes.client.AppsV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    return {
        "read_namespaced_config_map": lambda: core.read_namespaced_config_map(name, namespace),
        "list_namespaced_deployment": lambda: apps.list_namespaced_deployment(namespace, limit=1),
        "read_node": lambda: core.read_node(name),
        "get_foo": lambda: custom.get_namespaced_custom_object(
            "samplecontroller.k8s.io", "v1alpha1", namespace, "foos", name
        ),
        "list_deployment_for_all_namespaces": lambda: apps.list_deployment_for_all_namespaces(
            limit=1
        ),
    }[call]


def _made_up(prefix: str) -> str:
    """A name nobody has used: ``prefix`` and six random letters and digits."""
    return f"{prefix}-{secrets.token_hex(3)}"


def check_3(path_for: Callable[..., str] | None, api: kubernetes.client.ApiClient) -> Verdict:
    """``path_for(api_version, resource, namespace, name)`` returns the client's REST path."""
    if path_for is None:
        return not_attempted("3", "set path_for to your function")
    for api_version, resource, namespaced, named, call in EXERCISE_3_CASES:
        namespace = _made_up("shop") if namespaced else None
        name = _made_up("item") if named else None
        args = (api_version, resource, namespace, name)
        expected = _recorded_path(api, _client_call(api, call, namespace, name))
        try:
            got = path_for(*args)
        except Exception as exc:  # reported to the learner, with where it happened
            hint = (
                "path_for takes four arguments: (api_version, resource, namespace, name)"
                if isinstance(exc, TypeError)
                else "namespace and name may be None (a cluster-scoped resource, a list)"
            )
            return wrong("3", f"path_for{args} raised {type(exc).__name__}: {exc}. Hint: {hint}")
        if not isinstance(got, str) or got.rstrip("/") != expected:
            return wrong(
                "3",
                f"path_for{args} gave {got!r}, which is not the path the client requests. "
                f"Hint: {_path_hint(got if isinstance(got, str) else '', expected)}",
            )
    return correct(
        "3",
        f"all {len(EXERCISE_3_CASES)} paths match the client's, for names made up on this run; "
        "chapter 01's ListWatch takes such paths",
    )
