"""``make preflight`` on the real cluster: all ok for the admin, a named problem for the rest.

The problem cases are real ones: an attendee whose RoleBinding in one chapter
namespace is gone (the SelfSubjectAccessReviews find exactly that), and a
kubeconfig whose server nobody answers.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import kubernetes
import pytest
import yaml

from helpers import kube
from helpers.cluster import preflight, workshop
from helpers.foo_crd import STATUS_FIELDS, foo_crd_additions, restore_foo_crd, restore_foo_status


def test_the_table_gives_a_next_step_for_each_problem_only() -> None:
    rows = [preflight.Row("python", True, "3.11.7", "unused"),
            preflight.Row("disk", False, "0.5 GB free", "free 2 GB")]  # fmt: skip
    assert preflight.table(rows).splitlines() == [
        "python  ok       3.11.7",
        "disk    PROBLEM  0.5 GB free",
        "                 next step: free 2 GB",
    ]


@pytest.mark.cluster
def test_the_course_cluster_passes_every_check_in_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = time.monotonic()
    code = preflight.main([])
    took = time.monotonic() - started
    out = capsys.readouterr().out
    print(out, f"preflight took {took:.1f} s")
    assert code == 0, out
    for check in ("python", "packages", "kernel", "cluster", "readyz", "nodes", "Foo CRD",
                  "permissions (cluster writes)", "etcd", "disk"):  # fmt: skip
        assert any(line.startswith(check) and " ok " in line for line in out.splitlines()), check
    print(f"make preflight took {took:.1f} s")  # a time, not a bound: the machine's load moves it


@pytest.mark.cluster
def test_an_attendee_missing_one_binding_and_a_wrong_server_are_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api = kube.connect()
    crd = kubernetes.client.ApiextensionsV1Api(api).read_custom_resource_definition(
        "foos.samplecontroller.k8s.io"
    )
    status = crd.spec.versions[0].schema.open_apiv3_schema.properties["status"]
    was_extended = set(STATUS_FIELDS) <= set(status.properties or {})
    had_10 = foo_crd_additions(api)
    name = f"tp-{uuid.uuid4().hex[:4]}"
    (config,) = workshop.up(
        api, workshop.attendees_for([name]), tmp_path / "handouts", token_hours=1,
        allow_loopback=True,  # the course's cluster, on this machine alone
    )  # fmt: skip
    try:
        assert preflight.main(["--kubeconfig", str(config)]) == 0, capsys.readouterr().out
        assert f"(attendee {name} mode)" in capsys.readouterr().out
        # The admin's context pointed at the attendee's namespace claims attendee mode: refused.
        helping = yaml.safe_load(kube.default_kubeconfig().read_text())
        for context in helping["contexts"]:
            context["context"]["namespace"] = f"{name}-ch04-workqueue"
        (tmp_path / "helping").write_text(yaml.safe_dump(helping))
        assert preflight.main(["--kubeconfig", str(tmp_path / "helping")]) == 1
        out = capsys.readouterr().out
        row = next(line for line in out.splitlines() if line.startswith("attendee"))
        assert "PROBLEM" in row and f"not {name}'s ServiceAccount" in row, out
        assert "attendee mode" not in out.splitlines()[-1]
        kubernetes.client.RbacAuthorizationV1Api(api).delete_namespaced_role_binding(
            workshop.ROLE, f"{name}-ch08b-shipping"
        )
        assert preflight.main(["--kubeconfig", str(config)]) == 1
        out = capsys.readouterr().out
        row = next(line for line in out.splitlines() if line.startswith("permissions (in"))
        assert "PROBLEM" in row and f"in {name}-ch08b-shipping" in row, out
        assert f"in {name}-ch07" not in row  # only the namespace that lost its binding
        assert "next step: ask the facilitator" in out
    finally:
        workshop.down(api, [name])
        if not was_extended:
            restore_foo_status(api)
        if not had_10:
            restore_foo_crd(api)  # `up` installs chapter 10's fields and rule too

    wrong = yaml.safe_load(config.read_text())
    wrong["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    config.write_text(yaml.safe_dump(wrong))
    assert preflight.main(["--kubeconfig", str(config)]) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("cluster"))
    assert "PROBLEM" in row and "does not answer" in row, out
