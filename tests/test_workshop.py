"""A shared workshop cluster: attendees kept apart, running chapters side by side, nothing else.

The facilitator's ``python -m helpers.cluster.workshop up`` is run on the test
cluster for two attendees with fresh names; every check then uses the
attendees' own kubeconfig files (their ServiceAccount tokens), never the
admin's credentials, so a 403 here is the API server's RBAC answering.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kubernetes
import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from helpers import kube, namespaces, workshop_mode
from helpers.cluster import workshop
from helpers.foo_crd import STATUS_FIELDS, foo_crd_additions, restore_foo_crd, restore_foo_status

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ["notebooks/04_workqueue.ipynb", "notebooks/05_controller.ipynb"]


def test_attendee_names_must_prefix_every_chapter_namespace() -> None:
    chapters = workshop.chapter_namespaces()
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
    assert chapters[0] == "ch00-api-tour" and len(chapters) == len(notebooks)
    assert len(set(chapters)) == len(chapters), "two chapters share a namespace"
    (alice,) = workshop.attendees_for(["alice"], chapters)
    assert alice.namespaces[chapters.index("ch04-workqueue")] == "alice-ch04-workqueue"
    for bad in ("Alice", "a_b", "-a", "x" * 60):
        with pytest.raises(workshop.CourseError, match="cannot be an attendee's name"):
            workshop.attendees_for([bad], chapters)
    with pytest.raises(workshop.CourseError, match="repeat"):
        workshop.attendees_for(["a", "a"], chapters)


def test_the_command_line_names_attendees_for_up_and_down() -> None:
    import argparse

    up = argparse.Namespace(attendees=None, count=3, prefix="team")
    assert workshop._names(up) == ["team-01", "team-02", "team-03"]
    assert workshop._names(argparse.Namespace(attendees=" a, b ")) == ["a", "b"]
    assert workshop._names(argparse.Namespace(attendees=None)) == []  # down: everyone


def write_kubeconfig(
    path: Path, namespace: str | None, server: str = "https://127.0.0.1:1"
) -> Path:
    context = {"cluster": "c", "user": "u", **({"namespace": namespace} if namespace else {})}
    cluster = {"server": server, "insecure-skip-tls-verify": True}
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "contexts": [{"name": "x", "context": context}],
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))  # fmt: skip
    return path


def test_attendee_mode_is_claimed_by_the_context_namespace_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim is read from the files; acting on it needs the API server's word (below)."""

    def kubeconfig(namespace: str | None) -> Path:
        return write_kubeconfig(tmp_path / f"{namespace}.yaml", namespace)

    monkeypatch.delenv(workshop_mode.ATTENDEE_ENV, raising=False)
    assert workshop_mode.claimed(kubeconfig("bob-ch00-api-tour")) == ("bob", "bob-ch00-api-tour")
    assert workshop_mode.claimed(kubeconfig("team-7-ch04-workqueue"))[0] == "team-7"
    assert workshop_mode.claimed(kubeconfig("dev")) == (None, None)  # a learner's own namespace
    assert workshop_mode.claimed(kubeconfig(None)) == (None, None)
    monkeypatch.setenv(workshop_mode.ATTENDEE_ENV, "carol")
    assert workshop_mode.claimed(kubeconfig("dev")) == ("carol", None)
    assert workshop_mode.claimed(kubeconfig("bob-ch00-api-tour")) == ("carol", None)

    verified = []
    monkeypatch.setattr(workshop_mode, "connect", lambda kubeconfig: "client")
    monkeypatch.setattr(workshop_mode, "verify", lambda *args: verified.append(args))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig("bob-ch00-api-tour")))
    assert workshop_mode.chapter_namespace("ch04-workqueue") == "carol-ch04-workqueue"
    monkeypatch.delenv(workshop_mode.ATTENDEE_ENV)
    assert workshop_mode.chapter_namespace("ch04-workqueue") == "bob-ch04-workqueue"
    assert workshop_mode.chapter_namespace("ch05-controller") == "bob-ch05-controller"
    assert verified == [("client", "carol", None), ("client", "bob", "bob-ch00-api-tour")]


def test_without_a_claim_nothing_is_asked_of_the_api_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.decoys import Decoy

    monkeypatch.delenv(workshop_mode.ATTENDEE_ENV, raising=False)
    with Decoy() as decoy:
        config = write_kubeconfig(tmp_path / "mine", "dev", f"https://127.0.0.1:{decoy.port}")
        monkeypatch.setenv("KUBECONFIG", str(config))
        assert workshop_mode.attendee() is None
        assert workshop_mode.chapter_namespace("ch04-workqueue") == "ch04-workqueue"
    assert decoy.connections == 0


