"""Connecting to the cluster, and saying clearly why it did not work.

Every chapter starts with :func:`connect`. It finds the kubeconfig the same way
``kubectl`` does: every file listed in ``$KUBECONFIG``, merged (the first file
that names a context, cluster or user defines it; the current context comes
from the first file that sets one), else ``~/.kube/config``. One addition: when
``$KUBECONFIG`` is unset and the course's own cluster is up, its kubeconfig is
used, so a JupyterLab started by hand still finds the cluster that ``make up``
created. It then asks the API server for ``/version`` with a short timeout, so
a stopped cluster is reported in one sentence at the top of a chapter rather
than as a stack trace in the middle of it.

:func:`explain` (from :mod:`helpers.apierrors`) turns the API server's error
responses (403, 404, 409, 410, 422, ...) into sentences that say what to do next.
"""

from __future__ import annotations

import copy
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import urllib3
import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.config.kube_config import ENV_KUBECONFIG_PATH_SEPARATOR, KubeConfigMerger
from kubernetes.dynamic.resource import ResourceList

from .apierrors import explain, status_of
from .cluster.paths import DEFAULT_CLUSTER_NAME, CourseHome
from .errors import CourseError

__all__ = [
    "Kubeconfig",
    "attendee",
    "chapter_namespace",
    "connect",
    "default_kubeconfig",
    "delete_namespace",
    "describe_context",
    "empty_namespace",
    "ensure_namespace",
    "explain",
    "fresh_namespace",
    "kubeconfig_paths",
    "probe",
    "raw_get",
    "readiness_problem",
    "status_of",
]

PROBE_TIMEOUT_SECONDS = 5.0
FRESH = "run `make up` to write a fresh one for the course's cluster"

KubeconfigArg = str | Path | Sequence[Path] | None


def kubeconfig_paths(
    kubeconfig: KubeconfigArg = None, home: CourseHome | None = None
) -> list[Path]:
    """The kubeconfig files to read, in order: those given, else the ones kubectl reads."""
    if isinstance(kubeconfig, str | Path):
        return [Path(kubeconfig).expanduser()]
    if kubeconfig:
        return [Path(path).expanduser() for path in kubeconfig]
    listed = [part for part in os.environ.get("KUBECONFIG", "").split(os.pathsep) if part]
    if listed:
        return [Path(part).expanduser() for part in listed]
    course = (home or CourseHome.from_environment()).kubeconfig(DEFAULT_CLUSTER_NAME)
    if course.exists():
        return [course]
    return [Path.home() / ".kube" / "config"]


def default_kubeconfig(home: CourseHome | None = None) -> Path:
    """The first kubeconfig file kubectl reads (:func:`kubeconfig_paths` lists them all)."""
    return kubeconfig_paths(None, home)[0]


@dataclass(frozen=True)
class Entry:
    """A named context, cluster or user, and the file that defined it."""

    value: dict[str, Any]
    source: Path


