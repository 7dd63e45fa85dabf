"""Before the controller starts: is the Foo API served, and may we do our job?

Counterpart: nothing in sample-controller, which starts regardless and then
logs the same error forever (a reflector retrying a forbidden watch, a sync
failing on every key). A program run by a person should instead say once, in
one sentence, what is missing, and exit non-zero.

* :func:`check_foo_api` asks API discovery whether
  ``samplecontroller.k8s.io/v1alpha1`` serves ``foos`` (it does once the CRD
  is installed).
* :func:`check_permissions` asks the API server, with one
  SelfSubjectAccessReview per permission, whether *this* identity may do each
  thing in :data:`CONTROLLER_PERMISSIONS` (and, with leader election,
  :func:`lease_permissions`). Discovery and these reviews are open to every
  authenticated user (the default ClusterRoles ``system:discovery`` and
  ``system:basic-user``), so they need no rule in our Role.

The permission lists are the controller's real needs, request by request; the
manifests in ``manifests/rbac.yaml`` grant exactly these, and
tests/test_rbac_manifests.py checks both against the requests the controller
really makes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers.apierrors import explain
from helpers.errors import CourseError

FOO_GROUP_VERSION = "samplecontroller.k8s.io/v1alpha1"


@dataclass(frozen=True)
class Permission:
    """One verb on one resource (and subresource, and object name, if the rule names one)."""

    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    name: str = ""

    def __str__(self) -> str:
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        qualified = f"{resource}.{self.group}" if self.group else resource
        return f"{self.verb} {qualified}" + (f" named {self.name}" if self.name else "")


CONTROLLER_PERMISSIONS: tuple[Permission, ...] = (
    # The Foo informer lists and watches; syncs read the cache, never GET one Foo.
    Permission("list", "foos", "samplecontroller.k8s.io"),
    Permission("watch", "foos", "samplecontroller.k8s.io"),
    # update_foo_status: PUT .../foos/NAME/status.
    Permission("update", "foos", "samplecontroller.k8s.io", subresource="status"),
    # The Deployment informer, and the two writes of sync_handler.
    Permission("list", "deployments", "apps"),
    Permission("watch", "deployments", "apps"),
    Permission("create", "deployments", "apps"),
    Permission("update", "deployments", "apps"),
    # EventRecorder: a new Event is created, a repeat patched (its count).
    Permission("create", "events"),
    Permission("patch", "events"),
)
"""What the Foo controller does, in the namespaces it watches."""


def lease_permissions(name: str) -> tuple[Permission, ...]:
    """What leader election does with the Lease ``name`` (in the lease's namespace).

    Creating cannot be limited to a name (the object does not exist yet), so
    ``create`` is its own rule; reading and renewing are limited to our Lease.
    """
    return (
        Permission("get", "leases", "coordination.k8s.io", name=name),
        Permission("update", "leases", "coordination.k8s.io", name=name),
        Permission("create", "leases", "coordination.k8s.io"),
    )


def check_foo_api(api: kubernetes.client.ApiClient) -> None:
    """Raise a CourseError unless the API server serves Foos (the CRD is installed)."""
    try:
        resources = _get_json(api, f"/apis/{FOO_GROUP_VERSION}")
    except ApiException as err:
        if err.status != 404:
            raise CourseError(
                f"Asking the API server whether it serves {FOO_GROUP_VERSION} failed: "
                f"{explain(err)}",
                "check the cluster with `kubectl get --raw /readyz?verbose`.",
            ) from err
        resources = {}
    if not any(r.get("name") == "foos" for r in resources.get("resources") or []):
        raise CourseError(
            f"The API server does not serve foos.{FOO_GROUP_VERSION}: the Foo "
            "CustomResourceDefinition is not installed.",
            "install it with `kubectl apply -f manifests/foo-crd.yaml`.",
        )


def missing_permissions(
    api: kubernetes.client.ApiClient, permissions: tuple[Permission, ...], namespace: str
) -> list[Permission]:
    """The permissions this identity lacks in ``namespace`` ("" means all namespaces)."""
    authz = kubernetes.client.AuthorizationV1Api(api)
    missing = []
    for permission in permissions:
        review = {
            "spec": {
                "resourceAttributes": {
                    "namespace": namespace,
                    "verb": permission.verb,
                    "group": permission.group,
                    "resource": permission.resource,
                    "subresource": permission.subresource,
                    "name": permission.name,
                }
            }
        }
        answer = authz.create_self_subject_access_review(review, _request_timeout=10)
        if not answer.status.allowed:
            missing.append(permission)
    return missing


def who_am_i(api: kubernetes.client.ApiClient) -> str:
    """The user name the API server sees for our credentials (a SelfSubjectReview)."""
    try:
        answer = kubernetes.client.AuthenticationV1Api(api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
            _request_timeout=10,
        )
    except ApiException:
        return "this identity"
    return f"user {answer.status.user_info.username}"


def check_permissions(
    api: kubernetes.client.ApiClient,
    namespace: str,
    *,
    lease: tuple[str, str] | None = None,
) -> None:
    """Raise one CourseError naming every permission we lack (none: return).

    ``namespace`` is where the controller works ("" for all namespaces);
    ``lease`` is ``(namespace, name)`` of the leader election Lease, if any.
    """
    where = f"namespace {namespace}" if namespace else "all namespaces"
    lacking = [
        f"{p} in {where}" for p in missing_permissions(api, CONTROLLER_PERMISSIONS, namespace)
    ]
    if lease is not None:
        lease_namespace, lease_name = lease
        lacking += [
            f"{p} in namespace {lease_namespace}"
            for p in missing_permissions(api, lease_permissions(lease_name), lease_namespace)
        ]
    if lacking:
        raise CourseError(
            f"The controller runs as {who_am_i(api)}, which may not: {'; '.join(lacking)}.",
            "grant what manifests/rbac.yaml grants (kubectl apply -f manifests/rbac.yaml), "
            "or run with an identity that has it.",
        )


def _get_json(api: kubernetes.client.ApiClient, path: str) -> dict:
    response = api.call_api(
        path,
        "GET",
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        _request_timeout=10,
    )
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()
