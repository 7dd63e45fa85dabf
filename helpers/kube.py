"""Connecting to the cluster, and saying clearly why it did not work.

Every chapter starts with :func:`connect`. It finds the kubeconfig the same way
``kubectl`` does (``$KUBECONFIG``, else ``~/.kube/config``) with one addition:
when ``$KUBECONFIG`` is unset and the course's own cluster is up, its
kubeconfig is used, so a JupyterLab started by hand still finds the cluster
that ``make up`` created. It then asks the API server for ``/version`` with a
short timeout, so a stopped cluster is reported in one sentence at the top of
a chapter rather than as a stack trace in the middle of it.

:func:`explain` (from :mod:`helpers.apierrors`) turns the API server's error
responses (403, 404, 409, 410, 422, ...) into sentences that say what to do next.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import kubernetes
import urllib3
import yaml
from kubernetes.client.exceptions import ApiException

from .apierrors import explain, status_of
from .cluster.paths import DEFAULT_CLUSTER_NAME, CourseHome
from .errors import CourseError

__all__ = [
    "connect",
    "default_kubeconfig",
    "describe_context",
    "explain",
    "fresh_namespace",
    "probe",
    "raw_get",
    "status_of",
]

PROBE_TIMEOUT_SECONDS = 5.0


def default_kubeconfig(home: CourseHome | None = None) -> Path:
    """The kubeconfig a notebook should use when none is named."""
    configured = os.environ.get("KUBECONFIG")
    if configured:
        return Path(configured.split(os.pathsep)[0]).expanduser()
    course = (home or CourseHome.from_environment()).kubeconfig(DEFAULT_CLUSTER_NAME)
    if course.exists():
        return course
    return Path.home() / ".kube" / "config"


def connect(
    kubeconfig: str | Path | None = None,
    context: str | None = None,
    *,
    probe_timeout: float = PROBE_TIMEOUT_SECONDS,
) -> kubernetes.client.ApiClient:
    """An API client for ``context`` (default: the current one), checked to answer.

    Raises :class:`CourseError` for a missing or unusable kubeconfig, an
    unknown context, or a cluster that does not answer.
    """
    path = Path(kubeconfig).expanduser() if kubeconfig else default_kubeconfig()
    context_name, server = describe_context(path, context)
    configuration = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_kube_config(
            config_file=str(path), context=context_name, client_configuration=configuration
        )
    except Exception as exc:  # the loader raises many types for one cause: a bad file
        raise CourseError(
            f"The kubeconfig at {path} cannot be used for context '{context_name}': {exc}",
            "fix the file, or run `make up` to write a fresh one for the course's cluster.",
        ) from exc
    # Fail fast instead of urllib3's silent retries: our reflector retries with
    # backoff where a retry makes sense, and a person wants an answer now.
    configuration.retries = False
    client = kubernetes.client.ApiClient(configuration)
    probe(client, context_name, server, timeout=probe_timeout)
    return client


def describe_context(path: Path, context: str | None) -> tuple[str, str]:
    """``(context name, server URL)`` from the kubeconfig at ``path``, checked for sense."""
    if not path.exists():
        raise CourseError(
            f"No kubeconfig at {path}.",
            "start the course's cluster with `make up`, or set KUBECONFIG to your cluster's "
            "kubeconfig.",
        )
    document = _load_kubeconfig(path)
    contexts = [entry for entry in document["contexts"] if isinstance(entry, dict)]
    names = [str(entry.get("name")) for entry in contexts]
    chosen = context or document.get("current-context") or None
    if chosen is None:
        raise CourseError(
            f"The kubeconfig at {path} has no current context.",
            f"pick one with `kubectl config use-context NAME` (it knows: {', '.join(names)}).",
        )
    if chosen not in names:
        raise CourseError(
            f"The kubeconfig at {path} has no context named '{chosen}'.",
            f"use one of: {', '.join(names) or '(none)'}.",
        )
    entry = next(entry for entry in contexts if entry.get("name") == chosen)
    cluster_name = (entry.get("context") or {}).get("cluster")
    for cluster in document.get("clusters") or []:
        if isinstance(cluster, dict) and cluster.get("name") == cluster_name:
            return chosen, (cluster.get("cluster") or {}).get("server", "(no server)")
    return chosen, "(no server)"


def _load_kubeconfig(path: Path) -> dict[str, Any]:
    """The kubeconfig as a dict, or one line saying why the file is not a kubeconfig."""
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise CourseError(
            f"The kubeconfig at {path} cannot be read: it is not valid YAML ({problem}{where}).",
            "fix the file, or run `make up` to write a fresh one for the course's cluster.",
        ) from exc
    if not isinstance(document, dict) or not document.get("contexts"):
        raise CourseError(
            f"The kubeconfig at {path} cannot be read: it defines no contexts.",
            "fix the file, or run `make up` to write a fresh one for the course's cluster.",
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


def fresh_namespace(api: kubernetes.client.ApiClient, name: str, *, timeout: float = 120) -> str:
    """Create namespace ``name``; a leftover from an interrupted run is deleted first."""
    from .waiting import wait_for

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
