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

:func:`helpers.apierrors.explain` turns the API server's error responses (403,
404, 409, 410, 422, ...) into sentences that say what to do next. A chapter's
namespace is :mod:`helpers.namespaces`' job; who a workshop attendee is,
:mod:`helpers.workshop_mode`'s.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import urllib3
import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.config.kube_config import ENV_KUBECONFIG_PATH_SEPARATOR, KubeConfigMerger

from .apierrors import explain
from .errors import CourseError
from .home import DEFAULT_CLUSTER_NAME, CourseHome

__all__ = [
    "Kubeconfig",
    "connect",
    "default_kubeconfig",
    "describe_context",
    "kubeconfig_paths",
    "probe",
    "raw_get",
    "readiness_problem",
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
