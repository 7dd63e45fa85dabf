"""A large room on Kubernetes: Zero to JupyterHub's KubeSpawner gives each attendee the workshop.

The hub (the Zero to JupyterHub Helm chart, :data:`CHART_VERSION`, with
``deploy/zero-to-jupyterhub/values.yaml``) starts each attendee's JupyterLab as a
Pod. Before it does, :data:`pre_spawn_hook` (KubeSpawner's ``pre_spawn_hook``)
gives that attendee what ``python -m helpers.cluster.workshop up`` gives one
(:func:`helpers.cluster.workshop.add_attendee`: their chapter namespaces under Pod
Security ``baseline``, ServiceAccount, Roles, quota, limits, NetworkPolicy), writes
their kubeconfig (a fresh token for that ServiceAccount, the API server's
in-cluster address) into a Secret in the servers' namespace, and mounts it into
their Pod at :data:`KUBECONFIG_PATH`. The chapters then run in attendee mode, as
with a kubeconfig file handed out on a laptop.

The hook runs in the hub's Pod with the hub's ServiceAccount, which
:func:`prepare` (run once by the facilitator, as cluster-admin) binds to exactly
what the hook needs (:func:`hub_documents`), fenced by an admission policy so that
the hub can make attendees and nothing else with those rights. ``python -m
helpers.cluster.kubespawner_hook prepare --namespace jhub`` does that and writes the
values file that lets the servers reach the API server past the chart's
NetworkPolicy (:func:`api_server_egress`); ``remove`` and ``down`` undo it.
docs/facilitator.md ("A large room on Kubernetes") has the steps.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
import yaml
from kubernetes.client.exceptions import ApiException

from ..errors import CourseError
from ..workshop_mode import ATTENDEE_LABEL, FACILITATOR_NAMESPACE, WORKSHOP_LABEL
from . import workshop

CHART_VERSION = "4.4.0"
"""The Zero to JupyterHub chart ``values.yaml`` is written for (its hub runs JupyterHub 5.5.0
and KubeSpawner 7.0.0, the versions requirements.txt pins)."""
IN_CLUSTER_SERVER = "https://kubernetes.default.svc"
"""The API server's address as Pods reach it (the ``kubernetes`` Service's DNS name)."""
SECRET_PREFIX = "cfs-kubeconfig-"
VOLUME = "cfs-kubeconfig"
KUBECONFIG_DIR = "/etc/cfs-workshop"
KUBECONFIG_PATH = f"{KUBECONFIG_DIR}/config"
TOKEN_HOURS = 12
"""A server's token lasts this long (each start of the server writes a fresh one)."""
HUB_NAME = "cfs-workshop-hub"
HUB_LABEL = "controllers-from-scratch/hub"
"""The hub's own roles and policy carry it, with the hub's namespace as its value."""
FIELD_MANAGER = "controllers-from-scratch-workshop"
SERVICE_PORT = 443


def attendee_name(user: str) -> str:
    """The attendee a JupyterHub user is: the same name, if it can prefix every chapter
    namespace (a DNS label, short enough); else a CourseError, and nothing is made."""
    return workshop.attendees_for([user])[0].name


def secret_name(attendee: str) -> str:
    return f"{SECRET_PREFIX}{attendee}"


def in_cluster() -> kubernetes.client.ApiClient:
    """A client with the Pod's own ServiceAccount (the hub's), as KubeSpawner's."""
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_incluster_config(client_configuration=configuration)
    return kubernetes.client.ApiClient(configuration)


def kubeconfig_secret(namespace: str, attendee: str, kubeconfig: dict[str, Any]) -> dict[str, Any]:
    labels = {WORKSHOP_LABEL: "attendee", ATTENDEE_LABEL: attendee}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": secret_name(attendee), "namespace": namespace, "labels": labels},
        "stringData": {"config": yaml.safe_dump(kubeconfig)},
    }


