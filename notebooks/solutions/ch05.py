"""Solutions to chapter 05's exercises. Try them yourself first!"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from helpers.controller import (
    ERR_RESOURCE_EXISTS,
    MESSAGE_RESOURCE_EXISTS,
    MESSAGE_RESOURCE_SYNCED,
    NORMAL,
    SUCCESS_SYNCED,
    WARNING,
    Clients,
    ResourceExistsError,
    is_controlled_by,
    new_deployment,
)

# The informer's first LIST hands every Foo to on_add, so each Foo is synced soon after the
# start; the sync compares the Foo with the Deployment cache (no Deployment: create it). Nothing
# depends on having seen the delete: a controller is level-triggered. No resync is needed.
answer_1 = "c"


def labelled_deployment(foo: Mapping[str, Any]) -> dict[str, Any]:
    deployment = new_deployment(foo)
    labels = foo["metadata"].get("labels")
    if labels:
        # A copy: the Deployment must not share a dict with the cached Foo.
        deployment["metadata"]["labels"] = copy.deepcopy(labels)
    return deployment


# sync_handler looks up, writes and reports only the Deployment the Foo names now. After the
# rename it creates b (2 replicas); a is never read again, so nothing scales or deletes it: it
# keeps 2 replicas and goes only when its owner, the Foo, is deleted. The scale to 3 reaches b
# alone, and the status is copied from b alone.
answer_3 = {"a": 2, "b": 3, "available": 3}


def reconcile(
    foo: Mapping[str, Any], deployment: Mapping[str, Any] | None, clients: Clients
) -> None:
    namespace = foo["metadata"]["namespace"]
    if deployment is None:
        deployment = clients.create_deployment(namespace, new_deployment(foo))
    # Somebody else's Deployment: tell the Foo's owner, and raise to be retried with backoff.
    if not is_controlled_by(deployment, foo):
        message = MESSAGE_RESOURCE_EXISTS.format(name=deployment["metadata"]["name"])
        clients.record_event(foo, WARNING, ERR_RESOURCE_EXISTS, message)
        raise ResourceExistsError(message)
    wanted = (foo.get("spec") or {}).get("replicas")
    if wanted is not None and wanted != (deployment.get("spec") or {}).get("replicas"):
        deployment = clients.update_deployment(namespace, new_deployment(foo))
    # The Foo is the cache's copy: change a deep copy. A new Deployment has no status yet.
    foo_copy = copy.deepcopy(dict(foo))
    available = (deployment.get("status") or {}).get("availableReplicas", 0)
    foo_copy["status"] = {"availableReplicas": available}
    clients.update_foo_status(namespace, foo_copy)
    clients.record_event(foo, NORMAL, SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED)
