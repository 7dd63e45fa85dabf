"""The local control plane is a real, complete cluster, not a stand-in.

A Deployment only reaches ``availableReplicas == 3`` if every component does
its job: kube-controller-manager's deployment controller creates a ReplicaSet,
its replicaset controller creates Pods, kube-scheduler binds them to nodes,
and kwok (playing kubelet) reports them Running and Ready.
"""

from __future__ import annotations

from typing import Any

import kubernetes
import pytest

from helpers.cluster.backends import local_cluster
from helpers.cluster.local import CONTROLLER_MANAGER_ARGS
from helpers.cluster.processes import command_line
from helpers.home import DEFAULT_CLUSTER_NAME, CourseHome
from helpers.waiting import wait_for

pytestmark = pytest.mark.cluster

DEPLOYMENT = "web"
LABELS = {"app": "web"}


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "metadata": {"name": DEPLOYMENT, "labels": LABELS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]},
            },
        },
    }


def ready_pods(pods: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    def ready(pod: dict[str, Any]) -> bool:
        conditions = (pod.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    return [
        pod for pod in pods.values() if ready(pod) and not pod["metadata"].get("deletionTimestamp")
    ]


def test_deployment_becomes_available_and_pods_are_replaced(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    apps = kubernetes.client.AppsV1Api(api)
    core = kubernetes.client.CoreV1Api(api)
    created = apps.create_namespaced_deployment(namespace, deployment(3))

    deployments = wait_for(
        apps.list_namespaced_deployment,
        lambda d: (d.get(DEPLOYMENT, {}).get("status") or {}).get("availableReplicas") == 3,
        what="the Deployment to report 3 available replicas",
        timeout=90,
        namespace=namespace,
    )
    assert deployments[DEPLOYMENT]["status"]["readyReplicas"] == 3

    # kube-controller-manager made a ReplicaSet owned by the Deployment.
    replica_sets = apps.list_namespaced_replica_set(namespace).items
    assert len(replica_sets) == 1
    owner = replica_sets[0].metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Deployment", DEPLOYMENT, created.metadata.uid, True,
    )  # fmt: skip

    # kube-scheduler bound every Pod to a kwok worker (the control plane is tainted).
    pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
    assert len(pods) == 3
    nodes = {node.metadata.name: node for node in core.list_node().items}
    for pod in pods:
        assert pod.spec.node_name in nodes
        assert pod.spec.node_name.endswith(("-worker", "-worker2"))
        assert pod.metadata.owner_references[0].name == replica_sets[0].metadata.name
        assert pod.status.phase == "Running"

    # Deleting a Pod: the ReplicaSet notices and a new one becomes Ready.
    victim = pods[0].metadata.name
    core.delete_namespaced_pod(victim, namespace, grace_period_seconds=0)
    after = wait_for(
        core.list_namespaced_pod,
        lambda p: victim not in p and len(ready_pods(p)) == 3,
        what="a replacement Pod to become Ready",
        timeout=90,
        namespace=namespace,
        label_selector="app=web",
    )
    assert victim not in after
    assert len(ready_pods(after)) == 3


def test_kube_controller_manager_runs_with_the_courses_pacing() -> None:
    """kwokctl passes CONTROLLER_MANAGER_ARGS on: the running process has each flag."""
    cluster = local_cluster(CourseHome.from_environment(), DEFAULT_CLUSTER_NAME)
    if cluster is None:
        pytest.skip("not the local control plane (kind-config.yaml is checked in test_kind_config)")
    arguments = command_line(cluster.running()["kube-controller-manager"])
    for key, value in CONTROLLER_MANAGER_ARGS:
        assert f"--{key}={value}" in arguments
