"""Solutions to chapter 07's exercises. Try them yourself first!"""

from __future__ import annotations

import kubernetes

# 1. Each Failed Pod is not active: the ReplicaSet is one short and creates a replacement (2 in
# all), and keeps the Failed one (it never deletes a Pod it does not count; PodGC waits for
# 12,500 terminated Pods). Scaling 3 -> 2 deletes one of the three active, Running Pods.
answer_1 = {"Running": 2, "Failed": 2, "created": 2, "deleted": 1}

# 2. The ReplicaSets may ask for no Pod above 4: maxSurge 0. Then the update can only proceed by
# taking an old Pod away first: maxUnavailable 1 (4 - 1 = 3 stay Ready). "25%" of 4 is also 1,
# rounded down.
strategy_2 = {"maxSurge": 0, "maxUnavailable": 1}


# 3. The scheduler never updates a Pod: it creates a Binding through the Pod's binding
# subresource, and the API server sets spec.nodeName. (The answer is a Status, which the
# Python client cannot read as a Binding: take it raw.)
def bind(core: kubernetes.client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    core.create_namespaced_pod_binding(pod, namespace, binding, _preload_content=False)