def mount(spawner: Any, attendee: str) -> None:
    """Mount ``attendee``'s kubeconfig Secret into the Pod ``spawner`` will make, and point
    ``KUBECONFIG`` at it. New lists and dicts are assigned, never changed in place: the values
    from the configuration are shared by every spawner."""
    volume = {
        "name": VOLUME,
        # 0440 with the Pod's fsGroup: the attendee's user reads it, nobody writes it.
        "secret": {"secretName": secret_name(attendee), "defaultMode": 0o440},
    }
    volume_mount = {"name": VOLUME, "mountPath": KUBECONFIG_DIR, "readOnly": True}
    for trait, item in (("volumes", volume), ("volume_mounts", volume_mount)):
        current = getattr(spawner, trait)
        if isinstance(current, dict):
            setattr(spawner, trait, {**current, VOLUME: item})
        else:
            setattr(spawner, trait, [*(v for v in current if v.get("name") != VOLUME), item])
    spawner.environment = {**spawner.environment, "KUBECONFIG": KUBECONFIG_PATH}


@dataclass
class Hook:
    """KubeSpawner's ``pre_spawn_hook``: ``c.KubeSpawner.pre_spawn_hook = Hook()``.

    ``connect`` makes the client (default: the hub's ServiceAccount); ``server`` is the
    address written into the attendee's kubeconfig. A loopback ``server`` is refused
    (:func:`helpers.cluster.workshop.check_server`) unless ``allow_loopback`` (tests on
    the course's own control plane)."""

    server: str = IN_CLUSTER_SERVER
    token_hours: int = TOKEN_HOURS
    allow_loopback: bool = False
    connect: Callable[[], kubernetes.client.ApiClient] = in_cluster
    _api: kubernetes.client.ApiClient | None = field(default=None, init=False, repr=False)

    async def __call__(self, spawner: Any) -> None:
        attendee = attendee_name(spawner.user.name)
        # The Kubernetes client blocks: the hub's event loop serves everyone else meanwhile.
        await asyncio.to_thread(self.prepare_attendee, spawner.namespace, attendee)
        mount(spawner, attendee)

    def prepare_attendee(self, namespace: str, attendee: str) -> dict[str, Any]:
        """Make ``attendee``'s objects (idempotent) and their kubeconfig Secret in
        ``namespace``, the servers' namespace; returns the Secret."""
        if self._api is None:  # one client for every spawn (it re-reads a rotated token)
            self._api = self.connect()
        api = self._api
        kubeconfig = workshop.add_attendee(
            api,
            workshop.attendees_for([attendee])[0],
            token_hours=self.token_hours,
            server=self.server,
            allow_loopback=self.allow_loopback,
        )
        secret = kubeconfig_secret(namespace, attendee, kubeconfig)
        workshop._apply(api, secret)
        return secret


pre_spawn_hook = Hook()
"""The hook as ``values.yaml`` sets it (``hub.extraConfig``)."""


