"""``down`` signals a process only when it is verifiably one the cluster started.

A pid file outlives its process: after a reboot, or once the kernel has handed
out enough new process ids, the number kwokctl wrote down may belong to an
editor, a shell or another user's program. These tests lay out kwokctl's folder
the way kwokctl does (kwok.yaml naming each component's binary, a pid file per
component) with real processes behind it: copies of ``sleep`` play the
components, so no cluster is needed and nothing but our own processes is ever
at risk.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml

from helpers.cluster import processes
from helpers.cluster.local import LocalCluster
from helpers.cluster.processes import Identity
from helpers.home import CourseHome

ROOT = Path(__file__).resolve().parents[1]
NAME = "cfs-pids"
HOUR = 3600.0


class FakeComponents:
    """kwokctl's folder for one cluster whose components are copies of ``sleep``."""

    def __init__(self, home: CourseHome, name: str, binaries: Path) -> None:
        self.cluster = LocalCluster(home, name)
        self.binaries = binaries
        self.started: list[subprocess.Popen[bytes]] = []
        kwok_dir = self.cluster.kwok_dir
        for folder in ("bin", "pids", "logs"):
            (kwok_dir / folder).mkdir(parents=True, exist_ok=True)
        home.make_cluster_dir(name)
        home.state_file(name).write_text('{"backend": "local"}')  # as `up` writes it first
        self.components: list[dict[str, object]] = []

    def add(self, component: str) -> Path:
        """Declare ``component`` in kwok.yaml, its binary linked from the (fake) bin cache."""
        cached = self.binaries / component
        if not cached.exists():
            shutil.copy(shutil.which("sleep") or "/bin/sleep", cached)
        link = self.cluster.kwok_dir / "bin" / component
        link.symlink_to(cached)
        definition = {"name": component, "binary": str(link), "args": ["300"]}
        self.components.append({**definition, "workDir": str(self.cluster.kwok_dir)})
        document = {"kind": "KwokctlConfiguration", "components": self.components}
        (self.cluster.kwok_dir / "kwok.yaml").write_text(yaml.safe_dump(document))
        return link

    def start(self, component: str) -> subprocess.Popen[bytes]:
        """Start the component as kwokctl does: exec its binary, then write the pid file."""
        link = self.cluster.kwok_dir / "bin" / component
        process = subprocess.Popen([str(link), "300"], start_new_session=True)
        self.started.append(process)
        self.pid_file(component).write_text(str(process.pid))
        return process

    def pid_file(self, component: str) -> Path:
        return self.cluster.kwok_dir / "pids" / f"{component}.pid"

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
            process.wait()


@pytest.fixture
def fake(course_home: CourseHome, tmp_path: Path) -> Iterator[FakeComponents]:
    binaries = tmp_path / "bin-cache-entry"
    binaries.mkdir()
    components = FakeComponents(course_home, NAME, binaries)
    yield components
    components.stop_all()


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """A program that is none of the cluster's business (say, one started after a reboot)."""
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield process
    process.kill()
    process.wait()


def down(home: CourseHome, name: str = NAME) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "helpers.cluster", "down", "--name", name],
        cwd=ROOT, env={**os.environ, "CFS_HOME": str(home.root)},
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def alive(process: subprocess.Popen[bytes]) -> bool:
    """Running, and not merely a zombie waiting for us to collect its exit status."""
    return process.poll() is None


def written_an_hour_ago(path: Path) -> None:
    """The pid file was written before the reboot that freed its number."""
    then = time.time() - HOUR
    os.utime(path, (then, then))


