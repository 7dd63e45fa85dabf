"""Finding the kubeconfig as kubectl does, and copying credentials privately.

``$KUBECONFIG`` may list several files. kubectl merges them: the first file
that names a context, cluster or user defines it, and the current context comes
from the first file that sets one. These tests split the real cluster's
kubeconfig over two files in two folders, with the certificates referenced by
paths relative to each file, and connect through the list.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import kube
from helpers.cluster.existing import single_context
from helpers.errors import CourseError
from helpers.home import CourseHome

ROOT = Path(__file__).resolve().parents[1]


def split_kubeconfig(source: Path, folder: Path) -> tuple[Path, Path]:
    """Two files as a person might keep them: credentials and contexts in one, clusters in another.

    ``first`` sets current-context to ``course``; ``second`` also sets one
    (``elsewhere``), which kubectl ignores because ``first`` already did.
    """
    document = yaml.safe_load(source.read_text())
    cluster = document["clusters"][0]
    user = document["users"][0]
    (folder / "a" / "certs").mkdir(parents=True)
    (folder / "b").mkdir()
    shutil.copy(user["user"]["client-certificate"], folder / "a" / "certs" / "me.crt")
    shutil.copy(user["user"]["client-key"], folder / "a" / "certs" / "me.key")
    shutil.copy(cluster["cluster"]["certificate-authority"], folder / "b" / "ca.crt")
    first: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "course",
        "contexts": [{"name": "course", "context": {"cluster": "the-cluster", "user": "me"}}],
        "users": [{"name": "me", "user": {"client-certificate": "certs/me.crt"}}],
    }
    second: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "elsewhere",
        "contexts": [{"name": "elsewhere", "context": {"cluster": "the-cluster", "user": "me"}}],
        "clusters": [{"name": "the-cluster", "cluster": {"server": cluster["cluster"]["server"]}}],
    }
    first["users"][0]["user"]["client-key"] = "certs/me.key"
    second["clusters"][0]["cluster"]["certificate-authority"] = "ca.crt"
    paths = (folder / "a" / "config", folder / "b" / "config")
    for path, content in zip(paths, (first, second), strict=True):
        path.write_text(yaml.safe_dump(content))
    return paths


def split_kubeconfig_offline(folder: Path) -> tuple[Path, Path]:
    """The same two files for a made-up cluster (no cluster needed)."""
    pki = folder / "pki"
    pki.mkdir()
    for name in ("ca.crt", "admin.crt", "admin.key"):
        (pki / name).write_text(f"not a real {name}\n")
    source = folder / "source"
    source.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443",
                              "certificate-authority": str(pki / "ca.crt")}}],
                "users": [{"name": "u", "user": {"client-certificate": str(pki / "admin.crt"),
                           "client-key": str(pki / "admin.key")}}],
            }
        )
    )  # fmt: skip
    return split_kubeconfig(source, folder)


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    return split_kubeconfig(kube.default_kubeconfig(), tmp_path)


def as_list(*paths: Path) -> str:
    return os.pathsep.join(str(path) for path in paths)


@pytest.mark.cluster
def test_a_two_path_kubeconfig_connects_like_kubectl(
    two_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two_files
    monkeypatch.setenv("KUBECONFIG", as_list(first, second))

    context, server = kube.describe_context(None, None)
    api = kube.connect()

    assert context == "course"  # first file's current-context, though the second sets one too
    assert server.startswith("https://127.0.0.1:")
    assert kube.probe(api, context, server, timeout=5)["git_version"].startswith("v1.")


def test_current_context_comes_from_the_first_file_that_sets_one(tmp_path: Path) -> None:
    first, second = split_kubeconfig_offline(tmp_path)
    document = yaml.safe_load(first.read_text())
    del document["current-context"]
    first.write_text(yaml.safe_dump(document))

    assert kube.describe_context([first, second], None)[0] == "elsewhere"
    assert kube.describe_context([second, first], None)[0] == "elsewhere"
    missing = tmp_path / "not-there"
    assert kube.describe_context([missing, first, second], None)[0] == "elsewhere"


def test_a_context_from_the_second_file_is_found(tmp_path: Path) -> None:
    first, second = split_kubeconfig_offline(tmp_path)

    name, server = kube.describe_context([first, second], "elsewhere")

    assert (name, server) == ("elsewhere", "https://127.0.0.1:6443")
    with pytest.raises(CourseError) as caught:
        kube.describe_context([first, second], "nowhere")
    assert "course" in caught.value.next_step and "elsewhere" in caught.value.next_step


def test_single_context_copies_one_context_from_two_files_with_absolute_paths(
    tmp_path: Path,
) -> None:
    first, second = split_kubeconfig_offline(tmp_path)

    copied = single_context([first, second], "course")

    assert copied["current-context"] == "course"
    assert [c["name"] for c in copied["contexts"]] == ["course"]
    assert [c["name"] for c in copied["clusters"]] == ["the-cluster"]
    assert [u["name"] for u in copied["users"]] == ["me"]
    user = copied["users"][0]["user"]
    assert user["client-certificate"] == str(tmp_path / "a" / "certs" / "me.crt")
    assert user["client-key"] == str(tmp_path / "a" / "certs" / "me.key")
    assert copied["clusters"][0]["cluster"]["certificate-authority"] == str(tmp_path / "b/ca.crt")
    # The files it came from are untouched (relative paths stay relative there).
    assert "certs/me.crt" in first.read_text()


def test_single_context_names_a_missing_cluster(tmp_path: Path) -> None:
    first, _ = split_kubeconfig_offline(tmp_path)
    with pytest.raises(CourseError, match="refers to cluster 'the-cluster'"):
        single_context([first], "course")


@pytest.mark.cluster
def test_existing_backend_copies_from_a_two_path_kubeconfig_privately(
    two_files: tuple[Path, Path], course_home: CourseHome
) -> None:
    env = {**os.environ, "KUBECONFIG": as_list(*two_files), "CFS_HOME": str(course_home.root)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "helpers.cluster", *args, "--name", "cfs-existing"],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300,
        )  # fmt: skip

    up = cli("up", "--backend", "existing")
    assert up.returncode == 0, up.stdout + up.stderr
    copy = course_home.kubeconfig("cfs-existing")
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600, "credentials readable by others"
    assert kube.describe_context(copy, None)[0] == "course"
    kube.connect(copy)

    down = cli("down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert "forgot the existing cluster" in down.stdout
    assert not copy.exists()


def test_kubeconfigs_the_course_writes_are_private(tmp_path: Path) -> None:
    from helpers.private_files import write_private

    path = tmp_path / "kubeconfig"
    path.write_text("old")
    path.chmod(0o644)

    write_private(path, "secret")

    assert path.read_text() == "secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