def test_a_loopback_server_is_refused_unless_the_facilitator_says_so() -> None:
    loopback = ("https://127.0.0.1:6443", "https://127.8.9.10", "https://[::1]:6443",
                "https://localhost:6443", "https://LOCALHOST", "https://api.localhost")  # fmt: skip
    for server in loopback:
        assert workshop.is_loopback(server), server
        with pytest.raises(workshop.CourseError, match="a loopback address") as refused:
            workshop.check_server(server)
        assert "--allow-loopback" in refused.value.next_step
        assert workshop.check_server(server, allow_loopback=True) == server
    for server in ("https://10.0.0.1:6443", "https://cluster.example.org", "https://[fd00::1]"):
        assert not workshop.is_loopback(server), server
        assert workshop.check_server(server) == server


def test_chapter_08s_cluster_roles_become_roles_in_the_namespace() -> None:
    from helpers import rbac

    documents = rbac.load_manifests("rbac.yaml", namespace="a-ch08", suffix="-a-ch08")
    changed = rbac.namespaced_roles(documents, "a-ch08")
    kinds = [d["kind"] for d in changed]
    assert "ClusterRole" not in kinds and "ClusterRoleBinding" not in kinds
    assert all(d["metadata"].get("namespace") == "a-ch08" for d in changed if "Role" in d["kind"])
    bindings = [d for d in changed if d["kind"] == "RoleBinding"]
    assert {b["roleRef"]["kind"] for b in bindings} == {"Role"}
    assert documents[0] is not changed[0]  # the caller's list is left as it was


@pytest.fixture(scope="module")
def attendees(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Two attendees on the test cluster; their kubeconfig files by name. Removed afterwards."""
    api = kube.connect()
    extensions = kubernetes.client.ApiextensionsV1Api(api)

    def extended() -> bool:
        crd = extensions.read_custom_resource_definition("foos.samplecontroller.k8s.io")
        status = crd.spec.versions[0].schema.open_apiv3_schema.properties["status"]
        return set(STATUS_FIELDS) <= set(status.properties or {})

    was_extended = extended()
    had_chapter_10 = "status.conditions" in foo_crd_additions(api)
    tag = uuid.uuid4().hex[:4]
    names = [f"ta-{tag}", f"tb-{tag}"]
    out = tmp_path_factory.mktemp("workshop") / "handouts"  # a new folder: the course makes it
    # The course's own cluster listens on loopback: fine for a test on this machine alone.
    paths = workshop.up(api, workshop.attendees_for(names), out, token_hours=1,
                        allow_loopback=True)  # fmt: skip
    try:
        yield dict(zip(names, paths, strict=True))
    finally:
        workshop.down(api, names)
        if not was_extended:
            restore_foo_status(api)  # as the cluster was: the chapters' outputs show the schema
        if not had_chapter_10:
            restore_foo_crd(api)  # chapter 10's rule would refuse chapter 09's long names


def client_of(path: Path) -> kubernetes.client.ApiClient:
    return kube.connect(path)


@pytest.mark.cluster
def test_an_attendee_cannot_read_or_write_another_attendees_namespaces(
    attendees: dict[str, Path],
) -> None:
    (a, a_config), (b, _) = attendees.items()
    core = kubernetes.client.CoreV1Api(client_of(a_config))
    rbac = kubernetes.client.RbacAuthorizationV1Api(core.api_client)
    mine, theirs = f"{a}-ch04-workqueue", f"{b}-ch04-workqueue"
    note = {"metadata": {"name": "note"}, "data": {"from": a}}
    core.create_namespaced_config_map(mine, note)  # the control: their own namespace works
    assert core.read_namespaced_config_map("note", mine).data == {"from": a}
    attempts = {
        "list": lambda: core.list_namespaced_config_map(theirs),
        "create": lambda: core.create_namespaced_config_map(theirs, note),
        "delete": lambda: core.delete_namespace(theirs),
        "delete my own namespace": lambda: core.delete_namespace(mine),
        "list everywhere": lambda: core.list_config_map_for_all_namespaces(),
        "create a namespace": lambda: core.create_namespace({"metadata": {"name": f"{a}-x"}}),
        "read a Secret in kube-system": lambda: core.list_namespaced_secret("kube-system"),
        "grant myself DELETE on my namespace": lambda: rbac.create_namespaced_role(mine, {
            "metadata": {"name": "escalated"},
            "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["delete"]}]}),
    }  # fmt: skip
    answers = {}
    for what, attempt in attempts.items():
        try:
            attempt()
            answers[what] = 200
        except ApiException as exc:
            answers[what] = exc.status
    assert answers == dict.fromkeys(attempts, 403)


def made_for(api: kubernetes.client.ApiClient, names: list[str]) -> set[tuple[str, ...]]:
    """Every object that carries one of these attendees' labels, namespace by namespace.

    Only what the workshop, or an attendee's chapter through it, could have made is looked
    at: other people's chapters run on the same cluster at the same time."""
    dynamic = kubernetes.dynamic.DynamicClient(api)
    selector = f"{workshop.ATTENDEE_LABEL} in ({','.join(names)})"
    found = set()
    for resource in dynamic.resources.search():
        if (
            isinstance(resource, kubernetes.dynamic.resource.ResourceList)
            or "/" in resource.name
            or not resource.preferred
            or "list" not in (resource.verbs or [])
        ):
            continue
        for item in resource.get(label_selector=selector).items:
            found.add((resource.group, resource.kind, item.metadata.namespace or "",
                       item.metadata.name))  # fmt: skip
    return found


def run_chapters(name: str, config: Path, sanitize: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(config)}
    env.pop(workshop_mode.ATTENDEE_ENV, None)  # the kubeconfig alone says who this is
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--nbval",
         "--nbval-sanitize-with", str(sanitize), "--nbval-cell-timeout=180", *CHAPTERS],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=1200,
    )  # fmt: skip


