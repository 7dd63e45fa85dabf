"""Solutions to chapter 08's exercises (08: 5 and 6; 08a: 1 and 2; 08b: 3 and 4). Try them
yourself first!"""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

# 08a, exercise 1. Each sync now takes two tokens from one bucket of 5 a second (a status
# write and an Event): on the plateau, 2.5 syncs a second, so 2.5 Foo-status writes a second.
# The burst of 10 is spent within the first seconds; the workers do not make tokens.
answer_1 = 2.5


# 08a, exercise 2. Ready while leading, or when there is no election at all; else say who leads.
def leading(process: Any) -> str | None:
    elector = process.elector
    if elector is None or elector.is_leader():
        return None
    holder = elector.get_leader() or "nobody yet"
    return f"this copy is a standby: {holder} leads"


# 08b, exercise 1. Start from manifests/rbac.yaml's ClusterRole rules (printed in 08b) and run
# them: ch08.run_finalizing shows the controller refused `patch` on foos, for the finalizer, which
# is added and removed with a merge patch of the Foo itself. Add that verb, run again: no 403.
# No get (syncs read the cache), no update on foos, no delete anywhere. (Where the
# OwnerReferencesPermissionEnforcement admission plugin is on, update on foos/finalizers too.)
finalizing_rules = [
    {"apiGroups": ["samplecontroller.k8s.io"], "resources": ["foos"],
     "verbs": ["list", "watch", "patch"]},
    {"apiGroups": ["samplecontroller.k8s.io"], "resources": ["foos/status"], "verbs": ["update"]},
    {"apiGroups": ["apps"], "resources": ["deployments"],
     "verbs": ["list", "watch", "create", "update"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
]  # fmt: skip

# 08b, exercise 2. Foreground: the API server adds the finalizer foregroundDeletion beside ours;
# the garbage collector deletes the Deployment (it blocks its owner's deletion), then removes
# foregroundDeletion. Our finalizer still holds the Foo until it is removed too.
foreground_answer = "b"

# 08, exercise 1. The pause (8 s) is shorter than the lease (15 s): the standby, which saw the
# leader's last renewal, still finds the lease valid. The leader's next round begins after the
# pause with its whole RenewDeadline, and its first try takes the fast path: on its own clock
# its lease still holds, and nobody wrote since, so the write with its resourceVersion lands.
# The standby sees the record change and waits a whole lease again.
answer_5 = "b"


# 08, exercise 2. Read, compare tokens as numbers, and write with the resourceVersion read: a
# newer leader's write in between makes ours fail with 409, and then we read again.
def fenced_write(core: Any, namespace: str, name: str, token: int, data: dict[str, str]) -> bool:
    while True:
        found = core.read_namespaced_config_map(name, namespace)
        annotations = dict(found.metadata.annotations or {})
        if int(annotations.get("fencing-token", "0")) > token:
            return False  # a newer leader has written: we are stale
        annotations["fencing-token"] = str(token)
        found.metadata.annotations = annotations
        found.data = {**(found.data or {}), **data}
        try:
            core.replace_namespaced_config_map(name, namespace, found)  # carries resourceVersion
        except ApiException as err:
            if err.status != 409:
                raise
            continue  # someone wrote since our read: look again
        return True
