"""A shared cluster for a workshop: attendees with namespaces of their own and nothing more.

``python -m helpers.cluster.workshop up --attendees alice,bob`` (or ``--count 12``)
prepares one cluster (any cluster the kubeconfig names, where the facilitator
is cluster-admin) for several people at once:

* once (:func:`prepare_cluster`): the Foo CRD with the status fields chapter 06
  adds and chapter 10's fields and CEL rule (attendees may not change a CRD, which is
  cluster-wide), a ClusterRole
  that lets attendees read what the chapters read at the cluster scope (Nodes,
  CRDs, the default ClusterRoles), a Role in ``kube-system`` to read the
  controller manager's Lease (chapter 08), the namespace ``cfs-workshop`` for the
  attendees' ServiceAccounts (out of their reach), and a ValidatingAdmissionPolicy
  that keeps attendees' Pods from choosing their node (:data:`POD_RULES`);
* per attendee (:func:`add_attendee`, one call, the unit a JupyterHub spawner can
  use): one namespace per chapter (``alice-ch04-workqueue``, ...) labelled for Pod
  Security ``baseline`` (:data:`POD_SECURITY_LEVEL`), a ServiceAccount, in each
  namespace a Role and RoleBinding allowing what the chapters do there
  (:data:`NAMESPACE_RULES`) and nothing elsewhere, a ResourceQuota
  (:data:`QUOTA`), a LimitRange (:data:`LIMITS`) and a NetworkPolicy that lets
  nothing in and only DNS and the API server out; and a kubeconfig with a token
  for that ServiceAccount whose context namespace is their chapter 00 namespace.
  :func:`helpers.workshop_mode.attendee` takes attendee mode from that claim, once
  the API server has confirmed it.

``up`` writes a loopback address (``https://127.0.0.1:PORT``) into the
attendees' files only for the course's local control plane once it has checked
that the running cluster may be shared with other accounts of this machine
(:meth:`helpers.cluster.local.LocalCluster.sharing_problem`: etcd demands a
client certificate, no component answers without a credential, the course's
folder is closed): those files are for accounts on this machine, a workshop hub's
attendees (:mod:`helpers.cluster.hub`). Any other loopback server is refused
unless told ``--allow-loopback`` (a rehearsal alone).
``python -m helpers.cluster.workshop down`` removes all
of it (``--attendees`` some; :func:`remove_attendee` one). Everything made
carries the label :data:`helpers.workshop_mode.WORKSHOP_LABEL`, so a tear-down
finds it again and an attendee's emptying of a namespace keeps it.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import ipaddress
import json
import re
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes
import yaml
from kubernetes.client.exceptions import ApiException

from ..errors import CourseError
from ..home import CourseHome
from ..kube import connect
from ..private_files import make_private_dirs, write_private
from ..workshop_mode import (
    ATTENDEE_LABEL,
    FACILITATOR_NAMESPACE,
    WORKSHOP_LABEL,
    service_account,
)
from .bootstrap import install_foo_crd

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_ROLE = "cfs-workshop-attendee"
LEASE_ROLE = "cfs-workshop-read-controller-lease"
POD_POLICY = "cfs-workshop-attendee-pods"
ROLE = "cfs-attendee"
QUOTA_NAME = "cfs-attendee"
NETWORK_POLICY = "cfs-attendee-isolated"
DEFAULT_TOKEN_HOURS = 48
# Read-only, cluster-wide: what chapters 00, 05, 06 and 07 read (no Secrets, no other namespaces).
CLUSTER_RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["clusterroles"],
        "verbs": ["get", "list"],
    },
]
# Inside the attendee's own namespaces: what the chapters make there (helpers.cluster.preflight
# lists each use), named, never "*". RBAC checks a namespace's own DELETE against rules in that
# namespace, so "*" on "*" would let attendees delete their namespaces, which they could not
# create again; the one rule on "namespaces" is `get`, so that helpers.workshop_mode can read
# the attendee label of the namespace it is about to empty. Roles get the ordinary verbs only:
# "escalate" and "bind" would let an attendee write a Role granting what they do not hold and
# bind it to themselves. Left out on purpose, as no chapter uses them: pods/binding (a Pod on a
# node of the attendee's choice, the control plane's included: chapter 07's exercise 3 then
# says it cannot check an attendee's answer), Services (externalIPs capture other people's
# traffic, NodePorts open a port on every node), Endpoints and EndpointSlices (a Service
# pointed at any address), and every other kind of workload (DaemonSets reach every node).
ROLE_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
NAMESPACE_RULES = [
    {"apiGroups": [""], "verbs": ROLE_VERBS, "resources": [
        "configmaps", "podtemplates", "pods", "pods/log", "pods/status", "pods/eviction",
        "events", "serviceaccounts", "serviceaccounts/token", "secrets"]},
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
    {"apiGroups": ["apps"], "verbs": ROLE_VERBS, "resources": [
        "deployments", "deployments/scale", "deployments/status",
        "replicasets", "replicasets/scale", "replicasets/status"]},
    {"apiGroups": ["samplecontroller.k8s.io", "coordination.k8s.io", "events.k8s.io"],
     "resources": ["*"], "verbs": ROLE_VERBS},
    {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
     "verbs": ROLE_VERBS},
]  # fmt: skip
POD_SECURITY_LEVEL = "baseline"
"""The Pod Security Standard enforced in every attendee namespace.