@pytest.mark.cluster
def test_pods_that_reach_the_node_are_refused_and_the_chapters_pods_admitted(
    attendees: dict[str, Path],
) -> None:
    """Server-side dry runs as the attendee: the API server's admission answers, nothing stored.

    kwok runs no container, so what a privileged Pod could do on a node is not shown here;
    that the API server refuses to store one is (Pod Security admission runs in it)."""
    from helpers.controller import new_deployment

    (a, a_config), _ = attendees.items()
    core = kubernetes.client.CoreV1Api(client_of(a_config))
    mine = f"{a}-ch07-deployment-to-pod"

    def pod(*, container: dict | None = None, **spec: object) -> dict:
        container = container or {"name": "c", "image": "nginx"}
        return {"metadata": {"name": "probe"}, "spec": {"containers": [container], **spec}}

    def answer(body: dict) -> tuple[int, str]:
        try:
            created = core.create_namespaced_pod(mine, body, dry_run="All")
        except ApiException as exc:
            return exc.status, json.loads(exc.body)["message"]
        return 201, json.dumps(created.spec.containers[0].resources.to_dict())

    refused = {
        "privileged": pod(container={"name": "c", "image": "nginx",
                                     "securityContext": {"privileged": True}}),
        "hostPath": pod(volumes=[{"name": "root", "hostPath": {"path": "/"}}]),
        "hostNetwork": pod(hostNetwork=True),
        "hostPID": pod(hostPID=True),
        "a node by name": pod(nodeName="controllers-from-scratch-control-plane"),
        "the control plane's taint": pod(tolerations=[
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]),
        "every taint": pod(tolerations=[{"operator": "Exists"}]),
        "more than a container may have": pod(container={
            "name": "c", "image": "nginx", "resources": {"limits": {"memory": "4Gi"}}}),
        "more than the quota": {"metadata": {"name": "probe"}, "spec": {"containers": [
            {"name": f"c{n}", "image": "nginx", "resources": {
                "requests": {"memory": "500Mi"}, "limits": {"memory": "500Mi"}}}
            for n in range(5)]}},  # 2.5 Gi requested, each container under the LimitRange's max
    }  # fmt: skip
    answers = {what: answer(body) for what, body in refused.items()}
    for what in ("privileged", "hostPath", "hostNetwork", "hostPID"):
        status, message = answers[what]
        assert status == 403 and 'violates PodSecurity "baseline:v1.' in message, (what, message)
    for what in ("a node by name", "the control plane's taint", "every taint"):
        status, message = answers[what]
        assert status == 422 and workshop.POD_POLICY in message, (what, message)
    assert answers["more than a container may have"][0] == 403
    assert "maximum memory usage per Container is 512Mi" in answers[
        "more than a container may have"][1]  # fmt: skip
    assert answers["more than the quota"][0] == 403
    assert "exceeded quota: cfs-attendee" in answers["more than the quota"][1]

    # The chapters' own Pods: chapter 05's controller's template (chapters 05-09), chapter 07's
    # pause Pods, chapter 08b's Deployment manifest; each gets the LimitRange's defaults.
    foo = {"metadata": {"name": "f", "namespace": mine, "uid": "u"},
           "spec": {"deploymentName": "web", "replicas": 1}}  # fmt: skip
    manifest = yaml.safe_load((ROOT / "manifests" / "deployment.yaml").read_text())
    templates = {
        "chapter 05's": new_deployment(foo)["spec"]["template"]["spec"],
        "chapter 07's": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9"}]},
        "chapter 08b's": manifest["spec"]["template"]["spec"] | {"serviceAccountName": "default"},
    }
    for what, spec in templates.items():
        status, resources = answer({"metadata": {"name": "probe"}, "spec": spec})
        assert status == 201, (what, resources)
        assert json.loads(resources)["requests"]["cpu"] in ("10m", "50m"), (what, resources)

    # What is not theirs to make at all: a Binding (a node of their choice), a Service.
    attempts = {
        "bind a Pod": lambda: core.create_namespaced_pod_binding("probe", mine, {
            "metadata": {"name": "probe"}, "target": {"kind": "Node", "name": "n"}},
            dry_run="All"),
        "a Service": lambda: core.create_namespaced_service(mine, {
            "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}, dry_run="All"),
        "change the quota": lambda: core.delete_namespaced_resource_quota(
            workshop.QUOTA_NAME, mine),
    }  # fmt: skip
    for what, attempt in attempts.items():
        with pytest.raises(ApiException) as exc:
            attempt()
        assert exc.value.status == 403, what


@pytest.mark.cluster
def test_each_attendee_namespace_has_its_quota_limits_and_isolation(
    attendees: dict[str, Path],
) -> None:
    api = kube.connect()
    core = kubernetes.client.CoreV1Api(api)
    networking = kubernetes.client.NetworkingV1Api(api)
    version = kubernetes.client.VersionApi(api).get_code()
    for name in attendees:
        for namespace in workshop.attendees_for([name])[0].namespaces:
            labels = core.read_namespace(namespace).metadata.labels
            assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
            assert labels["pod-security.kubernetes.io/enforce-version"] == (
                f"v{version.major}.{version.minor.rstrip('+')}"
            )
            quota = core.read_namespaced_resource_quota(workshop.QUOTA_NAME, namespace)
            assert quota.spec.hard == workshop.QUOTA
            (limits,) = core.read_namespaced_limit_range(workshop.QUOTA_NAME, namespace).spec.limits
            assert limits.default == workshop.LIMITS["default"]
            policy = networking.read_namespaced_network_policy(workshop.NETWORK_POLICY, namespace)
            assert policy.spec.pod_selector.match_labels is None  # every Pod of the namespace
            assert policy.spec.ingress is None  # nothing comes in
            ports = {(p.protocol, p.port) for rule in policy.spec.egress for p in rule.ports}
            assert ("UDP", 53) in ports and len(policy.spec.egress) >= 2  # DNS, the API server


@pytest.mark.cluster
def test_up_refuses_a_loopback_server_before_touching_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The course's cluster is at https://127.0.0.1:PORT. When it may not be shared with other
    accounts of this machine (here: as if an older version had started it, with etcd on plain
    HTTP), `workshop up` says why not, and makes neither the attendee nor the folder for their
    files. (A cluster that may be shared is handed out: tests/test_hub.py.)"""
    from helpers.cluster.local import LocalCluster

    monkeypatch.setattr(LocalCluster, "sharing_problem", lambda self: "its etcd answers "
                        "without a client certificate (an older version started it)")  # fmt: skip
    out = tmp_path / "handouts"
    name = f"tl-{uuid.uuid4().hex[:4]}"
    assert workshop.main(["up", "--attendees", name, "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert "a loopback address" in lines[0] and len(lines) == 2, lines
    assert "its etcd answers without a client certificate" in lines[0], lines
    assert "--allow-loopback" in lines[1]
    assert not out.exists()
    core = kubernetes.client.CoreV1Api(kube.connect())
    assert not core.list_namespace(label_selector=f"{workshop.ATTENDEE_LABEL}={name}").items


@pytest.mark.cluster
def test_an_admin_context_at_an_attendees_namespace_is_refused_and_nothing_is_emptied(
    attendees: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common way to help someone: the admin's context pointed at their namespace. The
    claim is the attendee's, the API server says admin: refused, the namespace kept whole."""
    (a, a_config), _ = attendees.items()
    mine = f"{a}-ch03b-indexer"
    core = kubernetes.client.CoreV1Api(client_of(a_config))
    core.create_namespaced_config_map(mine, {"metadata": {"name": "work"}, "data": {"a": "1"}})
    admin = yaml.safe_load(kube.default_kubeconfig().read_text())
    for context in admin["contexts"]:
        context["context"]["namespace"] = mine
    admin_config = tmp_path / "admin-helping"
    admin_config.write_text(yaml.safe_dump(admin))
    monkeypatch.delenv(workshop_mode.ATTENDEE_ENV, raising=False)
    monkeypatch.setenv("KUBECONFIG", str(admin_config))
    api = kube.connect()
    for act in (lambda: namespaces.fresh_namespace(api, "ch03b-indexer"),
                lambda: namespaces.delete_namespace(api, mine)):  # fmt: skip
        with pytest.raises(namespaces.CourseError, match="the API server says you are") as refused:
            act()
        assert f"not {a}'s ServiceAccount" in refused.value.problem
    monkeypatch.setenv(workshop_mode.ATTENDEE_ENV, a)  # the same claim by the environment
    with pytest.raises(namespaces.CourseError, match="the API server says you are"):
        namespaces.fresh_namespace(api, "ch03b-indexer")
    assert core.read_namespaced_config_map("work", mine).data == {"a": "1"}  # nothing emptied
    # The attendee's own credentials, on a namespace that is not theirs: refused too.
    with pytest.raises(namespaces.CourseError, match="is not attendee"):
        workshop_mode.verify(client_of(a_config), a, "kube-system")
    core.delete_namespaced_config_map("work", mine)


@pytest.mark.cluster
def test_two_attendees_run_chapters_04_and_05_at_once_and_touch_nothing_else(
    attendees: dict[str, Path], tmp_path: Path
) -> None:
    api = kube.connect()
    theirs = {ns for name in attendees for ns in workshop.attendees_for([name])[0].namespaces}
    before = made_for(api, list(attendees))
    # Their namespaces print as the chapters' own: nbval compares with the stored outputs.
    names = "|".join(attendees)
    sanitize = tmp_path / "sanitize.cfg"
    sanitize.write_text(
        f"[attendee namespaces]\nregex: \\b(?:{names})-(ch\\d\\d-)\nreplace: \\1\n\n"
        # An attendee's clean-up empties the namespace that the chapter deletes elsewhere.
        + "[attendee clean-up]\nregex: was emptied \\(an attendee keeps their namespaces\\)\n"
        + "replace: is being deleted\n\n"
        + (ROOT / "tests" / "nbval-sanitize.cfg").read_text()
    )
    with ThreadPoolExecutor(2) as pool:
        runs = dict(zip(attendees, pool.map(
            run_chapters, attendees, attendees.values(), [sanitize] * 2), strict=True))  # fmt: skip
    after = made_for(api, list(attendees))
    # Outside their namespaces, only what the facilitator made (their bindings): the 403 test
    # shows that attendees may make nothing there; this shows that no chapter tried.
    outside = {item for item in after - before if item[2] not in theirs}
    assert not outside, f"made outside their namespaces: {sorted(outside)}"
    for name, done in runs.items():
        report = f"attendee {name}:\n{done.stdout[-6000:]}\n{done.stderr[-2000:]}"
        assert done.returncode == 0, report


@pytest.mark.cluster
def test_fresh_namespace_empties_the_attendees_namespace_and_keeps_the_facilitators_objects(
    attendees: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    (a, a_config), _ = attendees.items()
    monkeypatch.setenv("KUBECONFIG", str(a_config))
    monkeypatch.delenv(workshop_mode.ATTENDEE_ENV, raising=False)
    api = client_of(a_config)
    core = kubernetes.client.CoreV1Api(api)
    mine = f"{a}-ch03a-informer"
    # Left over from an interrupted run: a plain object, and one a finalizer holds.
    core.create_namespaced_config_map(mine, {"metadata": {"name": "left"}})
    core.create_namespaced_config_map(
        mine, {"metadata": {"name": "held", "finalizers": ["example.com/stopped-controller"]}}
    )
    assert namespaces.fresh_namespace(api, "ch03a-informer") == mine
    left = {item.metadata.name for item in core.list_namespaced_config_map(mine).items}
    assert left == {"kube-root-ca.crt"}  # the cluster's own, recreated at once anyway
    bindings = kubernetes.client.RbacAuthorizationV1Api(api).list_namespaced_role_binding(mine)
    assert [b.metadata.name for b in bindings.items] == [workshop.ROLE]  # access kept
    assert namespaces.delete_namespace(api, mine).startswith("was emptied")
    assert namespaces.ensure_namespace(api, mine) == mine
