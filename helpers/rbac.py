"""Act as a service account with exactly the permissions you give it.

Chapter 08 shows what least privilege looks like for a controller, and what a
403 on a watch does to an informer. :func:`service_account_client` creates a
ServiceAccount, a Role with the given rules and a RoleBinding, asks the API
server for a short-lived token (the TokenRequest API), and returns an API
client that authenticates with that token instead of your admin identity.
"""

from __future__ import annotations

import copy
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException


def service_account_client(
    api: kubernetes.client.ApiClient,
    namespace: str,
    name: str,
    rules: list[dict[str, Any]],
    *,
    token_seconds: int = 3600,
) -> kubernetes.client.ApiClient:
    """An ApiClient acting as ServiceAccount ``namespace/name``, allowed only ``rules``."""
    core = kubernetes.client.CoreV1Api(api)
    rbac = kubernetes.client.RbacAuthorizationV1Api(api)
    _create_or_keep(core.create_namespaced_service_account, namespace,
                    {"metadata": {"name": name}})  # fmt: skip
    _create_or_keep(rbac.create_namespaced_role, namespace,
                    {"metadata": {"name": name}, "rules": rules})  # fmt: skip
    _create_or_keep(
        rbac.create_namespaced_role_binding,
        namespace,
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    )
    token = core.create_namespaced_service_account_token(
        name, namespace, {"spec": {"expirationSeconds": token_seconds}}
    ).status.token

    configuration = copy.copy(api.configuration)
    # Same server and CA; the identity is the token, not our client certificate.
    configuration.cert_file = None
    configuration.key_file = None
    configuration.api_key = {"BearerToken": token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    configuration.refresh_api_key_hook = None
    return kubernetes.client.ApiClient(configuration)


def _create_or_keep(create: Any, namespace: str, body: dict[str, Any]) -> None:
    try:
        create(namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
