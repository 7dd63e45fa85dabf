"""A namespace's watch with a known number of events to replay, for the benchmark readers' tests."""

from __future__ import annotations

import kubernetes

from helpers.waiting import wait_for


def updates_to_replay(api: kubernetes.client.ApiClient, namespace: str, updates: int) -> str:
    """Make ``updates`` updates to one ConfigMap; the resourceVersion a watch replays them from.

    A new namespace gets kube-root-ca.crt from the controller manager: once it
    is there, the updates made here are all a watch from the returned
    resourceVersion has to replay.
    """
    core = kubernetes.client.CoreV1Api(api)
    wait_for(
        core.list_namespaced_config_map,
        lambda found: "kube-root-ca.crt" in found,
        what="kube-root-ca.crt in the new namespace",
        timeout=30,
        namespace=namespace,
    )
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}})
    since = core.list_namespaced_config_map(namespace).metadata.resource_version
    for i in range(updates):
        core.patch_namespaced_config_map("cm", namespace, {"data": {"n": str(i)}})
    return since
