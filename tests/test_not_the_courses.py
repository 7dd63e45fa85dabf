"""Nothing the course did not make is touched: folders, kind clusters, files (issue 19).

A cluster's or an attendee's name becomes part of a path or a label selector,
so only a DNS label is accepted, before anything touches the disk or the
cluster: ``down --name /home/me/work`` once deleted that folder. ``down``
deletes only a folder holding the course's own state file, and never a kind
cluster the course has no record of. Credentials are private from their first
byte, in a course folder that is 0700 from the first `up` whatever the umask
(kwokctl's own keys included); the machine-wide lock is not world-writable.
"""

from __future__ import annotations

import ast
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import kubernetes
import pytest

from helpers import rbac
from helpers.cluster import workshop
from helpers.cluster.__main__ import main as cluster_main
from helpers.cluster.local import port_picking_lock
from helpers.cluster.paths import PRIVATE_FILES, CourseHome
from helpers.errors import CourseError
from helpers.private_files import make_private_dirs, write_private
from tests.test_course_cluster_only import Decoy, write_decoy_kubeconfig

ROOT = Path(__file__).resolve().parents[1]
BAD_NAMES = ("..", "../x", "a/b", "Upper", "-dash", "x" * 64)


def cli(module: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def assert_one_sentence(result: subprocess.CompletedProcess[str], starts: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(lines) == 2 and lines[0].startswith(starts), result.stderr
    assert lines[1].startswith("next step: "), result.stderr


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A learner's folder with a file in it, next to the course's home."""
    folder = tmp_path / "my-work"
    folder.mkdir()
    (folder / "thesis.tex").write_text("three years of work\n")
    return folder


@pytest.mark.parametrize("command", ["up", "down", "status", "logs", "kubeconfig"])
def test_a_path_as_a_cluster_name_is_refused_before_the_disk(
    command: str, victim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    home = tmp_path / "course-home"
    monkeypatch.setenv("CFS_HOME", str(home))
    for name in (str(victim), *BAD_NAMES):
        assert cluster_main([command, f"--name={name}"]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert lines[0].startswith(f"error: '{name}' cannot be a cluster's name"), lines
        assert lines[1].startswith("next step: ") and len(lines) == 2, lines
    assert (victim / "thesis.tex").read_text() == "three years of work\n"
    assert not home.exists(), "nothing may be written before the name is checked"


def test_dot_dot_cannot_reach_the_course_home(tmp_path: Path) -> None:
    """`down --name ..` used to resolve to the home itself: the build cache and every cluster."""
    home = tmp_path / "course-home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "kube-apiserver").write_text("12 minutes of building")
    result = cli(
        "helpers.cluster", "down", "--name", "..", env={**os.environ, "CFS_HOME": str(home)}
    )
    assert_one_sentence(result, "error: '..' cannot be a cluster's name")
    assert (home / "bin" / "kube-apiserver").exists()


def test_down_leaves_a_folder_without_the_courses_state_file(tmp_path: Path) -> None:
    home = tmp_path / "course-home"
    folder = home / "clusters" / "mine"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("not the course's\n")
    result = cli(
        "helpers.cluster", "down", "--name", "mine", env={**os.environ, "CFS_HOME": str(home)}
    )
    assert_one_sentence(result, f"error: {folder} holds no state.json of the course's")
    assert (folder / "notes.txt").exists()


def test_a_kind_cluster_the_course_did_not_create_is_never_deleted(tmp_path: Path) -> None:
    """kind is not installed here: a stand-in lists one cluster, 'theirs', and records calls."""
    calls = tmp_path / "kind-calls"
    path = tmp_path / "path"
    path.mkdir()
    (path / "kind").write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\n[ "$1 $2" = "get clusters" ] && echo theirs\nexit 0\n'
    )
    (path / "kind").chmod(0o755)
    env = {**os.environ, "CFS_HOME": str(tmp_path / "home"),
           "PATH": f"{path}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    result = cli("helpers.cluster", "down", "--name", "theirs", env=env)
    assert result.returncode == 0, result.stderr
    assert "no cluster named 'theirs'; nothing to stop" in result.stdout
    called = calls.read_text() if calls.exists() else ""
    assert "delete" not in called, called


def test_attendee_names_are_checked_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name goes into namespaces, file names and a label selector (`name in (...)`)."""
    with Decoy() as decoy:
        kubeconfig = write_decoy_kubeconfig(tmp_path / "facilitator", decoy.port)
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        monkeypatch.setenv("CFS_HOME", str(tmp_path / "home"))
        for command in ("up", "down"):
            for names in ("../evil", "alice,bob) ,x in (carol", "Alice"):
                assert workshop.main([command, "--attendees", names]) == 2
                lines = capsys.readouterr().err.strip().splitlines()
                assert "cannot be an attendee's name" in lines[0] and len(lines) == 2, lines
                assert lines[1].startswith("next step: "), lines
        assert decoy.connections == 0
    assert not (tmp_path / "home").exists()


def test_attendee_kubeconfigs_go_only_into_a_folder_the_course_made(victim: Path) -> None:
    with pytest.raises(CourseError, match="the course did not make it"):
        workshop.prepare_out_folder(victim)
    fresh = victim.parent / "handouts"
    assert workshop.prepare_out_folder(fresh) == fresh
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    assert workshop.prepare_out_folder(fresh) == fresh  # made by the course: used again


def test_credentials_are_private_without_a_chmod_afterwards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With chmod doing nothing, a file written first and chmod-ed after stays readable by all."""
    monkeypatch.setattr(Path, "chmod", lambda self, mode: None)
    previous = os.umask(0o022)
    try:
        write_private(tmp_path / "secret", "token")
        api = kubernetes.client.ApiClient(kubernetes.client.Configuration(host="https://h:6443"))
        token_file = rbac.token_kubeconfig(api, "a-token", tmp_path / "token.kubeconfig")
    finally:
        os.umask(previous)
    for path in (tmp_path / "secret", token_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


FILE_WRITES = {"write_text", "write_bytes", "write", "dump", "safe_dump", "copy", "copyfile"}
"""Calls that write a file: ``Path.write_text``, a stream's ``write``, ``json.dump``,
``yaml.safe_dump(doc, stream)``, ``shutil.copy``; and ``open()`` for writing."""


def _called(call: ast.Call) -> str:
    """The name a call calls: ``open`` in ``open(...)``, ``chmod`` in ``os.chmod(...)``."""
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")


def _writes(call: ast.Call) -> bool:
    name = _called(call)
    if name in ("dump", "safe_dump"):
        return len(call.args) >= 2  # into a stream, not to a string
    if name == "open":
        modes = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "mode")]
        return any(isinstance(m, ast.Constant) and set(str(m.value)) & set("wax") for m in modes)
    return name in FILE_WRITES


def _private_chmod(call: ast.Call) -> bool:
    """``path.chmod(0o600)``, ``os.chmod(path, 0o600)``, ``os.fchmod(fd, 0o600)``; 0o600 as a
    number or as the owner's read and write bits by name."""
    if _called(call) not in ("chmod", "fchmod"):
        return False
    of_os = isinstance(call.func, ast.Attribute) and getattr(call.func.value, "id", "") == "os"
    modes = call.args[1:2] if of_os else call.args[:1]
    if not modes:
        return False
    if isinstance(modes[0], ast.Constant):
        return modes[0].value == 0o600
    names = {getattr(node, "attr", getattr(node, "id", "")) for node in ast.walk(modes[0])}
    return {"S_IRUSR", "S_IWUSR"} <= names


def _own_calls(scope: ast.AST) -> list[ast.Call]:
    """The calls in ``scope``, not those in the functions defined in it (scopes of their own)."""
    calls, pending = [], list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.Call):
            calls.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return calls


def writes_then_chmods(source: str) -> list[int]:
    """The line of each chmod to 0600 that follows a file written in the same function (or at
    the module's top level): a file written readable by others first, and made private after."""
    tree = ast.parse(source)
    functions = (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    found = set()
    for scope in (tree, *functions):
        calls = _own_calls(scope)
        first_write = min((call.lineno for call in calls if _writes(call)), default=None)
        if first_write is not None:
            found |= {c.lineno for c in calls if _private_chmod(c) and c.lineno > first_write}
    return sorted(found)


WRITE_THEN_CHMOD = {
    "formatted over lines": "path.write_text(\n    yaml.safe_dump(doc)\n)\npath.chmod(0o600)\n",
    "a comment between": "path.write_text(token)\n# the token is a credential\npath.chmod(0o600)\n",
    "a comment after the write": "path.write_text(token)  # a credential\npath.chmod(0o600)\n",
    "os.chmod": "path.write_text(token)\nos.chmod(path, 0o600)\n",
    "by name": "path.write_text(token)\npath.chmod(stat.S_IRUSR | stat.S_IWUSR)\n",
    "bytes": "path.write_bytes(key)\npath.chmod(0o600)\n",
    "open": "with open(path, 'w') as out:\n    out.write(token)\nos.chmod(path, 0o600)\n",
    "yaml into a stream": "with path.open('w') as out:\n    yaml.safe_dump(doc, out)\n"
    "path.chmod(0o600)\n",
    "later in the function": "def save(path, token):\n    path.write_text(token)\n"
    "    log.info('saved')\n    path.chmod(0o600)\n",
}
NOT_A_WRITE_THEN_CHMOD = {
    "the one helper": "write_private(path, token)\n",
    "what another program wrote": "run(['kind', 'export', 'kubeconfig'])\npath.chmod(0o600)\n",
    "a public file": "path.write_text(certificate)\npath.chmod(0o644)\n",
    "chmod first": "path.chmod(0o600)\npath.write_text(token)\n",
    "another function": "def a(path):\n    path.write_text(x)\n\n\n"
    "def b(path):\n    path.chmod(0o600)\n",
}


@pytest.mark.parametrize("source", WRITE_THEN_CHMOD.values(), ids=WRITE_THEN_CHMOD.keys())
def test_the_one_writer_check_sees_a_write_then_a_chmod(source: str) -> None:
    assert writes_then_chmods(source) == [source.count("\n", 0, source.index("chmod")) + 1]


@pytest.mark.parametrize("source", NOT_A_WRITE_THEN_CHMOD.values(),
                         ids=NOT_A_WRITE_THEN_CHMOD.keys())  # fmt: skip
def test_the_one_writer_check_passes_what_is_no_write_then_chmod(source: str) -> None:
    assert writes_then_chmods(source) == []


def test_one_helper_writes_every_credential() -> None:
    """No module writes a file and chmods it to 0600 afterwards: write_private does it."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in ("helpers", "benchmarks", "book")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != ROOT / "helpers" / "private_files.py"  # the one helper
        for line in writes_then_chmods(path.read_text())
    ]
    assert offenders == []


def test_the_create_lock_is_not_world_writable(tmp_path: Path) -> None:
    lock = tmp_path / "create.lock"
    lock.touch()
    lock.chmod(0o666)  # as an older version left it
    with port_picking_lock(lock):
        pass
    assert stat.S_IMODE(lock.stat().st_mode) & 0o002 == 0
    fresh = tmp_path / "fresh.lock"
    with port_picking_lock(fresh):
        pass
    assert stat.S_IMODE(fresh.stat().st_mode) & 0o022 == 0


def test_a_link_in_the_locks_place_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("someone's file\n")
    link = tmp_path / "create.lock"
    link.symlink_to(target)
    with pytest.raises(CourseError, match="is a symbolic link"), port_picking_lock(link):
        pass
    assert target.read_text() == "someone's file\n"


def test_private_folders_are_0700_whatever_the_umask(tmp_path: Path) -> None:
    """mkdir(parents=True) makes the folders above with the umask's 0755: these are 0700."""
    previous = os.umask(0o022)
    try:
        deep = make_private_dirs(tmp_path / "a" / "b" / "c")
        home = CourseHome(tmp_path / "x" / "home")
        home.make_root()
        out = workshop.prepare_out_folder(tmp_path / "y" / "workshop")
    finally:
        os.umask(previous)
    for folder in (tmp_path / "a", tmp_path / "a" / "b", deep, tmp_path / "x", home.root,
                   tmp_path / "y", out):  # fmt: skip
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_up_tightens_what_an_older_version_left_readable(tmp_path: Path) -> None:
    """As measured on a home made before: the home 0755, kwokctl's keys 0644; links untouched."""
    home = CourseHome(tmp_path / "home")
    pki = home.kwok_workdir / "clusters" / "x" / "pki"
    pki.mkdir(parents=True)
    home.root.chmod(0o755)
    keys = [pki / "ca.key", pki / "admin.key", home.kwok_workdir / "clusters" / "x" /
            "kubeconfig.yaml", home.cluster_dir("x") / "kubeconfig"]  # fmt: skip
    home.cluster_dir("x").mkdir(parents=True)
    for key in keys:
        key.write_text("secret\n")
        key.chmod(0o644)
    (pki / "ca.crt").write_text("public\n")
    (pki / "ca.crt").chmod(0o644)
    elsewhere = tmp_path / "someone-elses.key"
    elsewhere.write_text("theirs\n")
    elsewhere.chmod(0o644)
    (pki / "link.key").symlink_to(elsewhere)
    changed = home.tighten()
    assert set(changed) == {home.root, *keys}
    assert stat.S_IMODE(home.root.stat().st_mode) == 0o700
    for key in keys:
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key
    assert stat.S_IMODE((pki / "ca.crt").stat().st_mode) == 0o644  # a certificate is public
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o644  # the link was not followed
    assert home.tighten() == []


@pytest.mark.cluster
def test_the_first_up_makes_the_home_0700_and_every_key_and_kubeconfig_0600(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real first `up` under umask 022: a cluster of its own (another --name and --port) in
    a CFS_HOME that does not exist yet, sharing the built binaries (a build takes 12 minutes),
    stopped at the end. kwokctl alone wrote its keys 0644 and its folders 0750."""
    shared = CourseHome.from_environment().bin_cache.resolve()
    home = CourseHome(tmp_path / "fresh" / "home")
    monkeypatch.setenv("CFS_HOME", str(home.root))
    monkeypatch.setattr(CourseHome, "bin_cache", property(lambda self: shared))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    name = "cfs-private"
    previous = os.umask(0o022)
    try:
        up = ["up", "--backend", "local", "--name", name, "--port", str(port)]
        assert cluster_main(up) == 0, capsys.readouterr()
        os.umask(previous)
        assert stat.S_IMODE(home.root.stat().st_mode) == 0o700
        assert stat.S_IMODE(home.root.parent.stat().st_mode) == 0o700  # made on the way
        private, folders = [], []
        for folder, _, files in os.walk(home.root):
            folders.append(Path(folder))
            private += [Path(folder) / f for f in files
                        if any((Path(folder) / f).match(p) for p in PRIVATE_FILES)]  # fmt: skip
        names = {path.name for path in private}
        assert {"ca.key", "admin.key", "kubeconfig", "kubeconfig.yaml"} <= names, names
        wide = [p for p in private if stat.S_IMODE(p.stat().st_mode) != 0o600]
        assert not wide, [(str(p), oct(p.stat().st_mode)) for p in wide]
        kwok = [f for f in folders if home.kwok_workdir in (f, *f.parents)]
        assert kwok and all(stat.S_IMODE(f.stat().st_mode) == 0o700 for f in kwok), [
            (str(f), oct(f.stat().st_mode)) for f in kwok
        ]
    finally:
        os.umask(previous)
        assert cluster_main(["down", "--name", name]) == 0  # stop what this test started
    assert "is gone" in capsys.readouterr().out
