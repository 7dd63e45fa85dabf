"""Act as a service account with exactly the permissions you give it.

Chapter 08b shows what least privilege looks like for a controller, and what a
403 on a watch does to an informer. :func:`service_account_client` applies a
ServiceAccount, a Role with the given rules and a RoleBinding (server-side apply:
made if missing, and brought to these rules if an earlier run left them with
others), asks the API server for a short-lived token (the TokenRequest API), and
returns an API client that authenticates with that token instead of your admin
identity.
:func:`token_kubeconfig` writes the same identity into a kubeconfig, for a
process of its own.

:func:`load_manifests` and :func:`apply_manifests` install the controller's
manifests (``manifests/*.yaml``) somewhere other than ``foo-system``, for a
chapter or a test, with server-side apply (optionally as a server-side dry run).
:func:`controller_roles` is what chapter 08b installs: the roles of
``manifests/rbac.yaml`` for a chapter's namespace, as Roles on a workshop's shared
cluster; :func:`without_verb` takes one verb away, to see what its absence does.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes
import yaml
from kubernetes.client.exceptions import ApiException

from .private_files import write_private

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"
CONTROLLER_NAMESPACE = "foo-system"
"""The namespace the manifests install the controller into."""
FIELD_MANAGER = "controllers-from-scratch"


def service_account_client(
    api: kubernetes.client.ApiClient,
    namespace: str,
    name: str,
    rules: list[dict[str, Any]],
    *,
    token_seconds: int = 3600,
) -> kubernetes.client.ApiClient:
    """An ApiClient acting as ServiceAccount ``namespace/name``, allowed only ``rules``.

    A Role or RoleBinding of that name that exists already (an earlier run's, with
    other rules) gets ``rules`` and this subject: each is applied server-side, with
    :data:`FIELD_MANAGER` taking over the fields another manager wrote.
    """
    core = kubernetes.client.CoreV1Api(api)
    rbac = kubernetes.client.RbacAuthorizationV1Api(api)
    group = "rbac.authorization.k8s.io"
    _apply(core.patch_namespaced_service_account, namespace,
           {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})  # fmt: skip
    _apply(rbac.patch_namespaced_role, namespace,
           {"apiVersion": f"{group}/v1", "kind": "Role", "metadata": {"name": name},
            "rules": rules})  # fmt: skip
    _apply(
        rbac.patch_namespaced_role_binding,
        namespace,
        {
            "apiVersion": f"{group}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": group, "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    )
    return token_client(api, service_account_token(api, namespace, name, token_seconds))


def service_account_token(
    api: kubernetes.client.ApiClient, namespace: str, name: str, token_seconds: int = 3600
) -> str:
    """A short-lived token for ServiceAccount ``namespace/name`` (the TokenRequest API)."""
    core = kubernetes.client.CoreV1Api(api)
    return core.create_namespaced_service_account_token(
        name, namespace, {"spec": {"expirationSeconds": token_seconds}}
    ).status.token


def token_client(api: kubernetes.client.ApiClient, token: str) -> kubernetes.client.ApiClient:
    """A client for ``api``'s server that authenticates with ``token`` only."""
    configuration = copy.copy(api.configuration)
    # Same server and CA; the identity is the token, not our client certificate.
    configuration.cert_file = None
    configuration.key_file = None
    configuration.api_key = {"BearerToken": token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    configuration.refresh_api_key_hook = None
    return kubernetes.client.ApiClient(configuration)


def _apply(patch: Any, namespace: str, body: dict[str, Any]) -> None:
    """Server-side apply ``body`` through a typed client's ``patch`` (an apply patch, forced)."""
    patch(
        body["metadata"]["name"], namespace, body, field_manager=FIELD_MANAGER, force=True,
        _content_type="application/apply-patch+yaml",
    )  # fmt: skip


def token_kubeconfig(api: kubernetes.client.ApiClient, token: str, path: Path) -> Path:
    """Write a kubeconfig for ``api``'s server and CA that authenticates with ``token``."""
    configuration = api.configuration
    cluster: dict[str, Any] = {"server": configuration.host}
    if configuration.ssl_ca_cert:
        cluster["certificate-authority"] = str(Path(configuration.ssl_ca_cert).resolve())
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "course", "cluster": cluster}],
        "users": [{"name": "token", "user": {"token": token}}],
        "contexts": [{"name": "token", "context": {"cluster": "course", "user": "token"}}],
        "current-context": "token",
    }
    write_private(path, yaml.safe_dump(document))  # the token is a credential
    return path


