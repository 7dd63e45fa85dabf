"""The tests and the benchmarks never send a request to a cluster the course did not create.

A learner's ``KUBECONFIG`` (or ``~/.kube/config``) may point at their work
cluster. The suite deletes CRDs and namespaces and the benchmarks create
140,000 ConfigMaps, so both must refuse such a cluster before they send
anything. The decoy is a TCP listener on loopback that counts every
connection made to it: a kubeconfig points at it, and the count must stay 0.
A test names the decoy explicitly (``CFS_ALLOW_CLUSTER``, its context, server
and CA) and sees the suite reach it: the count is what the guard holds at 0,
not an accident; the same context name pointed at another server is refused.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from helpers.cluster.identity import (
    ALLOW_ENV,
    Identity,
    allow_value,
    identity_of,
    require_course_cluster,
)
from helpers.errors import CourseError
from helpers.home import CourseHome
from tests.decoys import CA_PEM, DECOY_CONTEXT, Decoy, write_decoy_kubeconfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def decoy() -> Iterator[Decoy]:
    with Decoy() as listening:
        yield listening


@pytest.fixture
def learner_env(tmp_path: Path, decoy: Decoy) -> dict[str, str]:
    """A learner's shell: a HOME whose ~/.kube/config is the decoy, and no course cluster."""
    home = tmp_path / "learner"
    write_decoy_kubeconfig(home / ".kube" / "config", decoy.port)
    env = {key: value for key, value in os.environ.items() if key not in ("KUBECONFIG", ALLOW_ENV)}
    env.update(HOME=str(home), CFS_HOME=str(tmp_path / "course-home"))
    return env


def run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
# A file of cluster tests that deletes and creates namespaces.
CLUSTER_TESTS = "tests/test_namespaces.py"


def decoy_allowed(decoy: Decoy) -> str:
    """What CFS_ALLOW_CLUSTER must say to name the decoy: its context, server, and no CA."""
    return f"{DECOY_CONTEXT}@https://127.0.0.1:{decoy.port}#no-ca"


def assert_refused(result: subprocess.CompletedProcess[str], decoy: Decoy) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert f"context '{DECOY_CONTEXT}'" in output and "is not one" in output, output
    assert f"export '{ALLOW_ENV}={decoy_allowed(decoy)}'" in output, output
    assert decoy.connections == 0, f"the decoy received {decoy.connections} connection(s)"


def test_the_suite_refuses_the_cluster_kubeconfig_names(
    decoy: Decoy, learner_env: dict[str, str], tmp_path: Path
) -> None:
    kubeconfig = write_decoy_kubeconfig(tmp_path / "work.kubeconfig", decoy.port)
    assert_refused(run([*PYTEST, CLUSTER_TESTS], {**learner_env, "KUBECONFIG": str(kubeconfig)}),
                   decoy)  # fmt: skip


def test_the_suite_refuses_the_cluster_of_the_home_kubeconfig(
    decoy: Decoy, learner_env: dict[str, str]
) -> None:
    """No KUBECONFIG and no course cluster: the client would fall back to ~/.kube/config."""
    assert_refused(run([*PYTEST, CLUSTER_TESTS], learner_env), decoy)


def test_the_notebooks_refuse_it_too(decoy: Decoy, learner_env: dict[str, str]) -> None:
    command = [*PYTEST, "--nbval", "notebooks/00_setup_and_api_tour.ipynb"]
    assert_refused(run(command, learner_env), decoy)


def test_the_benchmarks_refuse_it(
    decoy: Decoy, learner_env: dict[str, str], tmp_path: Path
) -> None:
    """run_all keeps a KUBECONFIG that is set; without one it uses the course's, which is not
    there: refused either way, and nothing sent."""
    kubeconfig = write_decoy_kubeconfig(tmp_path / "work.kubeconfig", decoy.port)
    command = [str(ROOT / "benchmarks" / "run_all")]
    result = run(command, {**learner_env, "KUBECONFIG": str(kubeconfig)})
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "is not one" in output and f"{ALLOW_ENV}={decoy_allowed(decoy)}" in output, output
    result = run(command, learner_env)
    assert result.returncode != 0 and "No kubeconfig at" in result.stderr, result.stderr
    assert decoy.connections == 0, f"the decoy received {decoy.connections} connection(s)"