def remove(api: kubernetes.client.ApiClient, namespace: str, attendee: str) -> list[str]:
    """Take ``attendee``'s objects away (:func:`helpers.cluster.workshop.remove_attendee`) and
    their kubeconfig Secret from ``namespace``; returns what went."""
    removed = workshop.remove_attendee(api, attendee)
    try:
        kubernetes.client.CoreV1Api(api).delete_namespaced_secret(secret_name(attendee), namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
    return [*removed, f"Secret {namespace}/{secret_name(attendee)}"]


def hub_name(namespace: str) -> str:
    return f"{HUB_NAME}-{namespace}"


def _rules(*rules: tuple[Any, ...]) -> list[dict[str, Any]]:
    """RBAC rules from (apiGroups, resources, verbs[, resourceNames]) tuples."""
    made = []
    for rule in rules:
        groups, resources, verbs, *names = rule
        made.append({"apiGroups": groups, "resources": resources, "verbs": verbs,
                     **({"resourceNames": names[0]} if names else {})})  # fmt: skip
    return made


HUB_CLUSTER_RULES = _rules(
    ([""], ["namespaces"], ["get", "list", "create", "patch", "delete"]),
    ([""], ["resourcequotas", "limitranges"], ["get", "create", "patch"]),
    (["networking.k8s.io"], ["networkpolicies"], ["get", "create", "patch"]),
    # The attendee's Role grants what the chapters do in their namespaces; the hub does not
    # hold that itself, so it may `escalate`: the fence (HUB_FENCE_RULES) holds it to a Role
    # named cfs-attendee in an attendee's namespace.
    (["rbac.authorization.k8s.io"], ["roles"], ["get", "create", "patch", "escalate"]),
    (["rbac.authorization.k8s.io"], ["rolebindings"], ["get", "list", "create", "patch", "delete"]),
    (["rbac.authorization.k8s.io"], ["clusterrolebindings"],
     ["get", "list", "create", "patch", "delete"]),
    (["rbac.authorization.k8s.io"], ["roles"], ["bind"], [workshop.ROLE, workshop.LEASE_ROLE]),
    (["rbac.authorization.k8s.io"], ["clusterroles"], ["bind"], [workshop.CLUSTER_ROLE]),
)  # fmt: skip
"""Cluster-wide, for the hub: an attendee's namespaces do not exist before their first login."""
HUB_FACILITATOR_RULES = _rules(
    ([""], ["serviceaccounts"], ["get", "create", "patch", "delete"]),
    ([""], ["serviceaccounts/token"], ["create"]),
)
"""In :data:`helpers.workshop_mode.FACILITATOR_NAMESPACE`: the attendees' ServiceAccounts and
their tokens."""
HUB_SERVERS_RULES = _rules(([""], ["secrets"], ["get", "create", "patch", "delete"]))
"""In the hub's namespace, where the servers run: the attendees' kubeconfig Secrets."""
HUB_DEFAULT_RULES = _rules((["discovery.k8s.io"], ["endpointslices"], ["list"]))
"""In ``default``: the API server's addresses, for the attendees' NetworkPolicy."""

_OBJECT = "request.operation == 'DELETE' ? oldObject : object"
_ATTENDEE_NAMESPACE = (
    f"has(namespaceObject.metadata.labels) && '{ATTENDEE_LABEL}' in namespaceObject.metadata.labels"
)
_ATTENDEE_SUBJECTS = (
    "has(variables.o.subjects) && variables.o.subjects.all(s, s.kind == 'ServiceAccount' && "
    f"s.namespace == '{FACILITATOR_NAMESPACE}' && s.name.startsWith('attendee-'))"
)
HUB_FENCE_RULES = [
    {"expression": f"variables.kind != 'Namespace' || (has(variables.o.metadata.labels) && "
                   f"'{ATTENDEE_LABEL}' in variables.o.metadata.labels && variables.o.metadata."
                   f"name.startsWith(variables.o.metadata.labels['{ATTENDEE_LABEL}'] + '-'))",
     "message": "the workshop hub may only make, change or delete an attendee's namespace "
                f"(labelled {ATTENDEE_LABEL}, named after the attendee)"},
    {"expression": "!(variables.kind in ['Role', 'ResourceQuota', 'LimitRange', "
                   f"'NetworkPolicy']) || ({_ATTENDEE_NAMESPACE})",
     "message": "the workshop hub may only write Roles, quotas, limits and NetworkPolicies in "
                "an attendee's namespace"},
    {"expression": f"variables.kind != 'Role' || variables.o.metadata.name == '{workshop.ROLE}'",
     "message": f"the workshop hub may only write the Role {workshop.ROLE}"},
    {"expression": "variables.kind != 'RoleBinding' || (" + _ATTENDEE_SUBJECTS + " && ("
                   f"({_ATTENDEE_NAMESPACE} && variables.o.roleRef.kind == 'Role' && "
                   f"variables.o.roleRef.name == '{workshop.ROLE}') || "
                   f"(request.namespace == 'kube-system' && variables.o.roleRef.kind == 'Role' "
                   f"&& variables.o.roleRef.name == '{workshop.LEASE_ROLE}')))",
     "message": "the workshop hub may only bind an attendee's ServiceAccount to their Role in "
                "their namespace, or to the controller Lease's reader in kube-system"},
    {"expression": "variables.kind != 'ClusterRoleBinding' || (" + _ATTENDEE_SUBJECTS + " && "
                   f"variables.o.roleRef.name == '{workshop.CLUSTER_ROLE}')",
     "message": "the workshop hub may only bind an attendee's ServiceAccount to the read-only "
                f"ClusterRole {workshop.CLUSTER_ROLE}"},
]  # fmt: skip
"""What the hub's rights are held to (a ValidatingAdmissionPolicy for requests by the hub's
ServiceAccount): with `escalate` and `bind` alone, the hub could write a Role granting
anything in kube-system and bind it to itself."""
FENCED = {
    "": ["namespaces", "resourcequotas", "limitranges"],
    "networking.k8s.io": ["networkpolicies"],
    "rbac.authorization.k8s.io": ["roles", "rolebindings", "clusterrolebindings"],
}


def hub_documents(namespace: str, service_account: str = "hub") -> list[dict[str, Any]]:
    """The hub's rights (the chart's ServiceAccount ``hub`` in ``namespace``) and their fence."""
    name = hub_name(namespace)
    labels = {WORKSHOP_LABEL: "facilitator", HUB_LABEL: namespace}
    subject = [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}]

    def rbac(kind: str, where: str | None, **fields: Any) -> dict[str, Any]:
        return workshop._rbac(kind, name, where, labels, **fields)

    def binding(kind: str, where: str | None, role_kind: str) -> dict[str, Any]:
        return rbac(kind, where, subjects=subject, roleRef=workshop._ref(role_kind, name))

    admission = "admissionregistration.k8s.io/v1"
    documents = [
        rbac("ClusterRole", None, rules=HUB_CLUSTER_RULES),
        binding("ClusterRoleBinding", None, "ClusterRole"),
    ]
    scoped: dict[str, list[dict[str, Any]]] = {}
    where_rules = [(FACILITATOR_NAMESPACE, HUB_FACILITATOR_RULES),
                   (namespace, HUB_SERVERS_RULES), ("default", HUB_DEFAULT_RULES)]  # fmt: skip
    for where, rules in where_rules:
        scoped.setdefault(where, []).extend(rules)  # a hub in `default` gets one Role there
    for where, rules in scoped.items():
        documents += [rbac("Role", where, rules=rules), binding("RoleBinding", where, "Role")]
    hub_user = f"system:serviceaccount:{namespace}:{service_account}"
    documents += [
        {"apiVersion": admission, "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": name, "labels": labels},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [
                      {"apiGroups": [group], "apiVersions": ["v1"], "resources": resources,
                       "operations": ["CREATE", "UPDATE", "DELETE"]}
                      for group, resources in FENCED.items()]},
                  "matchConditions": [{"name": "the-hub",
                                       "expression": f"request.userInfo.username == '{hub_user}'"}],
                  "variables": [{"name": "o", "expression": _OBJECT},
                                {"name": "kind", "expression": "request.kind.kind"}],
                  "validations": HUB_FENCE_RULES}},
        {"apiVersion": admission, "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": name, "labels": labels},
         "spec": {"policyName": name, "validationActions": ["Deny"]}},
    ]  # fmt: skip
    return documents


