"""Solutions to chapter 08's exercises (08a: 1 and 2; 08b: 3 and 4). Try them yourself first!"""

from __future__ import annotations

from typing import Any

# 08a, exercise 1. Every sync writes its Foo's status, and those writes take tokens from one
# bucket (the samplecontroller.k8s.io group's: 5 a second, burst 10). Eight workers wait for
# the same tokens as two did: the plateau stays at about 5 syncs a second; the extra workers
# only hold keys while they wait.
answer_1 = "b"


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
