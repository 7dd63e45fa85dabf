"""Solutions to chapter 05's exercises. Try them yourself first!"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from helpers.controller import FOO_KIND, controller_of, new_deployment
from helpers.lister import Lister, NotFoundError
from helpers.store import DeletedFinalStateUnknown


def foo_key_for(obj: Any, foos_lister: Lister) -> str | None:
    # A tombstone's last known state still has the owner references.
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    # Only the controller reference counts, whatever other owners there are.
    owner = controller_of(obj)
    if owner is None or owner.get("kind") != FOO_KIND:
        return None
    # Owner references never cross namespaces: the Foo is in the object's namespace.
    namespace = obj["metadata"].get("namespace", "")
    try:
        foos_lister.namespace(namespace).get(owner["name"])
    except NotFoundError:
        return None  # an orphan: the garbage collector will deal with it
    return f"{namespace}/{owner['name']}"


def labelled_deployment(foo: Mapping[str, Any]) -> dict[str, Any]:
    deployment = new_deployment(foo)
    labels = foo["metadata"].get("labels")
    if labels:
        # A copy: the Deployment must not share a dict with the cached Foo.
        deployment["metadata"]["labels"] = copy.deepcopy(labels)
    return deployment


# sync_handler checks is_controlled_by, by UID: Foo second is not shared's controller, so it
# gets a Warning Event and its key is retried with backoff. The Deployment is never touched.
answer_3 = "c"


def available_replicas(foos_lister: Lister, namespace: str) -> dict[str, int]:
    return {
        foo["metadata"]["name"]: (foo.get("status") or {}).get("availableReplicas", 0)
        for foo in foos_lister.namespace(namespace).list()
    }
