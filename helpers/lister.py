"""Listers: read-only, typed-feeling views of an informer's cache.

client-go counterpart: ``tools/cache/listers.go`` (``ListAll``,
``ListAllByNamespace``), ``listers/generic_helpers.go`` (``ResourceIndexer``,
what lister-gen's generated listers wrap) and, for the error,
``apimachinery/pkg/api/errors`` (``NewNotFound``).

A controller reads through a lister instead of calling the API server: the
cache is already there, reads cost nothing, and the API server is spared.
A miss raises :class:`NotFoundError`, shaped like the API server's own 404, so
code that handles "not found" works the same whether it asked the cache or the
server. Objects returned are the cached dicts themselves: never mutate them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .labels import SelectorLike, as_selector
from .store import NAMESPACE_INDEX, Indexer, IndexNotFoundError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GroupResource:
    """A resource within an API group (apimachinery ``schema.GroupResource``)."""

    resource: str
    group: str = ""

    def __str__(self) -> str:
        # The core group is "", and then the resource stands alone: "configmaps".
        return f"{self.resource}.{self.group}" if self.group else self.resource


class NotFoundError(Exception):
    """The object is not in the cache; mirrors the API server's ``Status`` for a 404.

    apimachinery: ``errors.NewNotFound``. ``status`` is the HTTP code, as on the
    Python client's ``ApiException``; ``reason`` and ``details`` are the
    ``Status`` fields. Note that upstream fills ``details.kind`` with the
    *resource* name, not the Kind; we do the same.
    """

    status = 404
    reason = "NotFound"

    def __init__(self, resource: GroupResource, name: str) -> None:
        self.resource = resource
        self.name = name
        self.message = f'{resource} "{name}" not found'
        self.details = {"name": name, "group": resource.group, "kind": resource.resource}
        super().__init__(self.message)

    @property
    def code(self) -> int:
        """The HTTP status code, under the name ``Status`` uses."""
        return self.status

    def to_status(self) -> dict[str, Any]:
        """The error as the ``Status`` object the API server would have sent."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": dict(self.details),
            "code": self.status,
        }


def is_not_found(err: BaseException) -> bool:
    """apimachinery ``errors.IsNotFound``: true for our error and for a client 404."""
    return getattr(err, "status", None) == 404


def list_all(indexer: Indexer, selector: SelectorLike = None) -> list[Any]:
    """Every cached object whose labels match (client-go ``ListAll``)."""
    sel = as_selector(selector)
    objs = indexer.list()
    if sel.empty():
        return objs  # the common case: no need to look at any labels
    return [obj for obj in objs if sel.matches(_labels(obj))]


def list_all_by_namespace(
    indexer: Indexer, namespace: str, selector: SelectorLike = None
) -> list[Any]:
    """Cached objects in one namespace whose labels match (client-go ``ListAllByNamespace``).

    Uses the namespace index. Without it, upstream falls back to a full scan
    and logs a warning rather than failing; so do we. ``""`` means all namespaces.
    """
    if namespace == "":
        return list_all(indexer, selector)
    sel = as_selector(selector)
    try:
        objs = indexer.by_index(NAMESPACE_INDEX, namespace)
    except IndexNotFoundError as err:
        log.warning("can not retrieve list of objects using index: %s", err)
        objs = [o for o in indexer.list() if o.get("metadata", {}).get("namespace") == namespace]
    return [obj for obj in objs if sel.matches(_labels(obj))]


def _labels(obj: Any) -> dict[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


class Lister:
    """Lists and gets one resource from an indexer (lister-gen's ``FooLister``).

    ``get`` is for cluster-scoped resources, whose key is the bare name; for
    namespaced resources go through :meth:`namespace`.
    """

    def __init__(
        self,
        indexer: Indexer,
        resource: str = "foos",
        group: str = "samplecontroller.k8s.io",
    ) -> None:
        self._indexer = indexer
        self._resource = GroupResource(resource, group)

    def list(self, label_selector: SelectorLike = None) -> list[Any]:
        """Objects in every namespace whose labels match (all, with no selector)."""
        return list_all(self._indexer, label_selector)

    def get(self, name: str) -> Any:
        """The cluster-scoped object called ``name``; raises :class:`NotFoundError`."""
        return _get(self._indexer, self._resource, name, name)

    def namespace(self, namespace: str) -> NamespaceLister:
        """A view of one namespace (lister-gen's ``Foos(namespace)``)."""
        return NamespaceLister(self._indexer, self._resource, namespace)


class NamespaceLister:
    """Lists and gets one resource within one namespace (lister-gen's ``FooNamespaceLister``)."""

    def __init__(self, indexer: Indexer, resource: GroupResource, namespace: str) -> None:
        self._indexer = indexer
        self._resource = resource
        self._namespace = namespace

    def list(self, label_selector: SelectorLike = None) -> list[Any]:
        """Objects in this namespace whose labels match, via the namespace index."""
        return list_all_by_namespace(self._indexer, self._namespace, label_selector)

    def get(self, name: str) -> Any:
        """The object ``namespace/name``; raises :class:`NotFoundError`."""
        key = f"{self._namespace}/{name}" if self._namespace else name
        return _get(self._indexer, self._resource, key, name)


def _get(indexer: Indexer, resource: GroupResource, key: str, name: str) -> Any:
    obj = indexer.get_by_key(key)
    if obj is None:
        # The error names the object as the user knows it (its name), not the cache key.
        raise NotFoundError(resource, name)
    return obj
