"""The manifests: valid for the API server, and least privilege in both directions.

* Every document in manifests/ passes a server-side dry run (validation and
  admission, nothing stored), moved into the test's namespace.
* The ClusterRole and the leader election Role grant exactly the permissions
  helpers/startup_checks.py checks at start-up.
* The controller, run as a ServiceAccount bound to exactly those roles, works
  end to end (a real process, and in-process with every request recorded), and
  the requests it makes use every granted permission and need no other: a rule
  the controller does not use fails the test, and so does a request no rule
  allows.
"""

from __future__ import annotations

import re
import signal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from helpers import rbac, startup_checks, workshop_mode
from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.program import EXIT_OK, ControllerProcess, parse_args
from helpers.request_log import Request, RequestLog
from helpers.startup_checks import CONTROLLER_PERMISSIONS, Permission, lease_permissions
from helpers.waiting import wait_for
from tests.program_harness import ControllerRun, program_args

MANIFEST_FILES = ("namespace.yaml", "foo-crd.yaml", "rbac.yaml", "deployment.yaml")
LEASE_NAME = "foo-controller"
OPEN_TO_EVERYONE = {
    # Granted to every authenticated user by the default ClusterRoles system:basic-user
    # and system:discovery; the startup checks use them, no Role of ours needs to.
    ("create", "selfsubjectaccessreviews.authorization.k8s.io"),
    ("create", "selfsubjectreviews.authentication.k8s.io"),
    ("get", "nonresource /apis/samplecontroller.k8s.io/v1alpha1"),
}


def documents(kind: str, filename: str = "rbac.yaml") -> list[dict[str, Any]]:
    text = (rbac.MANIFESTS / filename).read_text()
    return [d for d in yaml.safe_load_all(text) if d and d["kind"] == kind]


def permissions_of(rules: list[dict[str, Any]]) -> set[Permission]:
    """Each (verb, resource[/subresource], group[, name]) a list of RBAC rules allows."""
    granted = set()
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                name, _, sub = resource.partition("/")
                for verb in rule["verbs"]:
                    for object_name in rule.get("resourceNames") or [""]:
                        granted.add(Permission(verb, name, group, sub, object_name))
    return granted


# --- the manifests, read ---------------------------------------------------------------------


def test_cluster_role_grants_exactly_what_the_startup_checks_check() -> None:
    (cluster_role,) = documents("ClusterRole")
    assert permissions_of(cluster_role["rules"]) == set(CONTROLLER_PERMISSIONS)


def test_lease_role_grants_exactly_what_leader_election_needs() -> None:
    (role,) = documents("Role")
    assert permissions_of(role["rules"]) == set(lease_permissions(LEASE_NAME))
    (deployment,) = documents("Deployment", "deployment.yaml")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--leader-elect-lease-name={LEASE_NAME}" in args and "--leader-elect" in args


def test_bindings_name_the_service_account() -> None:
    (account,) = documents("ServiceAccount")
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        (binding,) = documents(kind)
        subject = binding["subjects"][0]
        assert (subject["name"], subject["namespace"]) == (
            account["metadata"]["name"],
            account["metadata"]["namespace"],
        )
    (deployment,) = documents("Deployment", "deployment.yaml")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "foo-controller"


def test_kustomization_lists_every_manifest_but_the_example() -> None:
    (kustomization,) = documents("Kustomization", "kustomization.yaml")
    on_disk = {p.name for p in rbac.MANIFESTS.glob("*.yaml")}
    assert set(kustomization["resources"]) == on_disk - {"kustomization.yaml", "example-foo.yaml"}
    assert tuple(kustomization["resources"]) == MANIFEST_FILES


def test_deployment_is_production_shaped() -> None:
    (deployment,) = documents("Deployment", "deployment.yaml")
    spec = deployment["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    assert spec["replicas"] == 2
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # SIGTERM leaves room for the shutdown bound (20 s) plus releasing the Lease.
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] > 20


