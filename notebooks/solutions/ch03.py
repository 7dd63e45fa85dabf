"""Solutions to chapter 03's exercises, in its two parts. Try them yourself first!

03a (the informer): exercise 1 is ``ch03.check_1``, exercise 2 is ``ch03.check_2``,
exercise 3 is ``ch03.check_7``.
03b (the indexer and the lister): exercises 1 to 4 are ``ch03.check_3`` to ``ch03.check_6``.
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


# Exercise 3. A Pod the scheduler has not placed yet has no spec.nodeName (or an empty one): it
# belongs under no value, so "which Pods are on node X?" never answers with it. Kubernetes' own
# controllers register the same index (AddPodNodeNameIndexer in pkg/controller/controller_utils.go).
def by_node(pod: Any) -> list[str]:
    node = pod.get("spec", {}).get("nodeName")
    return [node] if node else []


# Exercise 4. Never change what the lister returned: compare with it, and build the write from
# what you want. (Changing a copy.deepcopy() of it, and sending that, works as well.)
def fixed_sync_colour(
    lister: Any, core: Any, namespace: str, name: str, want: str, *, lose_the_write: bool = False
) -> str:
    cm = lister.get(name)  # the cache's own dict: read it, never write to it
    if cm["metadata"]["labels"]["colour"] == want:
        return "nothing to do"
    if lose_the_write:
        raise ConnectionError("the write was lost")
    core.patch_namespaced_config_map(name, namespace, {"metadata": {"labels": {"colour": want}}})
    return "written"
