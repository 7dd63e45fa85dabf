"""``make test`` stops what it started, also when ``up`` failed half way.

The failure here is a real one at a real step: ``up`` runs with a Foo CRD the
API server rejects (its name does not match its plural), so kwokctl has
started all five processes by the time ``up`` exits with an error.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers.home import CourseHome
from tests import run_all
from tests.leftovers import strays

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[1]
NAME = "cfs-run-all"
# `python -m helpers.cluster ...` reading its manifests from the folder in argv[1].
UP_WITH_MANIFESTS = (
    "import sys; from pathlib import Path; from helpers.cluster import bootstrap; "
    "bootstrap.MANIFESTS_DIR = Path(sys.argv[1]); "
    "from helpers.cluster.__main__ import main; sys.exit(main(sys.argv[2:]))"
)
INVALID_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.samplecontroller.k8s.io
spec:
  group: samplecontroller.k8s.io
  names: {kind: Foo, plural: bars}
  scope: Namespaced
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object}}
"""


def test_a_failed_up_is_stopped(
    course_home: CourseHome, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "foo-crd.yaml").write_text(INVALID_CRD)
    up = [sys.executable, "-c", UP_WITH_MANIFESTS, str(manifests), "up", "--backend", "local",
          "--name", NAME]  # fmt: skip
    ran: list[dict[str, str]] = []

    code = run_all.with_cluster(course_home, NAME, up, lambda env: ran.append(env) or 0)

    output = capfd.readouterr()
    assert code == 2
    assert not ran, "the tests ran against a cluster whose `up` failed"
    assert "starting the control plane" in output.err, "up failed before starting anything"
    assert "error: The API server rejected the object as invalid" in output.err
    assert "is gone (5 processes stopped)" in output.out
    assert not strays(course_home), "a failed up left processes running"
    assert not (course_home.kwok_workdir / "clusters" / NAME).exists()


SKIPS = """
import pytest

def test_needs_something() -> None:
    pytest.skip("the drill needs etcd on loopback")
"""


def test_skips_are_listed_with_their_reasons(tmp_path: Path) -> None:
    """A pytest run with the project's configuration names each skipped test and why."""
    (tmp_path / "test_skips.py").write_text(SKIPS)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
         "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
         str(tmp_path / "test_skips.py")],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert "1 skipped" in result.stdout, result.stdout + result.stderr
    assert "SKIPPED [1]" in result.stdout
    assert "the drill needs etcd on loopback" in result.stdout
    # make test says so itself too (a later -r on its command line would replace pyproject's).
    report = [option for option in run_all.PYTEST if option.startswith("-r")]
    assert report and all("s" in option for option in report)


def test_drift_stops_make_test_before_the_cluster_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A module that differs from its chapter is reported in seconds: no cluster is started."""
    ran: list[tuple[str, ...]] = []

    def fake_run(*command: str, env: dict[str, str] | None = None) -> int:
        ran.append(command)
        return 1 if command[1:] == ("-m", "helpers.export", "--check") else 0

    def no_cluster(*args: object) -> int:
        raise AssertionError("the cluster was started although a module had drifted")

    monkeypatch.setattr(run_all, "run", fake_run)
    monkeypatch.setattr(run_all, "with_cluster", no_cluster)
    assert run_all.main() == 1
    assert ran[-1][1:] == ("-m", "helpers.export", "--check")
    assert "differ from their chapters" in capsys.readouterr().out
