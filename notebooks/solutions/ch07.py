"""Solutions to chapter 07's exercises. Try them yourself first!"""

from __future__ import annotations

import kubernetes

# 1. Each Failed Pod is not active: the ReplicaSet is one short and creates a replacement (2 in
# all), and keeps the Failed one (it never deletes a Pod it does not count; PodGC waits for
# 12,500 terminated Pods). Scaling 3 -> 2 deletes one of the three active, Running Pods.
answer_1 = {"Running": 2, "Failed": 2, "created": 2, "deleted": 1}

# 2. It finishes. The new ReplicaSet may grow to 1 at once: maxSurge counts Pods above
# spec.replicas, whatever the old Pods' state. Nothing old goes until that new Pod is
# available (maxScaledDown = 4 asked - 3 minimum - 1 new unavailable = 0). Then
# reconcileOldReplicaSets may take 1 away, and cleanupUnhealthyReplicas spends it on the old
# ReplicaSet's unhealthy Pod first: the old ReplicaSet goes to 2, and replicaset-controller
# deletes the not-Ready Pod, which ranks first (not ready before ready). Ready Pods: 2 when the
# update starts (the limits bound what deployment-controller takes away, not what was already
# down), 3 once the new Pod is Ready, and never fewer afterwards.
answer_2 = {"finishes": True, "fewest Ready": 2, "first to go": "not Ready"}


# 3. The scheduler never updates a Pod: it creates a Binding through the Pod's binding
# subresource, and the API server sets spec.nodeName. The answer is a Status, which the
# generated client cannot read as a V1Binding: take it raw.
def bind(core: kubernetes.client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    core.create_namespaced_pod_binding(pod, namespace, binding, _preload_content=False)