class Kubeconfig:
    """The kubeconfig files kubectl would read, merged by the client library as kubectl does."""

    def __init__(self, kubeconfig: KubeconfigArg = None) -> None:
        self.paths = kubeconfig_paths(kubeconfig)
        self.label = " and ".join(str(path) for path in self.paths)
        readable = [path for path in self.paths if path.exists() and _load_file(path)]
        if not any(path.exists() for path in self.paths):
            raise CourseError(
                f"No kubeconfig at {self.label}.",
                "start the course's cluster with `make up`, or set KUBECONFIG to your cluster's "
                "kubeconfig.",
            )
        merger = KubeConfigMerger(ENV_KUBECONFIG_PATH_SEPARATOR.join(map(str, readable)))
        merged = merger.config.value if merger.config is not None else {}
        self.entries: dict[str, dict[str, Entry]] = {
            section: {
                str(node.value.get("name")): Entry(node.value, Path(node.path))
                for node in merged.get(section) or []
                if isinstance(node.value, dict)
            }
            for section in ("contexts", "clusters", "users")
        }
        if not self.entries["contexts"]:
            raise CourseError(
                f"The kubeconfig at {self.label} cannot be read: it defines no contexts.",
                f"fix the file, or {FRESH}.",
            )
        # The library lets the last file that sets current-context win; kubectl, the first.
        self.current_context: str | None = next(
            (current for path in readable if (current := _load_file(path).get("current-context"))),
            None,
        )

    def context(self, name: str | None) -> Entry:
        """The context ``name`` (default: the current one), or a CourseError naming the choices."""
        names = sorted(self.entries["contexts"])
        chosen = name or self.current_context
        if chosen is None:
            raise CourseError(
                f"The kubeconfig at {self.label} has no current context.",
                f"pick one with `kubectl config use-context NAME` (it knows: {', '.join(names)}).",
            )
        if chosen not in self.entries["contexts"]:
            raise CourseError(
                f"The kubeconfig at {self.label} has no context named '{chosen}'.",
                f"use one of: {', '.join(names) or '(none)'}.",
            )
        return self.entries["contexts"][chosen]

    def standalone(self, context: str) -> dict[str, Any]:
        """A kubeconfig holding only ``context``, its cluster and user, with absolute file paths.

        The three may come from different files; a relative path in each is
        relative to the file that holds it, as kubectl reads it. (The client
        library's loader resolves a user's certificate against the cluster's
        file instead, so :func:`connect` hands it this self-contained copy.)
        """
        entry = self.context(context)
        names = entry.value.get("context") or {}
        cluster = self.entries["clusters"].get(str(names.get("cluster")))
        if cluster is None:
            raise CourseError(
                f"The kubeconfig at {self.label} refers to cluster '{names.get('cluster')}', "
                "which it does not define.",
                "fix the file, or pick another context.",
            )
        user = self.entries["users"].get(str(names.get("user"))) if names.get("user") else None
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": context,
            "contexts": [copy.deepcopy(entry.value)],
            "clusters": [_with_absolute_paths(cluster, "cluster")],
            "users": [_with_absolute_paths(user, "user")] if user else [],
        }

    def server(self, context: Entry) -> str:
        """The URL of the cluster ``context`` names."""
        name = (context.value.get("context") or {}).get("cluster")
        cluster = self.entries["clusters"].get(str(name))
        settings = (cluster.value if cluster else {}).get("cluster") or {}
        return settings.get("server", "(no server)")


def describe_context(path: KubeconfigArg, context: str | None) -> tuple[str, str]:
    """``(context name, server URL)`` from the kubeconfig(s) at ``path``, checked for sense."""
    config = Kubeconfig(path)
    entry = config.context(context)
    return str(entry.value["name"]), config.server(entry)


def connect(
    kubeconfig: KubeconfigArg = None,
    context: str | None = None,
    *,
    probe_timeout: float = PROBE_TIMEOUT_SECONDS,
) -> kubernetes.client.ApiClient:
    """An API client for ``context`` (default: the current one), checked to answer.

    Raises :class:`CourseError` for a missing or unusable kubeconfig, an
    unknown context, or a cluster that does not answer.
    """
    config = Kubeconfig(kubeconfig)
    entry = config.context(context)
    context_name, server = str(entry.value["name"]), config.server(entry)
    configuration = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_kube_config_from_dict(
            config.standalone(context_name),
            context=context_name,
            client_configuration=configuration,
        )
    except Exception as exc:  # the loader raises many types for one cause: a bad file
        raise CourseError(
            f"The kubeconfig at {config.label} cannot be used for context '{context_name}': {exc}",
            f"fix the file, or {FRESH}.",
        ) from exc
    # Fail fast instead of urllib3's silent retries: our reflector retries with
    # backoff where a retry makes sense, and a person wants an answer now.
    configuration.retries = False
    client = kubernetes.client.ApiClient(configuration)
    probe(client, context_name, server, timeout=probe_timeout)
    return client