``baseline`` refuses what reaches the node: privileged containers, hostPath
volumes, the host's network, PID and IPC namespaces, host ports, added
capabilities beyond the runtime's defaults, and more. ``restricted`` would also
demand ``runAsNonRoot``, which the chapters' nginx and busybox images do not
satisfy: on a cluster with a real kubelet their Pods would never start."""
# Pods in attendee namespaces may not pick their node: not by name (spec.nodeName bypasses the
# scheduler and its taints), not by tolerating the control plane's taint, not by tolerating
# every taint (a toleration without a key). Checked by the API server itself (CEL), for every
# Pod created there, also by a ReplicaSet from an attendee's Deployment.
POD_RULES = [
    {"expression": "!has(object.spec.nodeName) || object.spec.nodeName == ''",
     "message": "a workshop attendee's Pod may not name its node (spec.nodeName): the scheduler "
                "places it"},
    {"expression": "!has(object.spec.tolerations) || object.spec.tolerations.all(t, "
                   "has(t.key) && t.key != '' && !t.key.startsWith('node-role.kubernetes.io/'))",
     "message": "a workshop attendee's Pod may not tolerate the control plane's taint "
                "(node-role.kubernetes.io/...) or every taint (a toleration without a key)"},
]  # fmt: skip
QUOTA = {
    "pods": "80",
    "requests.cpu": "1",
    "requests.memory": "2Gi",
    "limits.cpu": "8",
    "limits.memory": "6Gi",
    "count/deployments.apps": "30",
    "count/replicasets.apps": "60",
    "count/foos.samplecontroller.k8s.io": "60",
    "configmaps": "300",
    "count/podtemplates": "20",
    "count/leases.coordination.k8s.io": "20",
    "count/serviceaccounts": "20",
    "secrets": "20",
    "services": "0",
    "persistentvolumeclaims": "0",
}
"""Each attendee namespace's ResourceQuota: about twice the most any chapter made at once,
measured as an attendee on 2026-12-06 (peaks of the quota's own ``status.used``: 36 Pods,
12 Deployments and 12 ReplicaSets in 08a, 22 Foos in 06a, 121 ConfigMaps in 04, 4 Leases,
3 PodTemplates, 3 ServiceAccounts, no Secret or Service; docs/facilitator.md has the table).
Pod requests and limits are counted, so every Pod needs them: :data:`LIMITS` gives each
container defaults (36 Pods with them: 0.36 CPU and 576 Mi requested)."""
LIMITS = {
    "defaultRequest": {"cpu": "10m", "memory": "16Mi"},
    "default": {"cpu": "100m", "memory": "64Mi"},
    "max": {"cpu": "500m", "memory": "512Mi"},
}
"""Each attendee namespace's LimitRange, per container: defaults for a container that states
nothing (the chapters' never do; an idle nginx needs a few Mi), and the most one may ask for
(chapter 08b's controller asks for 50m and 96Mi, limited to 256Mi)."""
_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def chapter_namespaces(notebooks: Path = ROOT / "notebooks") -> list[str]:
    """Each chapter's namespace, as its setup cell names it (``fresh_namespace(api, "...")``)."""
    found = []
    for path in sorted(notebooks.glob("[0-9][0-9]*_*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        source = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
        match = re.search(r'fresh_namespace\(api, "([-a-z0-9]+)"\)', source)
        if match:
            found.append(match[1])
    return found


def check_attendee_name(name: str, longest: int) -> str:
    """``name`` if it can prefix every chapter namespace; else a CourseError saying why not."""
    if not _NAME.match(name) or len(name) + 1 + longest > 63:
        raise CourseError(
            f"'{name}' cannot be an attendee's name: it must be lower-case letters, digits and "
            f"'-', start with a letter and have at most {62 - longest} characters.",
            "pick a name like 'alice' or 'attendee-07'.",
        )
    return name


@dataclass(frozen=True)
class Attendee:
    """One attendee: their name and the namespaces that are theirs."""

    name: str
    namespaces: tuple[str, ...]

    @property
    def service_account(self) -> str:
        return service_account(self.name)

    @property
    def subject(self) -> dict[str, str]:
        return {
            "kind": "ServiceAccount",
            "name": self.service_account,
            "namespace": FACILITATOR_NAMESPACE,
        }


def attendees_for(names: list[str], chapters: list[str] | None = None) -> list[Attendee]:
    """The attendees called ``names``, each with one namespace per chapter."""
    chapters = chapters if chapters is not None else chapter_namespaces()
    longest = max(map(len, chapters), default=0)
    if len(set(names)) != len(names):
        raise CourseError("The attendees' names repeat.", "give each attendee a name of their own.")
    return [
        Attendee(check_attendee_name(name, longest), tuple(f"{name}-{c}" for c in chapters))
        for name in names
    ]


def _labels(attendee: str | None = None) -> dict[str, str]:
    labels = {WORKSHOP_LABEL: "attendee" if attendee else "facilitator"}
    if attendee:
        labels[ATTENDEE_LABEL] = attendee
    return labels


def _apply(api: kubernetes.client.ApiClient, document: dict[str, Any]) -> None:
    """Server-side apply one object (create it, or make it so again)."""
    dynamic = kubernetes.dynamic.DynamicClient(api)
    resource = dynamic.resources.get(api_version=document["apiVersion"], kind=document["kind"])
    dynamic.server_side_apply(
        resource,
        body=document,
        name=document["metadata"]["name"],
        namespace=document["metadata"].get("namespace"),
        field_manager="controllers-from-scratch-workshop",
        force_conflicts=True,
    )


def _rbac(kind: str, name: str, namespace: str | None, labels: dict[str, str],
          **fields: Any) -> dict[str, Any]:  # fmt: skip
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata,
            **fields}  # fmt: skip


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}


def shared_documents() -> list[dict[str, Any]]:
    """What every attendee shares: their ServiceAccounts' namespace, the read-only roles, and
    the admission policy on their Pods."""
    labels = _labels()
    admission = "admissionregistration.k8s.io/v1"
    return [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": FACILITATOR_NAMESPACE, "labels": labels}},
        _rbac("ClusterRole", CLUSTER_ROLE, None, labels, rules=CLUSTER_RULES),
        _rbac("Role", LEASE_ROLE, "kube-system", labels, rules=[{
            "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "resourceNames": ["kube-controller-manager"], "verbs": ["get"]}]),
        {"apiVersion": admission, "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": POD_POLICY, "labels": labels},
         "spec": {"failurePolicy": "Fail", "validations": POD_RULES,
                  "matchConstraints": {"resourceRules": [{
                      "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                      "resources": ["pods"]}]}}},
        {"apiVersion": admission, "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": POD_POLICY, "labels": labels},
         "spec": {"policyName": POD_POLICY, "validationActions": ["Deny"],
                  "matchResources": {"namespaceSelector": {"matchExpressions": [
                      {"key": ATTENDEE_LABEL, "operator": "Exists"}]}}}},
    ]  # fmt: skip


@dataclass(frozen=True)
class ClusterFacts:
    """What an attendee's namespaces are fitted to: read from the cluster by :func:`facts_of`."""

    version: str
    """``v1.36``: the Pod Security version enforced, the cluster's own (pinned: a later
    Kubernetes may tighten a level, and a running workshop should not change under people)."""
    api_server: tuple[tuple[str, int], ...]
    """The API server's addresses and ports as Pods reach them (the ``kubernetes`` Service's
    EndpointSlices)."""


def facts_of(api: kubernetes.client.ApiClient) -> ClusterFacts:
    version = kubernetes.client.VersionApi(api).get_code()
    minor = re.match(r"\d+", version.minor)
    slices = kubernetes.client.DiscoveryV1Api(api).list_namespaced_endpoint_slice(
        "default", label_selector="kubernetes.io/service-name=kubernetes"
    )
    addresses = tuple(
        sorted(
            (address, port.port)
            for endpoints in slices.items
            for endpoint in endpoints.endpoints or []
            for address in endpoint.addresses
            for port in endpoints.ports or []
        )
    )
    return ClusterFacts(f"v{version.major}.{minor[0] if minor else version.minor}", addresses)


def namespace_documents(
    namespace: str, labels: dict[str, str], facts: ClusterFacts
) -> list[dict[str, Any]]:
    """One attendee namespace: labelled for Pod Security, with its quota, limits and isolation."""
    pod_security = {
        f"pod-security.kubernetes.io/{mode}{suffix}": value
        for mode in ("enforce", "warn", "audit")
        for suffix, value in (("", POD_SECURITY_LEVEL), ("-version", facts.version))
    }
    dns = {"to": [{"namespaceSelector": {"matchLabels": {
               "kubernetes.io/metadata.name": "kube-system"}}}],
           "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}  # fmt: skip
    egress = [dns] + [
        {"to": [{"ipBlock": {"cidr": f"{ip}/{128 if ':' in ip else 32}"}}],
         "ports": [{"protocol": "TCP", "port": port}]}
        for ip, port in facts.api_server
    ]  # fmt: skip
    metadata = {"namespace": namespace, "labels": labels}
    return [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": namespace, "labels": {**labels, **pod_security}}},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": QUOTA_NAME, **metadata},
         "spec": {"hard": QUOTA}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": QUOTA_NAME, **metadata},
         "spec": {"limits": [{"type": "Container", **LIMITS}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"name": NETWORK_POLICY, **metadata},
         "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [],
                  "egress": egress}},
    ]  # fmt: skip


def attendee_documents(attendee: Attendee, facts: ClusterFacts) -> list[dict[str, Any]]:
    """One attendee's ServiceAccount, namespaces, and the roles binding them to both."""
    labels = _labels(attendee.name)
    subject = [attendee.subject]
    binding = f"cfs-workshop-{attendee.name}"
    documents: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": attendee.service_account, "namespace": FACILITATOR_NAMESPACE,
                      "labels": labels}},
        _rbac("ClusterRoleBinding", binding, None, labels, subjects=subject,
              roleRef=_ref("ClusterRole", CLUSTER_ROLE)),
        _rbac("RoleBinding", binding, "kube-system", labels, subjects=subject,
              roleRef=_ref("Role", LEASE_ROLE)),
    ]  # fmt: skip
    for namespace in attendee.namespaces:
        documents += [
            *namespace_documents(namespace, labels, facts),
            _rbac("Role", ROLE, namespace, labels, rules=NAMESPACE_RULES),
            _rbac("RoleBinding", ROLE, namespace, labels, subjects=subject,
                  roleRef=_ref("Role", ROLE)),
        ]  # fmt: skip
    return documents


def kubeconfig_for(
    api: kubernetes.client.ApiClient, attendee: Attendee, token: str, server: str | None = None
) -> dict[str, Any]:
    """A self-contained kubeconfig: the cluster's CA inline, the token, the attendee's namespace."""
    configuration = api.configuration
    cluster: dict[str, Any] = {"server": server or configuration.host}
    if configuration.ssl_ca_cert:
        ca = Path(configuration.ssl_ca_cert).read_bytes()
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    elif not configuration.verify_ssl:
        cluster["insecure-skip-tls-verify"] = True
    context = f"cfs-{attendee.name}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "workshop", "cluster": cluster}],
        "users": [{"name": attendee.name, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {
            "cluster": "workshop", "user": attendee.name, "namespace": attendee.namespaces[0]}}],
        "current-context": context,
    }  # fmt: skip


def is_loopback(server: str) -> bool:
    """Does ``server`` (a URL) name this machine: 127.0.0.0/8, ::1 or localhost?"""
    host = (urlsplit(server).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_server(
    server: str,
    *,
    allow_loopback: bool = False,
    api: kubernetes.client.ApiClient | None = None,
) -> str:
    """``server``, the address written into the attendees' files.

    A loopback one is refused (a CourseError) unless ``allow_loopback``, or unless ``api``
    talks to the course's local control plane and that cluster, as it runs, may be shared
    with other accounts of this machine (:func:`sharing_problem`)."""
    if not is_loopback(server) or allow_loopback:
        return server
    problem = sharing_problem(api) if api is not None else "no cluster was named to check"
    if problem is None:
        return server
    raise CourseError(
        f"The attendees' kubeconfig files would point at {server}, a loopback address: only "
        "accounts on this machine can use them, and this cluster may not be shared with "
        f"them: {problem}.",
        "run the workshop on a cluster the attendees reach over the network (kubeadm or "
        "managed) and pass its address with --server; or on this machine's local control plane "
        "started by this version of the course (`make up`), which secures it; to rehearse alone "
        "on this machine, add --allow-loopback.",
    )


def sharing_problem(api: kubernetes.client.ApiClient) -> str | None:
    """None when ``api`` talks to a local control plane the course started (its API server's
    URL and CA are those recorded by ``up``) that may be shared with other accounts of this
    machine, as it runs (:meth:`LocalCluster.sharing_problem`); else why not, in a few words."""
    from .identity import created_clusters
    from .local import LocalCluster

    configuration = api.configuration
    home = CourseHome.from_environment()
    ca = _fingerprint(configuration.ssl_ca_cert) if configuration.ssl_ca_cert else None
    for name, identity in created_clusters(home).items():
        cluster = LocalCluster(home, name)
        if (identity.server, identity.ca_sha256) == (configuration.host, ca) and (
            cluster.kwok_dir.is_dir()
        ):
            return cluster.sharing_problem()
    return f"{configuration.host} is not a local control plane the course started (in {home.root})"


def _fingerprint(path: str) -> str | None:
    """SHA-256 of the certificate in ``path`` (as :mod:`.identity` records a cluster's CA)."""
    try:
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(Path(path).read_text().strip())).hexdigest()
    except (OSError, ValueError):
        return None


def prepare_cluster(api: kubernetes.client.ApiClient) -> ClusterFacts:
    """What every attendee shares (once per cluster; idempotent); the facts their namespaces
    are fitted to."""
    from ..foo_crd import extend_foo_status

    install_foo_crd(api, timeout=60)
    extend_foo_status(api)  # chapter 06's fields, once for all: attendees cannot change a CRD
    install_chapter_10_crd(api)  # chapter 10's fields and CEL rule, likewise
    for document in shared_documents():
        _apply(api, document)
    return facts_of(api)


def add_attendee(
    api: kubernetes.client.ApiClient,
    attendee: Attendee,
    *,
    facts: ClusterFacts | None = None,
    token_hours: int = DEFAULT_TOKEN_HOURS,
    server: str | None = None,
    allow_loopback: bool = False,
) -> dict[str, Any]:
    """Give ``attendee`` their ServiceAccount, namespaces, roles, quota, limits and isolation
    (idempotent), and return their kubeconfig (a dict, with a fresh token).

    :func:`prepare_cluster` must have run once (it returns ``facts``; without them they are
    read again). ``server`` is the address written into the kubeconfig (default: the one
    ``api`` uses), checked by :func:`check_server` before anything is made.
    """
    check_server(server or api.configuration.host, allow_loopback=allow_loopback, api=api)
    for document in attendee_documents(attendee, facts or facts_of(api)):
        _apply(api, document)
    core = kubernetes.client.CoreV1Api(api)
    request = {"spec": {"expirationSeconds": token_hours * 3600}}
    token = core.create_namespaced_service_account_token(
        attendee.service_account, FACILITATOR_NAMESPACE, request
    ).status.token
    return kubeconfig_for(api, attendee, token, server)


def remove_attendee(api: kubernetes.client.ApiClient, name: str) -> list[str]:
    """Take attendee ``name``'s namespaces, bindings and ServiceAccount away (their token stops
    working at once); returns what went. The shared objects stay."""
    return down(api, [name])


def up(
    api: kubernetes.client.ApiClient,
    attendees: list[Attendee],
    out: Path,
    *,
    token_hours: int = DEFAULT_TOKEN_HOURS,
    server: str | None = None,
    allow_loopback: bool = False,
) -> list[Path]:
    """Prepare the cluster for ``attendees``; returns their kubeconfig files (written to ``out``).

    Idempotent: running it again with more names adds those attendees and
    gives everyone fresh tokens. A loopback ``server`` (or, without one, a
    loopback address of ``api``'s) is refused unless ``allow_loopback``
    (:func:`check_server`); so is an ``out`` the course did not make; both
    before the cluster is touched.
    """
    check_server(server or api.configuration.host, allow_loopback=allow_loopback, api=api)
    out = prepare_out_folder(out)
    facts = prepare_cluster(api)
    written = []
    for attendee in attendees:
        kubeconfig = add_attendee(api, attendee, facts=facts, token_hours=token_hours,
                                  server=server, allow_loopback=allow_loopback)  # fmt: skip
        path = out / f"{attendee.name}.kubeconfig"
        write_private(path, yaml.safe_dump(kubeconfig))
        written.append(path)
    return written


OUT_MARKER = ".controllers-from-scratch-workshop"
"""The file that marks a folder of attendee kubeconfigs as the course's own."""


def prepare_out_folder(out: Path) -> Path:
    """The folder for the attendees' kubeconfig files: a new one (made 0700, and marked), or
    one the course made before. Any other folder is refused: the files it would write there
    (``<attendee>.kubeconfig``) could replace someone's own."""
    marker = out / OUT_MARKER
    if out.exists() and not marker.is_file():
        raise CourseError(
            f"{out} exists and the course did not make it (it holds no {OUT_MARKER}), so the "
            "attendees' kubeconfig files are not written there.",
            "pass --out with a folder that does not exist yet (the course makes it), or leave "
            "--out out.",
        )
    make_private_dirs(out)  # every folder it makes on the way is 0700, the course home too
    marker.touch()
    return out


def down(api: kubernetes.client.ApiClient, names: list[str] | None = None) -> list[str]:
    """Remove the attendees ``names`` (default: all, and the shared objects); returns what went.

    Namespaces are deleted without waiting (the API server finishes that by
    itself). With everyone gone the Foo CRD loses chapter 06's status fields
    again, as after a chapter run on the course's own cluster.
    """
    selector = f"{ATTENDEE_LABEL} in ({','.join(names)})" if names else f"{WORKSHOP_LABEL}"
    core = kubernetes.client.CoreV1Api(api)
    rbac = kubernetes.client.RbacAuthorizationV1Api(api)
    admission = kubernetes.client.AdmissionregistrationV1Api(api)
    removed: list[str] = []

    def gone(kind: str, delete: Any, *args: str) -> None:
        try:
            delete(*args)
        except ApiException as exc:
            if exc.status != 404:
                raise
        removed.append(f"{kind} {'/'.join(reversed(args))}")

    for item in rbac.list_cluster_role_binding(label_selector=selector).items:
        gone("ClusterRoleBinding", rbac.delete_cluster_role_binding, item.metadata.name)
    for item in rbac.list_namespaced_role_binding("kube-system", label_selector=selector).items:
        gone("RoleBinding", rbac.delete_namespaced_role_binding, item.metadata.name,
             "kube-system")  # fmt: skip
    for item in core.list_namespace(label_selector=selector).items:
        if names and item.metadata.name == FACILITATOR_NAMESPACE:
            continue
        gone("Namespace", core.delete_namespace, item.metadata.name)
    if names:
        for name in names:
            gone("ServiceAccount", core.delete_namespaced_service_account,
                 service_account(name), FACILITATOR_NAMESPACE)  # fmt: skip
        return removed
    gone("ClusterRole", rbac.delete_cluster_role, CLUSTER_ROLE)
    gone("Role", rbac.delete_namespaced_role, LEASE_ROLE, "kube-system")
    gone("ValidatingAdmissionPolicyBinding",
         admission.delete_validating_admission_policy_binding, POD_POLICY)  # fmt: skip
    gone("ValidatingAdmissionPolicy", admission.delete_validating_admission_policy, POD_POLICY)
    from ..foo_crd import restore_foo_status

    restore_foo_status(api)
    removed.append("chapter 06's status fields from the Foo CRD")
    removed.append(restore_chapter_10_crd(api))
    return removed


def install_chapter_10_crd(api: kubernetes.client.ApiClient) -> None:
    """Chapter 10's fields and CEL rule in the Foo CRD, for every attendee (see helpers.foo_crd).

    Its rule refuses a Foo name of more than 63 characters, in every namespace, for as long
    as the workshop lasts: chapter 09's property test then meets that refusal.
    """
    from ..foo_crd import extend_foo_crd

    extend_foo_crd(api, name_rule=True)


def restore_chapter_10_crd(api: kubernetes.client.ApiClient) -> str:
    """Take chapter 10's fields and rule out of the Foo CRD again; says what went."""
    from ..foo_crd import restore_foo_crd

    restore_foo_crd(api)
    return "chapter 10's fields and rule from the Foo CRD"


def _names(args: argparse.Namespace) -> list[str]:
    """The attendees named on the command line, each checked before anything is touched."""
    if args.attendees:
        names = [name.strip() for name in args.attendees.split(",") if name.strip()]
    elif getattr(args, "count", None):  # `down` has no --count
        names = [f"{args.prefix}-{n:02d}" for n in range(1, args.count + 1)]
    else:
        names = []
    longest = max(map(len, chapter_namespaces()), default=0)
    return [check_attendee_name(name, longest) for name in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.cluster.workshop",
        description="Prepare (up) or clear (down) a shared cluster for a workshop's attendees.",
    )
    parser.add_argument("--kubeconfig", help="the facilitator's kubeconfig (default: as kubectl)")
    parser.add_argument("--context", help="the context to use (default: the current one)")
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("up", help="create attendees and write their kubeconfig files")
    clear = commands.add_parser("down", help="remove attendees (all, and the shared objects)")
    for command in (make, clear):
        command.add_argument("--attendees", help="comma-separated names, e.g. alice,bob")
    make.add_argument("--count", type=int, help="N attendees named PREFIX-01 .. PREFIX-N")
    make.add_argument("--prefix", default="attendee", help="for --count (default: attendee)")
    out = CourseHome.from_environment().root / "workshop"  # outside the repository: tokens
    make.add_argument("--out", type=Path, default=out,
                      help=f"folder for the kubeconfig files (default: {out})")  # fmt: skip
    make.add_argument("--token-hours", type=int, default=DEFAULT_TOKEN_HOURS,
                      help=f"token lifetime (default: {DEFAULT_TOKEN_HOURS})")  # fmt: skip
    make.add_argument("--server", help="API server URL attendees use, if not the facilitator's")
    make.add_argument(
        "--allow-loopback", action="store_true",
        help="write a loopback API server (127.0.0.1, ::1, localhost) into the files anyway: the "
        "attendees then work on this machine, where anyone with a shell can reach the local "
        "control plane's etcd and take the cluster (for a rehearsal or a test, not a room)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    try:
        names = _names(args)  # first: a bad name is refused before any request or file
        api = connect(args.kubeconfig, args.context)
        if args.command == "up":
            if not names:
                raise CourseError("No attendees named.", "add --attendees a,b,c or --count N.")
            for path in up(api, attendees_for(names), args.out, token_hours=args.token_hours,
                           server=args.server, allow_loopback=args.allow_loopback):  # fmt: skip
                print(f"{path}  (for {path.stem}: export KUBECONFIG={path.resolve()})")
            print(f"{len(names)} attendee(s) ready; hand each their kubeconfig file.")
        else:
            removed = down(api, names or None)
            print(f"removed {len(removed)} object(s); namespaces finish deleting by themselves.")
    except CourseError as exc:
        print(f"error: {exc.problem}\nnext step: {exc.next_step}", file=sys.stderr)
        return 2
    except ApiException as exc:
        from ..apierrors import explain

        print(f"error: the API server refused: {explain(exc)}", file=sys.stderr)
        print(
            "next step: run this with a cluster-admin kubeconfig (--kubeconfig).", file=sys.stderr
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
