"""A shared workshop cluster: attendees kept apart, running chapters side by side, nothing else.

The facilitator's ``python -m helpers.cluster.workshop up`` is run on the test
cluster for two attendees with fresh names; every check then uses the
attendees' own kubeconfig files (their ServiceAccount tokens), never the
admin's credentials, so a 403 here is the API server's RBAC answering.
"""

from __future__ import annotations

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
from helpers.foo_crd import foo_crd_additions, restore_foo_crd
from helpers.reconcile import STATUS_FIELDS, restore_foo_status

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


def test_attendee_mode_comes_from_the_context_namespace_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def kubeconfig(namespace: str | None) -> Path:
        context = {"cluster": "c", "user": "u", **({"namespace": namespace} if namespace else {})}
        path = tmp_path / f"{namespace}.yaml"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "x",
            "contexts": [{"name": "x", "context": context}],
            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
        }))  # fmt: skip
        return path

    monkeypatch.delenv(workshop_mode.ATTENDEE_ENV, raising=False)
    assert workshop_mode.attendee(kubeconfig("bob-ch00-api-tour")) == "bob"
    assert workshop_mode.attendee(kubeconfig("team-7-ch04-workqueue")) == "team-7"
    assert workshop_mode.attendee(kubeconfig("dev")) is None  # a learner's own default namespace
    assert workshop_mode.attendee(kubeconfig(None)) is None
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig("bob-ch00-api-tour")))
    assert workshop_mode.chapter_namespace("ch04-workqueue") == "bob-ch04-workqueue"
    monkeypatch.setenv(workshop_mode.ATTENDEE_ENV, "carol")
    assert workshop_mode.chapter_namespace("ch04-workqueue") == "carol-ch04-workqueue"


def test_chapter_08s_cluster_roles_become_roles_in_the_namespace() -> None:
    from helpers import rbac

    documents = rbac.load_manifests("rbac.yaml", namespace="a-ch08", suffix="-a-ch08")
    changed = workshop.namespaced_roles(documents, "a-ch08")
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
    paths = workshop.up(api, workshop.attendees_for(names), out, token_hours=1)
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


def everything_outside(api: kubernetes.client.ApiClient, mine: set[str]) -> set[tuple[str, ...]]:
    """Every object of the cluster not in ``mine`` (Events and renewed Leases aside)."""
    dynamic = kubernetes.dynamic.DynamicClient(api)
    found = set()
    for resource in dynamic.resources.search():
        if (
            isinstance(resource, kubernetes.dynamic.resource.ResourceList)
            or "/" in resource.name
            or not resource.preferred
            or "list" not in (resource.verbs or [])
            or resource.kind == "Event"
        ):
            continue
        for item in resource.get().items:
            namespace = item.metadata.namespace or ""
            if namespace not in mine:
                found.add((resource.group, resource.kind, namespace, item.metadata.name))
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
def test_two_attendees_run_chapters_04_and_05_at_once_and_touch_nothing_else(
    attendees: dict[str, Path], tmp_path: Path
) -> None:
    api = kube.connect()
    theirs = {ns for name in attendees for ns in workshop.attendees_for([name])[0].namespaces}
    before = everything_outside(api, theirs)
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
    after = everything_outside(api, theirs)
    # New objects only: a namespace an earlier test deleted may still be emptying meanwhile
    # (the 403 test shows that attendees cannot delete outside their namespaces).
    assert not after - before, f"made outside their namespaces: {sorted(after - before)}"
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
