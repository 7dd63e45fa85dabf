"""The informer's cache: a thread-safe, indexed store of API objects.

client-go counterpart: ``tools/cache`` - ``store.go`` (keys, ``cache``),
``thread_safe_store.go`` (``threadSafeMap`` and ``storeIndex``), ``index.go``
(``Indexers``, ``MetaNamespaceIndexFunc``) and ``controller.go``
(``DeletedFinalStateUnknown``, ``DeletionHandlingMetaNamespaceKeyFunc``).

Objects are the raw JSON dicts the API server returns. The store never copies
them: ``get_by_key``, ``list`` and the index queries hand back the very dicts
that are cached, exactly like client-go hands back pointers. Callers must
treat them as read-only. Mutating one corrupts the cache for every other
reader, and it also corrupts the indices, because the index entries of the
old object are recomputed from the (now changed) cached dict when the next
update arrives. Copy first (``copy.deepcopy``) if you want to change an object.

What we left out: transformers, ``Resync`` (a no-op on this store), the
``Get(obj)`` variant and ``ExplicitKey``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

IndexFunc = Callable[[Any], list[str]]
"""Maps an object to the values it is indexed under (client-go ``IndexFunc``)."""

NAMESPACE_INDEX = "namespace"
"""The index listers use to answer "everything in namespace X" (client-go ``NamespaceIndex``)."""

OWNER_UID_INDEX = "ownerUID"
"""Index name conventionally used with :func:`owner_uid_index_func`."""


# --- keys -------------------------------------------------------------------


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    """A delete we learnt about without seeing the final object.

    client-go: ``tools/cache`` ``DeletedFinalStateUnknown``. When a watch is
    broken and the re-list no longer contains an object, the informer knows the
    object is gone but missed the DELETE event, so it hands handlers this
    tombstone: the key, and the last state the cache had (possibly stale).
    """

    key: str
    obj: Any


def meta_namespace_key(obj: Any) -> str:
    """Return the store key of an API object: ``"ns/name"``, or ``"name"`` if cluster-scoped.

    client-go: ``DeletionHandlingMetaNamespaceKeyFunc`` (which wraps
    ``MetaNamespaceKeyFunc``). A tombstone already carries its key, and
    informers key their caches with the deletion-aware function, so one
    function serves both here.
    """
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(metadata, Mapping):
        raise ValueError(f"couldn't create key for object {obj!r}: object has no metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"couldn't create key for object {obj!r}: object has no metadata.name")
    namespace = metadata.get("namespace") or ""
    return f"{namespace}/{name}" if namespace else name


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """Split a store key into ``(namespace, name)``; the namespace is ``""`` if cluster-scoped.

    client-go: ``SplitMetaNamespaceKey``. Workers receive keys from the queue,
    not objects, and split them to look the object up again.
    """
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f'unexpected key format: "{key}"')


# --- ready-made index functions --------------------------------------------


def namespace_index_func(obj: Any) -> list[str]:
    """Index an object by its namespace (client-go ``MetaNamespaceIndexFunc``).

    Cluster-scoped objects are indexed under ``""``, as upstream does.
    """
    return [obj.get("metadata", {}).get("namespace") or ""]


def owner_uid_index_func(obj: Any) -> list[str]:
    """Index an object by the UID of its *controller* owner reference.

    Not in client-go itself, but the usual index controllers add so that
    "which Deployments does this Foo control?" is a lookup instead of a scan.
    Only the reference with ``controller: true`` counts: an object has at most
    one controller, and that is the one that reconciles it.
    """
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller") is True and ref.get("uid"):
            return [ref["uid"]]
    return []


# --- errors -----------------------------------------------------------------


class IndexNotFoundError(KeyError):
    """Raised when a query names an index that was never registered."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        # KeyError would print the message in quotes; keep client-go's wording plain.
        return f"Index with name {self.name} does not exist"


class IndexerConflictError(ValueError):
    """Raised by :meth:`Indexer.add_indexers` when an index name is already taken."""


# --- the store ----------------------------------------------------------------