def test_containerfile_installs_the_console_script_as_non_root() -> None:
    """Docker is not available here, so the Containerfile is checked by reading it."""
    text = (rbac.MANIFESTS.parent / "Containerfile").read_text()
    pyproject = (rbac.MANIFESTS.parent / "pyproject.toml").read_text()
    assert 'foo-controller = "helpers.program:main"' in pyproject
    assert re.search(r'^ENTRYPOINT \["foo-controller"\]$', text, re.MULTILINE)
    assert re.search(r"^USER [1-9]\d*:[1-9]\d*$", text, re.MULTILINE)  # numeric, not root
    # The run-time packages come from requirements.txt's pins, not from a second list.
    pins = re.search(r"grep -E '\^\(([^)]*)\)==' requirements.txt", text)
    assert pins, "the Containerfile should take its pins from requirements.txt"
    requirements = (rbac.MANIFESTS.parent / "requirements.txt").read_text()
    for package in pins.group(1).split("|"):
        assert re.search(rf"^{re.escape(package)}==", requirements, re.MULTILINE), package


def test_controller_roles_are_the_manifests_for_a_chapter(monkeypatch: pytest.MonkeyPatch) -> None:
    """What 08b installs: rbac.yaml moved into the chapter's namespace, the cluster-wide roles
    suffixed; on a workshop's shared cluster (an attendee), the same rules as namespaced roles."""
    monkeypatch.delenv("CFS_ATTENDEE", raising=False)
    monkeypatch.setenv("KUBECONFIG", "/nonexistent")  # no context names an attendee's namespace
    plain = rbac.controller_roles("ch08b-x")
    kinds = {d["kind"]: d for d in plain}
    assert kinds["ClusterRole"]["metadata"]["name"] == "foo-controller-ch08b-x"
    assert kinds["ClusterRoleBinding"]["roleRef"]["name"] == "foo-controller-ch08b-x"
    assert rbac.creatable(plain) == plain
    monkeypatch.setenv("CFS_ATTENDEE", "ann")
    # No cluster here to confirm the claim (tests/test_workshop.py asks a real one): taken as is.
    monkeypatch.setattr(workshop_mode, "connect", lambda kubeconfig: None)
    monkeypatch.setattr(workshop_mode, "verify", lambda api, who, namespace: None)
    shared = rbac.controller_roles("ann-ch08b-x")
    assert {d["kind"] for d in shared} == {"ServiceAccount", "Role", "RoleBinding"}
    rules = [d["rules"] for d in shared if d["kind"] == "Role"]
    assert kinds["ClusterRole"]["rules"] in rules  # the same rules, as a Role
    assert all("namespace" in d["metadata"] for d in rbac.creatable(plain))


def test_without_verb_takes_one_verb_from_a_copy() -> None:
    documents_before = rbac.load_manifests("rbac.yaml", namespace="ch08b-x", suffix="-ch08b-x")
    changed = rbac.without_verb(documents_before, "deployments", "watch")
    (role,) = [d for d in changed if d["kind"] == "ClusterRole"]
    (deployments,) = [r for r in role["rules"] if r["resources"] == ["deployments"]]
    assert deployments["verbs"] == ["list", "create", "update"]
    (before,) = [d for d in documents_before if d["kind"] == "ClusterRole"]
    assert "watch" in next(r for r in before["rules"] if r["resources"] == ["deployments"])["verbs"]
    assert permissions_of(role["rules"]) == set(CONTROLLER_PERMISSIONS) - {
        Permission("watch", "deployments", "apps")
    }


# --- the manifests, on the cluster -------------------------------------------------------------


@pytest.mark.cluster
def test_manifests_pass_server_side_dry_run(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    moved = [
        document
        for filename in MANIFEST_FILES
        for document in rbac.load_manifests(filename, namespace=namespace, suffix=f"-{namespace}")
    ]
    applied = rbac.apply_manifests(api, moved, dry_run=True)
    assert applied == [
        f"Namespace {namespace}",
        "CustomResourceDefinition foos.samplecontroller.k8s.io",
        "ServiceAccount foo-controller",
        f"ClusterRole foo-controller-{namespace}",
        f"ClusterRoleBinding foo-controller-{namespace}",
        "Role foo-controller-leader-election",
        "RoleBinding foo-controller-leader-election",
        "Deployment foo-controller",
    ]
    # A dry run stores nothing.
    rbac_api = kubernetes.client.RbacAuthorizationV1Api(api)
    assert rbac_api.list_cluster_role(field_selector=f"metadata.name={applied[3][12:]}").items == []


READ_CONFIGMAPS = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]