def test_a_reused_pid_is_left_alone(
    fake: FakeComponents, stranger: subprocess.Popen[bytes]
) -> None:
    fake.add("kube-apiserver")
    fake.pid_file("kube-apiserver").write_text(str(stranger.pid))
    written_an_hour_ago(fake.pid_file("kube-apiserver"))

    result = down(fake.cluster.home)

    assert result.returncode == 0, result.stdout + result.stderr
    assert alive(stranger), "down killed a process the cluster never started"
    assert f"pid {stranger.pid}" in result.stdout
    assert "left it alone" in result.stdout
    assert not fake.cluster.kwok_dir.exists()
    assert "is gone (0 processes stopped)" in result.stdout


@pytest.mark.parametrize("cache", ["present", "wiped"])
def test_components_kwokctl_started_are_stopped(fake: FakeComponents, cache: str) -> None:
    """A cluster started before identities were recorded: kwok.yaml and the pid files decide.

    "wiped": the bin cache was deleted while the cluster ran (``rm -rf``
    ~/.controllers-from-scratch/bin); the kernel then reports the executable
    as deleted, and the process is still ours to stop.
    """
    for component in ("etcd", "kube-apiserver"):
        fake.add(component)
    processes = [fake.start("etcd"), fake.start("kube-apiserver")]
    if cache == "wiped":
        shutil.rmtree(fake.binaries)

    result = down(fake.cluster.home)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "is gone (2 processes stopped)" in result.stdout
    for process in processes:
        assert process.wait(timeout=5) is not None


def test_another_clusters_component_with_the_same_binary_is_left_alone(
    course_home: CourseHome, tmp_path: Path
) -> None:
    """After a reboot, cluster A's pid file names the etcd cluster B runs from the same cache."""
    shared_cache = tmp_path / "shared-bin-cache"
    shared_cache.mkdir()
    a = FakeComponents(course_home, "cfs-a", shared_cache)
    b = FakeComponents(course_home, "cfs-b", shared_cache)
    try:
        a.add("etcd")
        b.add("etcd")
        b_etcd = b.start("etcd")
        a.pid_file("etcd").write_text(str(b_etcd.pid))
        written_an_hour_ago(a.pid_file("etcd"))

        result = down(course_home, "cfs-a")

        assert result.returncode == 0, result.stdout + result.stderr
        assert alive(b_etcd), "cluster A's down killed cluster B's etcd"
        assert b.cluster.running() == {"etcd": b_etcd.pid}
    finally:
        a.stop_all()
        b.stop_all()


