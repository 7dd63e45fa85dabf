"""The API server's error responses, as sentences a person can act on.

A leaf module: it needs only the client library's ``ApiException``, so the
machinery the chapters build (reflector, controller) can explain an error
without importing how the course connects to or starts a cluster.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes.client.exceptions import ApiException


def status_of(exc: ApiException) -> dict[str, Any]:
    """The API server's Status object from an error response, or a minimal stand-in."""
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        body = {}
    if not isinstance(body, dict):
        body = {}
    body.setdefault("code", exc.status)
    body.setdefault("reason", exc.reason)
    body.setdefault("message", exc.reason or f"HTTP {exc.status}")
    return body


def explain(exc: ApiException) -> str:
    """One or two sentences a learner can act on, for an API error response."""
    status = status_of(exc)
    code, reason, message = status["code"], status.get("reason"), status["message"]
    if code == 401:
        return "The API server did not accept our credentials. Regenerate the kubeconfig."
    if code == 403:
        return (
            f"Forbidden: {message}. The identity in this kubeconfig lacks that permission; "
            "grant it with a Role and RoleBinding, or use an account that has it."
        )
    if code == 404:
        return f"{message}. It was deleted, never created, or lives in another namespace."
    if code == 409 and reason == "AlreadyExists":
        return f"{message}. Pick another name, or delete the existing object first."
    if code == 409:
        return (
            f"{message}. Someone changed the object since you read it: read it again, "
            "reapply your change and retry."
        )
    if code == 410:
        return (
            f"{message}. That resourceVersion is older than etcd keeps (it was compacted): "
            "list again and watch from the list's resourceVersion."
        )
    if code == 422:
        return f"The API server rejected the object as invalid: {message}."
    if code == 429:
        return f"{message}. The API server is busy: wait a moment and retry."
    return f"HTTP {code} {reason}: {message}"
