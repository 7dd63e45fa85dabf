"""Solutions to chapter 03's exercises, in its two parts. Try them yourself first!

03a (the informer): exercise 1 is ``ch03.check_1``, exercise 2 is ``ch03.check_2``,
exercise 3 is ``ch03.check_7``.
03b (the indexer and the lister): exercise 1 is ``ch03.check_3``, exercise 2 is ``ch03.check_4``.
"""

from __future__ import annotations

from typing import Any

from helpers.lister import is_not_found
from helpers.store import DeletedFinalStateUnknown, meta_namespace_key

# --- 03a, the informer -------------------------------------------------------------------------

# Exercise 1. The stuck handler is in the call for the create; the two updates wait in its buffer
# (nothing is merged, and the informer never waits for a handler). The other handler heard all
# three.
answer_1 = (2, 3)


# Exercise 2.
class DeleteCounter:
    def __init__(self) -> None:
        self.deletes = 0
        self.tombstones = 0

    def on_delete(self, obj: Any) -> None:
        self.deletes += 1
        if isinstance(obj, DeletedFinalStateUnknown):
            self.tombstones += 1


# Exercise 3. client-go's processReplacedAllInfo: a tombstone for each cached key the list lacks
# (with the last state the cache had), then, in list order, an update for each listed key that
# was cached, changed or not (the informer hears of an unchanged one too; only _distribute holds
# it back from handlers whose resync is not due), and an add for each new one. Keys, not uids:
# an object deleted and created again under its name is an update.
def replace_all_notifications(cache_before: dict[str, Any], listed: list[Any]) -> list[tuple]:
    keys = [meta_namespace_key(obj) for obj in listed]
    told: list[tuple] = [
        ("delete", DeletedFinalStateUnknown(key, obj))
        for key, obj in cache_before.items()
        if key not in set(keys)
    ]
    for key, obj in zip(keys, listed, strict=True):
        if key in cache_before:
            told.append(("update", cache_before[key], obj))
        else:
            told.append(("add", obj))
    return told


# --- 03b, the indexer and the lister -----------------------------------------------------------


# Exercise 1.
def same_colour(lister: Any, namespace: str, name: str) -> list[str] | None:
    in_namespace = lister.namespace(namespace)
    try:
        colour = in_namespace.get(name)["metadata"]["labels"]["colour"]
    except Exception as error:
        if is_not_found(error):  # works for the cache's NotFound and the API's 404 alike
            return None
        raise
    matching = in_namespace.list({"colour": colour})
    return sorted(obj["metadata"]["name"] for obj in matching if obj["metadata"]["name"] != name)


# Exercise 2. One LIST and one WATCH for the informer, then five PATCHes; the reads cost nothing.
answer_2 = 7