@pytest.mark.cluster
@pytest.mark.parametrize("rules", [READ_CONFIGMAPS, []], ids=["configmaps", "nothing"])
def test_a_service_account_gets_the_rules_asked_whatever_was_there(
    api: kubernetes.client.ApiClient, namespace: str, rules: list[dict[str, Any]]
) -> None:
    """A Role and RoleBinding of that name left by an earlier run, with other rules and another
    subject, are brought to what is asked (server-side apply), not kept as they were."""
    rbac_api = kubernetes.client.RbacAuthorizationV1Api(api)
    stale = [{"apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["*"]}]
    rbac_api.create_namespaced_role(namespace, {"metadata": {"name": "reader"}, "rules": stale})
    someone = {"kind": "ServiceAccount", "name": "someone", "namespace": namespace}
    rbac_api.create_namespaced_role_binding(namespace, {
        "metadata": {"name": "reader"}, "subjects": [someone],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
    })  # fmt: skip

    rbac.service_account_client(api, namespace, "reader", rules)

    role = rbac_api.read_namespaced_role("reader", namespace)
    assert api.sanitize_for_serialization(role.rules or []) == rules
    binding = rbac_api.read_namespaced_role_binding("reader", namespace)
    reader = {"kind": "ServiceAccount", "name": "reader", "namespace": namespace}
    assert api.sanitize_for_serialization(binding.subjects) == [reader]
    managers = {entry.manager for entry in role.metadata.managed_fields}
    assert rbac.FIELD_MANAGER in managers, managers


@pytest.fixture
def controller_identity(
    api: kubernetes.client.ApiClient, namespace: str
) -> Iterator[kubernetes.client.ApiClient]:
    """The manifests' ServiceAccount and roles, in the test's namespace; a client as it."""
    suffix = f"-{uuid.uuid4().hex[:6]}"
    installed = rbac.load_manifests("rbac.yaml", namespace=namespace, suffix=suffix)
    rbac.apply_manifests(api, installed)
    try:
        token = rbac.service_account_token(api, namespace, "foo-controller")
        yield rbac.token_client(api, token)
    finally:
        rbac.delete_manifests(api, [d for d in installed if "Cluster" in d["kind"]])


def drive_the_controller(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """Make the controller use each of its permissions: create, scale, status, repeat Events."""
    custom = kubernetes.client.CustomObjectsApi(api)
    apps = kubernetes.client.AppsV1Api(api)
    custom.create_namespaced_custom_object(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body("least", "least", 1)
    )
    wait_for(
        custom.list_namespaced_custom_object,
        lambda foos: (foos.get("least", {}).get("status") or {}).get("availableReplicas") == 1,
        what="Foo least to report 1 available replica",
        timeout=60,
        group=FOO_GROUP, version=FOO_VERSION, namespace=namespace, plural=FOO_PLURAL,
    )  # fmt: skip
    custom.patch_namespaced_custom_object(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, "least", {"spec": {"replicas": 2}}
    )
    wait_for(
        apps.list_namespaced_deployment,
        lambda deployments: deployments["least"]["spec"]["replicas"] == 2,
        what="the controller to scale Deployment least to 2",
        timeout=30,
        namespace=namespace,
    )
    wait_for(  # the same Event again: counted by a PATCH
        kubernetes.client.CoreV1Api(api).list_namespaced_event,
        lambda events: any(e.get("count", 0) >= 2 for e in events.values()),
        what="a repeated Event",
        timeout=30,
        namespace=namespace,
        field_selector="involvedObject.name=least,reason=Synced",
    )


@pytest.mark.cluster
def test_controller_process_works_with_only_these_permissions(
    api: kubernetes.client.ApiClient,
    namespace: str,
    controller_identity: kubernetes.client.ApiClient,
    tmp_path: Path,
) -> None:
    token = controller_identity.configuration.api_key["BearerToken"]
    config = rbac.token_kubeconfig(api, token, tmp_path / "foo-controller")
    run = ControllerRun(["--kubeconfig", str(config), *program_args(namespace)], name="least")
    try:
        run.wait_for_line("started leading", 30)
        drive_the_controller(api, namespace)
        run.signal(signal.SIGTERM)
        assert run.wait(30) == EXIT_OK
        assert run.has_line("released lease")
        assert not run.has_line(r"\(403\)|[Ff]orbidden"), run.log()
    finally:
        run.stop()


def as_permission(request: Request) -> tuple[str, str] | Permission:
    """The RBAC verb and resource a request needs (the API server's RequestInfo, in short).

    Discovery (``/apis/GROUP/VERSION``) and the self-reviews come back as
    ``(verb, what)`` tuples: they are open to every authenticated user.
    """
    parts = request.path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return ("get", f"nonresource {request.path}")
    if not rest:
        return ("get", f"nonresource {request.path}")
    if rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    resource, name, sub = [*rest, "", ""][:3]
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        request.method
    )
    if verb is None:
        watching = dict(request.query).get("watch") == "true"
        verb = "get" if name else ("watch" if watching else "list")
    if resource in ("selfsubjectaccessreviews", "selfsubjectreviews"):
        return (verb, f"{resource}.{group}")
    # Our Lease rules name their object; no other rule does.
    named = name if resource == "leases" and verb in ("get", "update") else ""
    return Permission(verb, resource, group, sub, named)


@pytest.mark.cluster
def test_requests_use_every_permission_and_nothing_else(
    api: kubernetes.client.ApiClient,
    namespace: str,
    controller_identity: kubernetes.client.ApiClient,
) -> None:
    """Record every request the controller makes (start-up checks, informers, syncs,
    Events, leader election and its release) and compare with the roles both ways."""
    options = parse_args(program_args(namespace, identity="recorded"))
    with RequestLog(controller_identity) as recorded:
        startup_checks.check_foo_api(controller_identity)
        lease = (namespace, options.leader_elect_lease_name)
        startup_checks.check_permissions(controller_identity, namespace, lease=lease)
        process = ControllerProcess(controller_identity, options)
        codes: list[int] = []
        thread = threading.Thread(target=lambda: codes.append(process.run()), name="recorded")
        thread.start()
        try:
            drive_the_controller(api, namespace)
        finally:
            process.shut_down("test over")
            thread.join(30)
    assert codes == [EXIT_OK]

    forbidden = [str(r) for r in recorded.requests if r.status in (401, 403)]
    assert forbidden == []
    # Other answers >= 400 that are not about permissions: a Lease GET before it exists
    # answers 404 (that is how the elector learns to create it), and a write based on a cache
    # a moment behind answers 409 Conflict (the sync is retried with a fresh copy).
    failed = [r for r in recorded.requests if r.status is not None and r.status >= 400]
    expected = [
        r for r in failed
        if (r.method == "GET" and "/leases/" in r.path and r.status == 404)
        or (r.method in ("PUT", "PATCH") and r.status == 409)
    ]  # fmt: skip
    assert failed == expected, [str(r) for r in failed]
    used = {as_permission(r) for r in recorded.requests}
    self_checks = {p for p in used if isinstance(p, tuple)}
    assert self_checks <= OPEN_TO_EVERYONE, self_checks - OPEN_TO_EVERYONE
    granted = set(CONTROLLER_PERMISSIONS) | set(lease_permissions(LEASE_NAME))
    needed = used - self_checks
    assert needed - granted == set(), f"requests no rule allows: {needed - granted}"
    assert granted - needed == set(), f"rules the controller never used: {granted - needed}"