def api_server_egress(api: kubernetes.client.ApiClient) -> list[dict[str, Any]]:
    """``singleuser.networkPolicy.egress`` for the chart: the servers may reach the API server.

    The chart's NetworkPolicy lets a server reach public addresses only, and on a managed
    cluster the API server is usually at a private one. Two destinations, as network plugins
    differ in which they check: the ``kubernetes`` Service's address (port 443) and the
    addresses behind it (its EndpointSlices, with their port), which is what a plugin sees
    after the Service's address was translated.
    """
    facts = workshop.facts_of(api)
    service = kubernetes.client.CoreV1Api(api).read_namespaced_service("kubernetes", "default")
    addresses = [(ip, port) for ip, port in [(service.spec.cluster_ip, SERVICE_PORT),
                                             *facts.api_server] if ip and ip != "None"]  # fmt: skip
    return [
        {"to": [{"ipBlock": {"cidr": f"{ip}/{128 if ':' in ip else 32}"}}],
         "ports": [{"protocol": "TCP", "port": port}]}
        for ip, port in sorted(set(addresses))
    ]  # fmt: skip


def egress_values(api: kubernetes.client.ApiClient) -> dict[str, Any]:
    """A values file for ``helm install -f``: the servers' egress to this cluster's API server."""
    return {"singleuser": {"networkPolicy": {"egress": api_server_egress(api)}}}


