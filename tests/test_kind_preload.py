"""On kind, ``up`` loads every image the chapters' Pods run into the nodes before the first cell.

There is no Docker engine on the project's machines, so ``docker`` and ``kind``
are stand-ins here that record how they were called; what is tested is the
command lines ``up`` runs, in order, and that the image list misses no image a
chapter, an exercise or the controller uses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import kube
from helpers.cluster import kind
from helpers.cluster.kind import COURSE_IMAGES, KindCluster, offline_commands, preload_commands
from helpers.cluster.paths import CourseHome

ROOT = Path(__file__).resolve().parents[1]
IMAGE = re.compile(r'"image": *"([^"]+)"|image: str = "([^"]+)"')


def with_tag(image: str) -> str:
    """``nginx`` is ``nginx:latest`` to Docker and to kind."""
    return image if ":" in image.rsplit("/", 1)[-1] else f"{image}:latest"


def images_in_the_course() -> set[str]:
    """Every image literal in the chapters' code cells and in helpers/ (exercises included)."""
    texts = [path.read_text() for path in (ROOT / "helpers").rglob("*.py")]
    for notebook in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"):
        cells = json.loads(notebook.read_text())["cells"]
        texts += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    found = {with_tag(a or b) for text in texts for a, b in IMAGE.findall(text)}
    found |= {with_tag(image) for text in texts for image in re.findall(
        r"registry\.k8s\.io/pause:[0-9.]+", text)}  # fmt: skip
    return found


def test_the_preloaded_images_are_those_the_course_runs() -> None:
    found = images_in_the_course()
    assert "nginx:latest" in found and "registry.k8s.io/pause:3.10" in found  # the scan works
    assert found == set(COURSE_IMAGES)


def test_missing_images_are_pulled_then_all_loaded_in_one_command() -> None:
    commands = preload_commands("course", ("a:1", "b:2", "c:3"), present={"b:2"})
    assert commands == [
        ["docker", "pull", "a:1"],
        ["docker", "pull", "c:3"],
        ["kind", "load", "docker-image", "--name", "course", "a:1", "b:2", "c:3"],
    ]


def test_offline_commands_save_before_and_load_on_the_day() -> None:
    steps = offline_commands(("a:1", "b:2"))
    assert steps["before"][-1] == ["docker", "save", "-o", "course-images.tar", "a:1", "b:2"]
    assert steps["on the day"] == [["docker", "load", "-i", "course-images.tar"]]


def stand_in(folder: Path, name: str, calls: Path, script: str) -> None:
    path = folder / name
    path.write_text(f'#!/bin/sh\necho "{name} $@" >> {calls}\n{script}\n')
    path.chmod(0o755)


def test_up_loads_the_images_after_creating_the_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = tmp_path / "calls"
    folder = tmp_path / "bin"
    folder.mkdir()
    # docker: an engine answers; it has pause:3.9 already and nothing else.
    has = '[ "$1" = image ] && [ "$3" != registry.k8s.io/pause:3.9 ] && exit 1'
    stand_in(folder, "docker", calls, f'[ "$1" = info ] && echo 27.0\n{has}\nexit 0')
    # kind: knows no cluster; `create` writes an (unusable) kubeconfig where it is told.
    stand_in(folder, "kind", calls, 'for a in "$@"; do [ "$prev" = --kubeconfig ] && '
             'echo "{}" > "$a"; prev="$a"; done\nexit 0')  # fmt: skip
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")

    class Stop(Exception):
        pass

    def connect(*args: object, **kwargs: object) -> None:
        raise Stop  # no cluster behind the stand-in: stop where up() would install the CRD

    monkeypatch.setattr(kube, "connect", connect)
    home = CourseHome(tmp_path / "home")
    home.root.mkdir()
    with pytest.raises(Stop):
        KindCluster(home, "course").up()

    ran = calls.read_text().splitlines()
    create = next(i for i, line in enumerate(ran) if line.startswith("kind create cluster"))
    pulls = [line for line in ran if line.startswith("docker pull")]
    load = [i for i, line in enumerate(ran) if line.startswith("kind load docker-image")]
    assert pulls == [f"docker pull {image}" for image in COURSE_IMAGES
                     if image != "registry.k8s.io/pause:3.9"]  # fmt: skip
    assert len(load) == 1 and load[0] > create
    assert ran[load[0]] == f"kind load docker-image --name course {' '.join(COURSE_IMAGES)}"
    assert "--config" in ran[create] and str(kind.KIND_CONFIG) in ran[create]


def test_the_facilitator_guide_saves_the_same_images_for_an_offline_day() -> None:
    guide = (ROOT / "docs" / "facilitator.md").read_text()
    listed = re.search(r'IMAGES="([^"]+)"', guide)
    assert listed is not None and tuple(listed[1].split()) == COURSE_IMAGES