# Fields of a kubeconfig's cluster and user entries that name a file.
PATH_FIELDS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")


def _with_absolute_paths(entry: Entry, section: str) -> dict[str, Any]:
    """A copy of ``entry`` whose file paths are absolute (relative ones: to its own file)."""
    value = copy.deepcopy(entry.value)
    settings = value.get(section) or {}
    for field in PATH_FIELDS:
        if settings.get(field):
            path = Path(settings[field]).expanduser()
            settings[field] = str((entry.source.parent / path).resolve())
    return value


def _load_file(path: Path) -> dict[str, Any]:
    """One kubeconfig file as a dict ({} when empty), or one line saying why it is not one."""
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise CourseError(
            f"The kubeconfig at {path} cannot be read: it is not valid YAML ({problem}{where}).",
            f"fix the file, or {FRESH}.",
        ) from exc
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise CourseError(
            f"The kubeconfig at {path} cannot be read: it is not a kubeconfig.",
            f"fix the file, or {FRESH}.",
        )
    return document


def probe(
    client: kubernetes.client.ApiClient, context: str, server: str, *, timeout: float
) -> dict[str, Any]:
    """Ask for ``/version``; a CourseError names the context when nobody answers."""
    try:
        info = kubernetes.client.VersionApi(client).get_code(_request_timeout=timeout)
    except ApiException as exc:
        raise CourseError(
            f"The cluster of context '{context}' at {server} answered /version with "
            f"HTTP {exc.status}: {explain(exc)}",
            "check the credentials in your kubeconfig, or run `make up` for the course's cluster.",
        ) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise CourseError(
            f"The cluster of context '{context}' at {server} does not answer "
            f"({_short_reason(exc)}).",
            "start the course's cluster with `make up`, or check yours with "
            f"`kubectl --context {context} cluster-info`.",
        ) from exc
    return info.to_dict()


def readiness_problem(client: kubernetes.client.ApiClient, *, timeout: float) -> str | None:
    """None when ``/readyz`` says the API server is ready; else which checks fail, or why not.

    ``/version`` answers from the API server alone; ``/readyz`` also checks
    etcd, informers and post-start hooks, so a frozen etcd shows here.
    """
    try:
        client.call_api(
            "/readyz", "GET", header_params={"Accept": "*/*"}, auth_settings=["BearerToken"],
            _preload_content=False, _return_http_data_only=True, _request_timeout=timeout,
        )  # fmt: skip
    except ApiException as exc:
        body = exc.body.decode(errors="replace") if isinstance(exc.body, bytes) else exc.body or ""
        failed = [line[3:].split(" ")[0] for line in body.splitlines() if line.startswith("[-]")]
        detail = f": {', '.join(failed)} failed" if failed else ""
        return f"the API server is not ready (/readyz answered HTTP {exc.status}{detail})"
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        return f"the API server does not answer /readyz ({_short_reason(exc)})"
    return None


def _short_reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    text = str(reason)
    for marker in ("Connection refused", "timed out", "Name or service not known", "certificate"):
        if marker.lower() in text.lower():
            return marker.lower()
    return text.splitlines()[0][:120]