def load_manifests(
    filename: str, *, namespace: str = CONTROLLER_NAMESPACE, suffix: str = ""
) -> list[dict[str, Any]]:
    """The documents of ``manifests/<filename>``, moved from ``foo-system`` to ``namespace``.

    The Namespace itself becomes ``namespace``; ClusterRoles and
    ClusterRoleBindings (and references to them) get ``suffix`` appended to their
    names, so that a chapter or a test never touches a real installation.
    """
    documents = [d for d in yaml.safe_load_all((MANIFESTS / filename).read_text()) if d]
    for document in documents:
        metadata = document.setdefault("metadata", {})
        if document["kind"] == "Namespace" and metadata["name"] == CONTROLLER_NAMESPACE:
            metadata["name"] = namespace
        elif document["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            metadata["name"] = metadata["name"] + suffix
        elif metadata.get("namespace") == CONTROLLER_NAMESPACE:
            metadata["namespace"] = namespace
        for subject in document.get("subjects") or []:
            if subject.get("namespace") == CONTROLLER_NAMESPACE:
                subject["namespace"] = namespace
        role_ref = document.get("roleRef") or {}
        if role_ref.get("kind") == "ClusterRole":
            role_ref["name"] += suffix
    return documents


def controller_roles(namespace: str) -> list[dict[str, Any]]:
    """``manifests/rbac.yaml`` for a chapter working in ``namespace``.

    The ClusterRole and its binding get the suffix ``-<namespace>``, so a chapter
    never touches a real installation. On a workshop's shared cluster, where an
    attendee may create nothing cluster-wide, they become a Role and a RoleBinding
    in ``namespace``: the controller runs with ``--namespace``, and a Role grants
    the same rules there.
    """
    documents = load_manifests("rbac.yaml", namespace=namespace, suffix=f"-{namespace}")
    # Imported here, not at the top: this module stays free of the cluster orchestration.
    from .workshop_mode import attendee

    if attendee() is None:
        return documents
    from .cluster.workshop import namespaced_roles

    return namespaced_roles(documents, namespace)


def creatable(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``documents`` this identity may create: all of them, or on a workshop's shared
    cluster only the namespaced ones (an attendee may create nothing cluster-wide, not even
    in a server-side dry run)."""
    from .workshop_mode import attendee

    if attendee() is None:
        return list(documents)
    return [d for d in documents if "namespace" in d.get("metadata", {})]


def without_verb(documents: list[dict[str, Any]], resource: str, verb: str) -> list[dict[str, Any]]:
    """A copy of ``documents`` in which no rule on ``resource`` grants ``verb`` any more
    (a rule that also names other resources loses the verb for them too)."""
    changed = copy.deepcopy(documents)
    for document in changed:
        for rule in document.get("rules") or []:
            if resource in rule.get("resources", []):
                rule["verbs"] = [v for v in rule["verbs"] if v != verb]
    return changed


def apply_manifests(
    api: kubernetes.client.ApiClient, documents: list[dict[str, Any]], *, dry_run: bool = False
) -> list[str]:
    """Server-side apply each document (``dry_run``: validated and admitted, not stored).

    Returns ``"Kind name"`` for each, in order. Errors are raised as the API
    server's ``ApiException``.
    """
    dynamic = kubernetes.dynamic.DynamicClient(api)
    applied = []
    for document in documents:
        resource = dynamic.resources.get(api_version=document["apiVersion"], kind=document["kind"])
        metadata = document["metadata"]
        dynamic.server_side_apply(
            resource,
            body=document,
            name=metadata["name"],
            namespace=metadata.get("namespace"),
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
            dry_run="All" if dry_run else None,
        )
        applied.append(f"{document['kind']} {metadata['name']}")
    return applied


def delete_manifests(api: kubernetes.client.ApiClient, documents: list[dict[str, Any]]) -> None:
    """Delete what :func:`apply_manifests` created (gone already is fine)."""
    dynamic = kubernetes.dynamic.DynamicClient(api)
    for document in reversed(documents):
        resource = dynamic.resources.get(api_version=document["apiVersion"], kind=document["kind"])
        metadata = document["metadata"]
        try:
            dynamic.delete(resource, name=metadata["name"], namespace=metadata.get("namespace"))
        except ApiException as exc:
            if exc.status != 404:
                raise
