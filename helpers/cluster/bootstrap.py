"""What every course cluster needs once it answers: nodes and the Foo CRD.

kwok does not create nodes; it only plays kubelet for the Node objects it
finds. We create them named like kind's (``<cluster>-control-plane`` with its
NoSchedule taint, ``<cluster>-worker`` and ``<cluster>-worker2``) so the
chapters' output reads the same on both backends: Pods land on the workers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes
import yaml
from kubernetes.client.exceptions import ApiException

from ..waiting import wait_for

MANIFESTS_DIR = Path(__file__).resolve().parents[2] / "manifests"
FOO_CRD_NAME = "foos.samplecontroller.k8s.io"


def node_manifest(name: str, *, control_plane: bool) -> dict[str, Any]:
    """A Node for kwok to manage: enough capacity for every chapter's Pods."""
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
    }
    spec: dict[str, Any] = {}
    if control_plane:
        labels["node-role.kubernetes.io/control-plane"] = ""
        spec["taints"] = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def node_names(cluster_name: str) -> list[str]:
    return [f"{cluster_name}-control-plane", f"{cluster_name}-worker", f"{cluster_name}-worker2"]


def create_nodes(api: kubernetes.client.ApiClient, cluster_name: str, timeout: float) -> None:
    """Create the kind-like nodes (if missing) and wait until kwok reports them Ready."""
    core = kubernetes.client.CoreV1Api(api)
    names = node_names(cluster_name)
    for name in names:
        try:
            core.create_node(node_manifest(name, control_plane=name.endswith("control-plane")))
        except ApiException as exc:
            if exc.status != 409:  # already there from an earlier `up`
                raise

    def all_ready(nodes: dict[str, dict[str, Any]]) -> bool:
        return all(_is_ready(nodes.get(name)) for name in names)

    wait_for(core.list_node, all_ready, what="kwok to mark the nodes Ready", timeout=timeout)


def wait_for_controllers(api: kubernetes.client.ApiClient, timeout: float) -> None:
    """Wait until kube-controller-manager and kube-scheduler lead and work.

    The API server answers seconds before they have synced their caches: a chapter
    started at once would wait for a Pod nobody schedules yet. Each holds its Lease in
    kube-system once it leads, and the service-account controller makes the ``default``
    ServiceAccount (which every Pod needs) once the controllers run.
    """
    leases = kubernetes.client.CoordinationV1Api(api)
    core = kubernetes.client.CoreV1Api(api)

    def held(found: dict[str, dict[str, Any]]) -> bool:
        wanted = ("kube-controller-manager", "kube-scheduler")
        return all(((found.get(n) or {}).get("spec") or {}).get("holderIdentity") for n in wanted)

    wait_for(
        leases.list_namespaced_lease, held, what="the controller manager and the scheduler to lead",
        timeout=timeout, namespace="kube-system",
    )  # fmt: skip
    wait_for(
        core.list_namespaced_service_account, lambda found: "default" in found,
        what="the controllers to make the default ServiceAccount", timeout=timeout,
        namespace="default",
    )  # fmt: skip


def _is_ready(node: dict[str, Any] | None) -> bool:
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def install_foo_crd(api: kubernetes.client.ApiClient, timeout: float) -> None:
    """Create or update sample-controller's Foo CRD, and wait until it is Established."""
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    manifest = yaml.safe_load((MANIFESTS_DIR / "foo-crd.yaml").read_text())
    try:
        extensions.create_custom_resource_definition(manifest)
    except ApiException as exc:
        if exc.status != 409:
            raise
        current = extensions.read_custom_resource_definition(FOO_CRD_NAME)
        manifest["metadata"]["resourceVersion"] = current.metadata.resource_version
        extensions.replace_custom_resource_definition(FOO_CRD_NAME, manifest)

    def established(crds: dict[str, dict[str, Any]]) -> bool:
        conditions = ((crds.get(FOO_CRD_NAME) or {}).get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

    wait_for(
        extensions.list_custom_resource_definition,
        established,
        what=f"the CRD {FOO_CRD_NAME} to be Established",
        timeout=timeout,
    )


def foo_crd_drift(api: kubernetes.client.ApiClient) -> list[str]:
    """How the Foo CRD's schema differs from sample-controller's (``manifests/foo-crd.yaml``).

    An empty list when it is the same. Otherwise one entry per field or rule that one of them
    has and the other lacks, as ``"+ status.conditions"`` (only on the cluster) or
    ``"- spec.replicas"`` (only in the manifest); a field whose parent is listed is not.
    Chapters 06b and 10 extend the CRD for a while and put it back; a run stopped in between
    leaves it extended, and every chapter that prints the CRD, or meets its rules, would then
    print something else.
    """
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    manifest = yaml.safe_load((MANIFESTS_DIR / "foo-crd.yaml").read_text())
    crd = api.sanitize_for_serialization(extensions.read_custom_resource_definition(FOO_CRD_NAME))
    wanted = _schema_paths(manifest["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    found = _schema_paths(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    return [f"+ {path}" for path in _outermost(found - wanted)] + [
        f"- {path}" for path in _outermost(wanted - found)
    ]


def _outermost(paths: set[str]) -> list[str]:
    """``paths`` without those inside another of them (``status.conditions[].type`` goes when
    ``status.conditions`` is there), sorted."""
    return sorted(p for p in paths if not any(p.startswith((f"{q}.", f"{q}[]")) for q in paths))


def _schema_paths(schema: dict[str, Any], prefix: str = "") -> set[str]:
    """Every property of ``schema`` as a dotted path, and each CEL rule as ``<path> rule: ...``."""
    paths = {f"{prefix or '(root)'} rule: {rule.get('rule')}"
             for rule in schema.get("x-kubernetes-validations") or []}  # fmt: skip
    for name, child in (schema.get("properties") or {}).items():
        path = f"{prefix}.{name}" if prefix else name
        paths |= {path} | _schema_paths(child, path)
    if isinstance(schema.get("items"), dict):
        paths |= _schema_paths(schema["items"], f"{prefix}[]")
    return paths