def raw_get(api: kubernetes.client.ApiClient, path: str, **query: str) -> str:
    """GET any API path (``/readyz``, ``/apis``, ...) and return the body as text."""
    response = api.call_api(
        path,
        "GET",
        query_params=list(query.items()),
        header_params={"Accept": "application/json, */*"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )
    return response.data.decode()


ATTENDEE_ENV = "CFS_ATTENDEE"
"""An attendee's name (as ``python -m helpers.cluster.workshop up`` made it): attendee mode."""
WORKSHOP_LABEL = "controllers-from-scratch/workshop"
"""Objects the facilitator made in an attendee's namespaces carry it; emptying keeps them."""
_CHAPTER_NAMESPACE = re.compile(r"^(?P<attendee>[a-z0-9]([-a-z0-9]*[a-z0-9])?)-ch\d\d-[-a-z0-9]+$")
# Kept when a namespace is emptied: the API server's controllers recreate them at once anyway.
_KEEP_BY_NAME = {"configmaps": "kube-root-ca.crt", "serviceaccounts": "default"}


def attendee(kubeconfig: KubeconfigArg = None) -> str | None:
    """The workshop attendee this kernel works for, or None outside a shared workshop cluster.

    In a workshop the facilitator gives each attendee namespaces of their own
    (``<attendee>-ch04-workqueue``, ...) and no right to create or delete
    namespaces. Attendee mode is on when ``$CFS_ATTENDEE`` names the attendee,
    or when the current context's namespace is one of those chapter
    namespaces (the kubeconfig ``python -m helpers.cluster.workshop up`` writes sets it).
    """
    named = os.environ.get(ATTENDEE_ENV, "").strip()
    if named:
        return named
    try:
        config = Kubeconfig(kubeconfig)
        namespace = (config.context(None).value.get("context") or {}).get("namespace") or ""
    except CourseError:
        return None
    match = _CHAPTER_NAMESPACE.match(namespace)
    return match["attendee"] if match else None


def chapter_namespace(name: str) -> str:
    """The namespace a chapter calls ``name``: ``<attendee>-name`` in attendee mode, else itself."""
    who = attendee()
    if who is None or name.startswith(f"{who}-"):
        return name
    return f"{who}-{name}"


def ensure_namespace(api: kubernetes.client.ApiClient, name: str) -> str:
    """Make sure namespace ``name`` exists (create it if missing); returns its name.

    For exercises: after "Run All" the chapter's last cell has deleted its
    namespace, and an exercise run later must not fail with a 404.
    A namespace still being deleted is waited for, then created again.
    In attendee mode the facilitator's namespaces always exist (they are only
    ever emptied), so nothing is asked of the API server.
    """
    from .waiting import wait_for

    if attendee() is not None:
        return chapter_namespace(name)
    core = kubernetes.client.CoreV1Api(api)
    try:
        found = core.read_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise
    else:
        if found.metadata.deletion_timestamp is None:
            return name
        wait_for(
            core.list_namespace,
            lambda namespaces: name not in namespaces,
            what=f"namespace {name} to finish deleting",
            timeout=120,
            field_selector=f"metadata.name={name}",
        )
    try:
        core.create_namespace(
            {"metadata": {"name": name, "labels": {"course": "controllers-from-scratch"}}}
        )
    except ApiException as exc:
        if exc.status != 409:  # created meanwhile (another cell, another kernel): fine
            raise
    return name


def fresh_namespace(api: kubernetes.client.ApiClient, name: str, *, timeout: float = 120) -> str:
    """Create namespace ``name``; a leftover from an interrupted run is deleted first.

    In attendee mode (see :func:`attendee`) the chapter works in
    ``<attendee>-name`` instead, which the facilitator created: it is emptied,
    not deleted, since an attendee may not create namespaces. Returns the name
    the chapter must use.
    """
    from .waiting import wait_for

    if attendee() is not None:
        chosen = chapter_namespace(name)
        empty_namespace(api, chosen, timeout=timeout)
        return chosen
    core = kubernetes.client.CoreV1Api(api)
    try:
        core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise
    else:
        wait_for(
            core.list_namespace,
            lambda namespaces: name not in namespaces,
            what=f"the old namespace {name} to be deleted",
            timeout=timeout,
            field_selector=f"metadata.name={name}",
        )
    core.create_namespace(
        {"metadata": {"name": name, "labels": {"course": "controllers-from-scratch"}}}
    )
    return name


def delete_namespace(api: kubernetes.client.ApiClient, name: str) -> str:
    """A chapter's clean-up: delete namespace ``name`` (in attendee mode: empty it instead).

    Returns what happened, as the end of a sentence for the chapter to print
    after ``f"namespace {name} "``: "is being deleted" (a namespace already
    gone counts too), or "was emptied" for an attendee, who keeps it.
    """
    if attendee() is not None:
        empty_namespace(api, name)
        return "was emptied (an attendee keeps their namespaces)"
    try:
        kubernetes.client.CoreV1Api(api).delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise
    return "is being deleted"


def empty_namespace(api: kubernetes.client.ApiClient, name: str, *, timeout: float = 120) -> None:
    """Delete everything in namespace ``name`` that a chapter may have made, and wait until gone.

    What deleting the namespace would do, with only rights inside it: one
    DELETE of each collection (every namespaced resource that allows it,
    found by discovery), keeping what the facilitator made (label
    :data:`WORKSHOP_LABEL`) and what the cluster recreates anyway. Objects held
    by a finalizer whose controller is gone (a chapter's stopped controller)
    have the finalizer removed, as a person would with kubectl.
    """
    dynamic = kubernetes.dynamic.DynamicClient(api)
    resources = [
        resource
        for resource in dynamic.resources.search(namespaced=True)
        if not isinstance(resource, ResourceList)  # the ``...List`` kinds, not resources
        and "/" not in resource.name
        and {"list", "deletecollection"} <= set(resource.verbs or [])
        and resource.preferred
    ]
    deadline = time.monotonic() + timeout
    for resource in sorted(resources, key=_deletion_order):
        keep = _KEEP_BY_NAME.get(resource.name) if resource.group == "" else None
        selectors = {
            "label_selector": f"!{WORKSHOP_LABEL}",
            "field_selector": f"metadata.name!={keep}" if keep else None,
        }
        try:
            resource.delete(
                namespace=name,
                body={"propagationPolicy": "Background", "gracePeriodSeconds": 0},
                **{key: value for key, value in selectors.items() if value},
            )
        except ApiException as exc:
            if exc.status in (403, 405):  # not ours to touch (an attendee may not make it either)
                continue
            raise
        _wait_until_empty(resource, name, selectors, deadline)


def _deletion_order(resource: Any) -> int:
    """Owners before what they own, so that no controller recreates a child in between."""
    order = {"deployments": 0, "replicasets": 1, "foos": 0}
    return order.get(resource.name, 2)


def _wait_until_empty(resource: Any, namespace: str, selectors: dict[str, str | None],
                      deadline: float) -> None:  # fmt: skip
    """Watch ``resource`` in ``namespace`` until nothing matching ``selectors`` is left."""
    query = {key: value for key, value in selectors.items() if value}
    listed = resource.get(namespace=namespace, **query)
    left = {item.metadata.name: item for item in listed.items}
    for item in left.values():
        _drop_finalizers(resource, namespace, item)
    if not left:
        return
    remaining = {name for name in left}
    watching = resource.watch(
        namespace=namespace,
        resource_version=listed.metadata.resourceVersion,
        timeout=max(1, int(deadline - time.monotonic())),
        **query,
    )
    for event in watching:
        name = event["object"].metadata.name
        if event["type"] == "DELETED":
            remaining.discard(name)
        elif event["type"] == "ADDED":  # recreated by a controller not yet told: delete again
            remaining.add(name)
            resource.delete(name=name, namespace=namespace, body={"gracePeriodSeconds": 0})
        else:
            _drop_finalizers(resource, namespace, event["object"])
        if not remaining:
            return
    raise CourseError(
        f"Namespace {namespace} still holds {resource.kind} {', '.join(sorted(remaining))} "
        "after emptying it.",
        "look at those objects' finalizers (`kubectl get -o yaml`), then run the cell again.",
    )


def _drop_finalizers(resource: Any, namespace: str, item: Any) -> None:
    """Remove the finalizers of an object already being deleted (its controller has stopped)."""
    if item.metadata.deletionTimestamp and item.metadata.finalizers:
        try:
            resource.patch(
                name=item.metadata.name,
                namespace=namespace,
                body={"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json",
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