class Indexer:
    """A thread-safe map from key to object, plus secondary indices.

    client-go: ``cache`` (``NewIndexer``) over a ``threadSafeMap``. One
    ``RLock`` guards the items and every index together, so a reader never
    sees an object without its index entries or the other way round.

    For each registered index the store keeps ``value -> set of keys``. Sets
    that become empty are removed (client-go learnt this the hard way:
    kubernetes/kubernetes#84959, memory growth from short-lived objects).

    Index functions run *before* anything is changed, so an index function
    that raises leaves the store exactly as it was (client-go panics instead).

    Query results are ordered by key so notebook output is stable; client-go
    promises no order at all.
    """

    def __init__(
        self,
        indexers: Mapping[str, IndexFunc] | None = None,
        key_func: Callable[[Any], str] = meta_namespace_key,
    ) -> None:
        self._lock = threading.RLock()
        self._key_func = key_func
        self._items: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
        self.last_sync_resource_version = ""
        """The resourceVersion of the last ``replace`` (the list the reflector synced from)."""

    # -- writes ---------------------------------------------------------------

    def add(self, obj: Any) -> None:
        """Insert or overwrite ``obj`` under its key (client-go ``Add``)."""
        self._put(self._key_func(obj), obj)

    def update(self, obj: Any) -> None:
        """Store ``obj`` over the old version, moving its index entries (client-go ``Update``)."""
        self._put(self._key_func(obj), obj)

    def delete(self, obj: Any) -> None:
        """Remove the object with ``obj``'s key; accepts a tombstone. Unknown keys are ignored."""
        key = self._key_func(obj)
        with self._lock:
            old = self._items.get(key)
            if old is None:
                return
            moves = self._index_moves(old, None)
            del self._items[key]
            self._apply_moves(key, moves)

    def replace(self, objs: Iterable[Any], resource_version: str) -> None:
        """Swap the whole content for ``objs`` and rebuild every index (client-go ``Replace``).

        The reflector calls this after a LIST. Everything is computed aside and
        swapped in under the lock, so readers see either the old world or the
        new one, never a half-built index.
        """
        items = {self._key_func(obj): obj for obj in objs}
        with self._lock:
            indices = {
                name: self._build_index(func, items) for name, func in self._indexers.items()
            }
            self._items = items
            self._indices = indices
            self.last_sync_resource_version = resource_version

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Register more indices, indexing the objects already stored (client-go ``AddIndexers``).

        A name that is already registered is refused: silently replacing an
        index function would leave entries computed by the old one behind.
        """
        with self._lock:
            taken = sorted(set(indexers) & set(self._indexers))
            if taken:
                raise IndexerConflictError(f"indexer conflict: {taken}")
            built = {name: self._build_index(func, self._items) for name, func in indexers.items()}
            self._indexers.update(indexers)
            self._indices.update(built)

    # -- reads ----------------------------------------------------------------

    def get_by_key(self, key: str) -> Any | None:
        """Return the cached object for ``key``, or ``None`` (client-go ``GetByKey``)."""
        with self._lock:
            return self._items.get(key)

    def list(self) -> list[Any]:
        """Return every cached object, ordered by key. Do not mutate them."""
        with self._lock:
            return [self._items[key] for key in sorted(self._items)]

    def list_keys(self) -> list[str]:
        """Return every key, sorted."""
        with self._lock:
            return sorted(self._items)

    def index(self, index_name: str, obj: Any) -> list[Any]:
        """Return the objects sharing any index value with ``obj`` (client-go ``Index``)."""
        with self._lock:
            func = self._indexer(index_name)
            index = self._indices[index_name]
            keys: set[str] = set()
            for value in func(obj):
                keys |= index.get(value, set())
            return [self._items[key] for key in sorted(keys)]

    def by_index(self, index_name: str, value: str) -> list[Any]:
        """Return the objects indexed under ``value`` (client-go ``ByIndex``)."""
        with self._lock:
            return [self._items[key] for key in self.index_keys(index_name, value)]

    def index_keys(self, index_name: str, value: str) -> list[str]:
        """Return the keys indexed under ``value``, sorted (client-go ``IndexKeys``)."""
        with self._lock:
            self._indexer(index_name)
            return sorted(self._indices[index_name].get(value, ()))

    def list_index_func_values(self, index_name: str) -> list[str]:
        """Return every value the named index currently holds, sorted (``ListIndexFuncValues``)."""
        with self._lock:
            self._indexer(index_name)
            return sorted(self._indices[index_name])

    def get_indexers(self) -> dict[str, IndexFunc]:
        """Return a copy of the registered index functions (client-go ``GetIndexers``)."""
        with self._lock:
            return dict(self._indexers)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    # -- internals (call with the lock held) ------------------------------------

    def _put(self, key: str, obj: Any) -> None:
        with self._lock:
            moves = self._index_moves(self._items.get(key), obj)
            self._items[key] = obj
            self._apply_moves(key, moves)

    def _indexer(self, index_name: str) -> IndexFunc:
        func = self._indexers.get(index_name)
        if func is None:
            raise IndexNotFoundError(index_name)
        return func

    def _index_moves(self, old: Any, new: Any) -> list[tuple[str, set[str], set[str]]]:
        """For each index: the values a key leaves and the values it joins."""
        moves = []
        for name, func in self._indexers.items():
            old_values = set(func(old)) if old is not None else set()
            new_values = set(func(new)) if new is not None else set()
            moves.append((name, old_values - new_values, new_values - old_values))
        return moves

    def _apply_moves(self, key: str, moves: list[tuple[str, set[str], set[str]]]) -> None:
        for name, leave, join in moves:
            index = self._indices[name]
            for value in leave:
                keys = index.get(value)
                if keys is None:
                    continue
                keys.discard(key)
                if not keys:
                    del index[value]
            for value in join:
                index.setdefault(value, set()).add(key)

    @staticmethod
    def _build_index(func: IndexFunc, items: Mapping[str, Any]) -> dict[str, set[str]]:
        index: dict[str, set[str]] = {}
        for key, obj in items.items():
            for value in func(obj):
                index.setdefault(value, set()).add(key)
        return index