def test_a_recorded_identity_rejects_a_later_process_with_that_number(
    fake: FakeComponents,
) -> None:
    """The identity recorded at start (executable and start time) outranks kwok.yaml."""
    fake.add("etcd")
    etcd = fake.start("etcd")
    fake.cluster.record_identities()
    assert fake.cluster.running() == {"etcd": etcd.pid}
    recorded = fake.cluster.identities_file
    document = json.loads(recorded.read_text())
    document["etcd"]["started"] -= HOUR  # the process we started ran an hour earlier
    document["etcd"]["since_boot"] -= HOUR
    recorded.write_text(json.dumps(document))

    assert fake.cluster.running() == {}
    assert "etcd not running" in (fake.cluster.health_problem() or "")
    result = down(fake.cluster.home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert alive(etcd)


def test_an_older_record_without_a_boot_relative_start_falls_back_to_kwokctls_files(
    fake: FakeComponents,
) -> None:
    """A record written before starts were kept in ticks since boot holds only the wall-clock
    start, which drifts with the boot time: when it disagrees, kwok.yaml and the pid file decide
    (the process runs that binary and started before its pid file was written)."""
    fake.add("etcd")
    etcd = fake.start("etcd")
    fake.cluster.record_identities()
    recorded = fake.cluster.identities_file
    document = json.loads(recorded.read_text())
    del document["etcd"]["since_boot"]
    document["etcd"]["started"] -= 3.0  # the boot time moved by more than the tolerance
    recorded.write_text(json.dumps(document))

    assert fake.cluster.running() == {"etcd": etcd.pid}
    result = down(fake.cluster.home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not alive(etcd), "down left a component of its own cluster running"


def test_stop_component_leaves_a_stranger_alone(
    fake: FakeComponents, stranger: subprocess.Popen[bytes]
) -> None:
    fake.add("kube-scheduler")
    fake.pid_file("kube-scheduler").write_text(str(stranger.pid))
    written_an_hour_ago(fake.pid_file("kube-scheduler"))

    fake.cluster.stop_component("kube-scheduler")

    assert alive(stranger)


# -- a process of another user ----------------------------------------------------------


def other_users_process() -> tuple[int, int | None]:
    """``(pid, uid to become)``: a process we may not inspect, and who we must be to see so.

    As root every process is open to us, so a child process gives up root
    (becomes ``nobody``) and looks at a root-owned one. As anyone else, a
    process of another user (pid 1 is root's) is already out of reach.
    """
    if os.geteuid() == 0:
        return -1, pwd.getpwnam("nobody").pw_uid
    mine = os.getuid()
    for process in psutil.process_iter(["uids"]):
        if process.info["uids"] and process.info["uids"].real != mine:
            return process.pid, None
    pytest.skip("no process of another user on this machine to point a pid file at")


def run_as(uid: int | None, action: object) -> tuple[int, str]:
    """Run ``action()`` in a child that became ``uid`` (or in this process); exit code, output."""
    if uid is None:
        try:
            action()  # type: ignore[operator]
        except Exception as exc:
            return 1, f"{type(exc).__name__}: {exc}"
        return 0, ""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the child: drop root, act, report, and leave without pytest's cleanup
        code = 0
        sys.stdout = sys.stderr = os.fdopen(write_end, "w")
        try:
            os.setgid(uid)
            os.setuid(uid)
            action()  # type: ignore[operator]
        except BaseException as exc:
            print(f"{type(exc).__name__}: {exc}", flush=True)
            code = 1
        sys.stdout.flush()
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as output:
        text = output.read()
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status), text


def test_a_pid_of_another_user_neither_raises_nor_is_signalled(tmp_path: Path) -> None:
    target, uid = other_users_process()
    owned: subprocess.Popen[bytes] | None = None
    if target == -1:
        owned = subprocess.Popen(["sleep", "300"], start_new_session=True)
        target = owned.pid
    # A course folder the child may write to, outside pytest's root-only tmp folder.
    root = Path(tempfile.mkdtemp(prefix="cfs-other-user-"))
    try:
        home = CourseHome(root)
        fake = FakeComponents(home, NAME, root)
        fake.add("kube-controller-manager")
        fake.pid_file("kube-controller-manager").write_text(str(target))
        written_an_hour_ago(fake.pid_file("kube-controller-manager"))
        if uid is not None:
            for path in [root, *root.rglob("*")]:
                os.lchown(path, uid, uid)

        code, output = run_as(uid, lambda: LocalCluster(home, NAME).down())

        assert code == 0, output
        assert "left it alone" in output or uid is None
        assert psutil.pid_exists(target)
        if owned is not None:
            assert alive(owned)
    finally:
        if owned is not None:
            owned.kill()
            owned.wait()
        shutil.rmtree(root, ignore_errors=True)


def test_a_moved_boot_time_does_not_make_a_process_a_stranger() -> None:
    """psutil's start time is the boot time plus ticks, and the boot time moves with the wall
    clock (NTP): a second later the same process read 1 s later. The ticks never move."""
    now = processes.identify(os.getpid())
    assert now is not None and now.since_boot is not None
    recorded = Identity.from_json({**now.to_json(), "started": now.started - 1.0})
    assert recorded is not None and recorded.same_process(now)
    later_twin = Identity.from_json({**now.to_json(), "since_boot": now.since_boot + 1.0})
    assert later_twin is not None and not later_twin.same_process(now)
    legacy = Identity.from_json({"pid": now.pid, "exe": now.exe, "started": now.started - 1.0})
    assert legacy is not None and legacy.since_boot is None and legacy.same_process(now)
