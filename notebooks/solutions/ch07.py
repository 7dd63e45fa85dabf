"""Solutions to chapter 07's exercises. Try them yourself first!"""

from __future__ import annotations

from helpers.chain import Change

# 1. The ledger names kube-controller-manager for the ReplicaSet and the Pods; the Events say
# which of its controllers (ScalingReplicaSet: deployment-controller; SuccessfulCreate:
# replicaset-controller) and RBAC says who writes each status. The binding is the scheduler's
# (its Event "Scheduled"), the Pod's status its kubelet's (or kwok's).
answer_1 = {
    ("ReplicaSet", "created"): "deployment-controller",
    ("ReplicaSet", "status.availableReplicas"): "replicaset-controller",
    ("Pod", "created"): "replicaset-controller",
    ("Pod", "spec.nodeName"): "scheduler",
    ("Pod", "status.phase"): "kubelet",
    ("Deployment", "status.availableReplicas"): "deployment-controller",
}

# 2. No Pod above 4: maxSurge 0. Then the update can only proceed by taking an old Pod away
# first: maxUnavailable 1 (4 - 1 = 3 stay Ready). "25%" of 4 is also 1, rounded down.
strategy_2 = {"maxSurge": 0, "maxUnavailable": 1}


# 3. A binding is the change of spec.nodeName (set once, through pods/binding); its new value
# is the node.
def bindings(changes: list[Change]) -> dict[str, str]:
    return {c.name: c.after for c in changes if c.kind == "Pod" and c.field == "spec.nodeName"}