def prepare(api: kubernetes.client.ApiClient, namespace: str,
            service_account: str = "hub") -> dict[str, Any]:  # fmt: skip
    """Once, as cluster-admin: what every attendee shares (the Foo CRD with chapter 06's fields,
    the read-only roles, the admission policy on their Pods), the hub's rights and their
    fence; returns :func:`egress_values`."""
    workshop.prepare_cluster(api)
    for document in hub_documents(namespace, service_account):
        workshop._apply(api, document)
    return egress_values(api)


def remove_hub(api: kubernetes.client.ApiClient, namespace: str) -> list[str]:
    """Take the hub's rights and fence away; returns what went."""
    removed = []
    for document in reversed(hub_documents(namespace)):
        dynamic = kubernetes.dynamic.DynamicClient(api)
        resource = dynamic.resources.get(api_version=document["apiVersion"], kind=document["kind"])
        metadata = document["metadata"]
        try:
            resource.delete(name=metadata["name"], namespace=metadata.get("namespace"))
        except ApiException as exc:
            if exc.status != 404:
                raise
        removed.append(f"{document['kind']} {metadata.get('namespace', '')}/{metadata['name']}")
    return removed


def attendees_in(api: kubernetes.client.ApiClient, namespace: str) -> list[str]:
    """The attendees the hub made: those with a kubeconfig Secret in ``namespace``."""
    secrets = kubernetes.client.CoreV1Api(api).list_namespaced_secret(
        namespace, label_selector=ATTENDEE_LABEL
    )
    return sorted({item.metadata.labels[ATTENDEE_LABEL] for item in secrets.items})


def main(argv: list[str] | None = None) -> int:
    from ..kube import connect

    parser = argparse.ArgumentParser(
        prog="python -m helpers.cluster.kubespawner_hook",
        description="Prepare a cluster for the course's JupyterHub (Zero to JupyterHub "
        f"{CHART_VERSION}), remove attendees, or take it all down.",
    )
    parser.add_argument("--kubeconfig", help="the facilitator's kubeconfig (default: as kubectl)")
    parser.add_argument("--context", help="the context to use (default: the current one)")
    parser.add_argument("--namespace", required=True, help="the hub's namespace (helm -n)")
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("prepare", help="shared objects, the hub's rights, egress values")
    make.add_argument("--egress-out", type=Path, default=Path("api-server-egress.yaml"),
                      help="values file to write (default: api-server-egress.yaml)")  # fmt: skip
    gone = commands.add_parser("remove", help="remove attendees (their server stops working)")
    gone.add_argument("--attendees", required=True, help="comma-separated names")
    commands.add_parser("down", help="remove every attendee, the hub's rights and the shared part")
    args = parser.parse_args(argv)
    try:
        api = connect(args.kubeconfig, args.context)
        if args.command == "prepare":
            values = prepare(api, args.namespace)
            args.egress_out.write_text(yaml.safe_dump(values, sort_keys=False))
            print(f"ready; pass `-f {args.egress_out}` to helm after values.yaml.")
        elif args.command == "remove":
            names = [n.strip() for n in args.attendees.split(",") if n.strip()]
            for name in names:
                remove(api, args.namespace, attendee_name(name))
            print(f"removed {len(names)} attendee(s); namespaces finish deleting by themselves.")
        else:
            for name in attendees_in(api, args.namespace):
                remove(api, args.namespace, name)
            remove_hub(api, args.namespace)
            workshop.down(api)
            print("removed; `helm uninstall` the hub if it is still installed.")
    except CourseError as exc:
        print(f"error: {exc.problem}\nnext step: {exc.next_step}", file=sys.stderr)
        return 2
    except ApiException as exc:
        from ..apierrors import explain

        print(f"error: the API server refused: {explain(exc)}", file=sys.stderr)
        print("next step: run this with a cluster-admin kubeconfig.", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
