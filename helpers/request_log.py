"""See the HTTP requests behind each client call.

The official client hides that the Kubernetes API is plain REST: every method
(``create_namespaced_config_map``, ``list_node``, ...) is one HTTP request to a
path such as ``/api/v1/namespaces/demo/configmaps``. :class:`RequestLog` wraps
one :class:`~kubernetes.client.ApiClient` instance for the length of a ``with``
block and records each request's method, path, query and status, so a chapter
can show them, and later count them (why listers exist, chapter 03b).

Only that one client instance is touched; nothing global is patched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import urlencode, urlsplit

import kubernetes
from kubernetes.client.exceptions import ApiException


@dataclass(frozen=True)
class Request:
    """One HTTP request as the API server saw it."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    status: int | None = None

    def __str__(self) -> str:
        query = f"?{urlencode(self.query)}" if self.query else ""
        return f"{self.method} {self.path}{query} -> {self.status}"


@dataclass
class RequestLog:
    """Record the requests ``api`` makes while the ``with`` block runs."""

    api: kubernetes.client.ApiClient
    requests: list[Request] = field(default_factory=list)

    def __enter__(self) -> RequestLog:
        original = self.api.request

        def recording_request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            query = tuple((str(k), str(v)) for k, v in kwargs.get("query_params") or ())
            path = urlsplit(url).path
            try:
                response = original(method, url, *args, **kwargs)
            except ApiException as exc:
                self.requests.append(Request(method, path, query, exc.status))
                raise
            self.requests.append(Request(method, path, query, getattr(response, "status", None)))
            return response

        self.api.request = recording_request  # an instance attribute shadows the method
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        del self.api.request  # the class's own method shows through again

    def __len__(self) -> int:
        return len(self.requests)

    def show(self) -> None:
        """Print one line per request."""
        for request in self.requests:
            print(request)
