"""The failure report names what stalled: here, a Pod no node can take."""

from __future__ import annotations

import kubernetes
import pytest

from helpers.waiting import wait_for
from tests.cluster_report import cluster_report


@pytest.mark.cluster
def test_report_lists_components_nodes_and_a_pod_nobody_can_schedule(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    pod = {
        "metadata": {"name": "nowhere"},
        "spec": {
            "nodeSelector": {"no-such-label": "anywhere"},
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    core.create_namespaced_pod(namespace, pod)
    wait_for(
        core.list_namespaced_event,
        lambda events: any(e["reason"] == "FailedScheduling" for e in events.values()),
        what="the scheduler to report that it cannot place the Pod",
        timeout=30,
        namespace=namespace,
    )
    report = cluster_report()
    print(report)
    assert "health: ok" in report
    assert "kube-scheduler" in report.split("-- nodes")[0]
    assert "Ready=True" in report
    assert f"{namespace}/nowhere: Pending, not scheduled, PodScheduled=False" in report
    assert f"Pod {namespace}/nowhere: FailedScheduling" in report