@pytest.mark.parametrize(
    "entry_point",
    [["informer_bench", "sync"], ["controller_bench"], ["conflict_drill"], ["forbidden_watch"],
     ["profile_informer", "sync"], ["hub_capacity"]],
    ids=lambda entry_point: entry_point[0],
)  # fmt: skip
def test_each_benchmark_run_alone_refuses_it(
    entry_point: list[str], decoy: Decoy, learner_env: dict[str, str], tmp_path: Path
) -> None:
    """RESULTS.md gives each benchmark's own command: each checks before its first request."""
    kubeconfig = write_decoy_kubeconfig(tmp_path / "work.kubeconfig", decoy.port)
    command = [sys.executable, "-m", f"benchmarks.{entry_point[0]}", *entry_point[1:]]
    result = run(command, {**learner_env, "KUBECONFIG": str(kubeconfig)})
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "is not one" in output and f"{ALLOW_ENV}={decoy_allowed(decoy)}" in output, output
    assert decoy.connections == 0, f"the decoy received {decoy.connections} connection(s)"


def test_unit_tests_alone_still_run_beside_such_a_kubeconfig(
    decoy: Decoy, learner_env: dict[str, str]
) -> None:
    """The guard stops sessions that would use a cluster, not a learner's unit tests."""
    result = run([*PYTEST, "tests/test_labels.py"], learner_env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert decoy.connections == 0


def test_a_cluster_named_explicitly_is_used(decoy: Decoy, learner_env: dict[str, str]) -> None:
    """With the decoy named, the same run reaches it (and fails there: it is no API server)."""
    command = [*PYTEST, CLUSTER_TESTS, "-k", "test_ensure_namespace_brings_back"]
    result = run(command, {**learner_env, ALLOW_ENV: decoy_allowed(decoy)})
    assert result.returncode == 1, result.stdout + result.stderr
    assert decoy.connections >= 1


def test_a_context_name_alone_or_another_server_is_not_the_cluster_named(
    decoy: Decoy, learner_env: dict[str, str]
) -> None:
    """The old form (a context's name), and the same context name pointed at another server
    (another kubeconfig, or the context edited since): refused, and nothing is sent."""
    with Decoy() as elsewhere:
        for named in (DECOY_CONTEXT, decoy_allowed(elsewhere)):
            result = run([*PYTEST, CLUSTER_TESTS], {**learner_env, ALLOW_ENV: named})
            assert_refused(result, decoy)
            output = result.stdout + result.stderr
            assert f"({ALLOW_ENV} names {named}, not this cluster)" in output, output
        assert elsewhere.connections == 0


def test_the_identity_is_read_from_the_files_alone(tmp_path: Path) -> None:
    """The CA given inline or as a file is the same fingerprint; a missing CA is None."""
    ca_file = tmp_path / "ca.crt"
    ca_file.write_text(CA_PEM)
    inline = tmp_path / "inline"
    listed = tmp_path / "listed"
    data = base64.b64encode(ca_file.read_bytes()).decode()
    for path, cluster in (
        (inline, {"server": "https://10.0.0.1:6443", "certificate-authority-data": data}),
        (listed, {"server": "https://10.0.0.1:6443", "certificate-authority": str(ca_file)}),
    ):
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "k", "cluster": cluster}], "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        }))  # fmt: skip
    name, first = identity_of(inline, None)
    assert name == "c" and first == identity_of(listed, None)[1]
    assert first.ca_sha256 is not None and len(first.ca_sha256) == 64
    assert identity_of(write_decoy_kubeconfig(tmp_path / "d", 1), None)[1] == Identity(
        "https://127.0.0.1:1", None
    )
    assert allow_value(name, first) == f"c@https://10.0.0.1:6443#sha256:{first.ca_sha256}"


def test_a_cluster_recorded_by_the_course_is_accepted(tmp_path: Path) -> None:
    """A state file with the same server and CA is what makes a cluster the course's."""
    home = CourseHome(tmp_path / "home")
    ca_file = tmp_path / "ca.crt"
    ca_file.write_text(CA_PEM)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "kwok-x",
        "clusters": [{"name": "k", "cluster": {
            "server": "https://127.0.0.1:4443", "certificate-authority": str(ca_file)}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "kwok-x", "context": {"cluster": "k", "user": "u"}}],
    }))  # fmt: skip
    with pytest.raises(CourseError, match="is not one"):
        require_course_cluster(kubeconfig, home=home)
    _, identity = identity_of(kubeconfig, None)
    home.make_cluster_dir("x")
    state = {"backend": "local", "context": "kwok-x", "server": identity.server,
             "ca_sha256": identity.ca_sha256}  # fmt: skip
    home.state_file("x").write_text(json.dumps(state))
    assert require_course_cluster(kubeconfig, home=home) == "kwok-x"
    state["backend"] = "existing"  # used by the course, not created by it
    home.state_file("x").write_text(json.dumps(state))
    with pytest.raises(CourseError, match="is not one"):
        require_course_cluster(kubeconfig, home=home)
