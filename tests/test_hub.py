"""``make hub``: a room on one machine, each attendee an account of it, kept apart.

The first tests need nothing: how accounts are named and guarded, the logins, what
JupyterHub is told. The rest start a room of their own, as ``make hub`` does: a local
control plane started by this version of the course (in a course folder of its own,
under a folder other users may enter, so that only the course folder's own 0700 keeps
them out), JupyterHub on a free port with the workshop code, and two attendees with
fresh names, each an OS account ``cfs-<name>``. Then:

* from an attendee's OS account, every port the control plane listens on either refuses
  the connection or demands a credential (etcd: a client certificate; the API server: a
  token), the files holding those credentials cannot be read, nor anything in the
  facilitator's course folder, the hub's private state or the other attendee's home;
* in Chromium, both attendees log in, run chapter 04 at the same time, and each sees
  their own namespaces and is refused the other's;
* ``hub down`` removes the accounts, their servers and processes, and their objects.

They make OS accounts, so they need root and useradd (skipped with the reason otherwise,
failed under ``CI=true``, as the browser tests are), Node.js for the proxy, and the
course's built control plane. The hub's runtime (a Python environment with
requirements.txt, and configurable-http-proxy) is built once per machine outside the
checkout, in ``$CFS_HUB_DIR`` (default /opt/controllers-from-scratch-hub): about three
minutes the first time.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from helpers import kube
from helpers.cluster import hub as hub_module
from helpers.cluster import workshop
from helpers.cluster.bootstrap import foo_crd_drift
from helpers.cluster.hub import Hub, accounts
from helpers.cluster.hub.runtime import check_owned_by_root, hub_dir
from helpers.cluster.local import LocalCluster, listening_ports
from helpers.errors import CourseError
from helpers.home import CourseHome

ROOT = Path(__file__).resolve().parents[1]


def room_problem() -> str | None:
    """Why a room cannot be made here, or None."""
    if os.geteuid() != 0:
        return "they make OS accounts, which needs root"
    missing = [tool for tool in ("useradd", "userdel", "npm") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not found"
    if not CourseHome.from_environment().bin_cache.exists():
        return "the local control plane is not built (`make up` builds it)"
    return None


def need_a_room(what: str) -> None:
    problem = room_problem()
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} must run in CI, but {problem}")
    pytest.skip(f"{what} skipped: {problem}")


# -- without a room -----------------------------------------------------------------------


def test_an_attendee_works_as_an_account_named_after_them() -> None:
    assert accounts.account_name("alice") == "cfs-alice"
    with pytest.raises(CourseError, match="too long for an account name"):
        accounts.account_name("a" * 29)


def test_an_account_the_hub_did_not_make_is_refused_and_never_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """root exists on every machine, and no hub made it: as an attendee's account it is
    refused before useradd runs; handed to `remove`, it is left alone."""
    monkeypatch.setattr(accounts, "PREFIX", "")
    ran = []
    monkeypatch.setattr(accounts.subprocess, "run", lambda *a, **k: ran.append(a))
    with pytest.raises(CourseError, match="exists and this hub did not make it"):
        accounts.create("root", "hub", recorded=None)
    fake_record = accounts.Account("root", "root", 0, 0, "/root")
    with pytest.raises(CourseError, match="exists and this hub did not make it"):
        accounts.create("root", "hub", recorded=fake_record)  # its comment lacks the mark
    assert accounts.remove(fake_record) is False
    assert ran == []


def test_the_runtime_folder_must_be_roots_alone(tmp_path: Path) -> None:
    """What the hub runs as root and as every attendee must not be changeable by others."""
    if os.geteuid() != 0:
        pytest.skip("the folders here are root's only when the test runs as root")
    folder = tmp_path / "runtime"
    folder.mkdir(mode=0o755)
    check_owned_by_root(folder)
    folder.chmod(0o777)
    with pytest.raises(CourseError, match="can be changed by a user other than root"):
        check_owned_by_root(folder / "venv")


def test_a_node_older_than_the_proxy_declares_is_refused_with_a_sentence() -> None:
    """npm installs configurable-http-proxy on an older Node.js with a warning only."""
    from helpers.cluster.hub.runtime import NODE_MAJOR, check_node

    check_node(f"v{NODE_MAJOR}.0.0")
    check_node("v24.11.1")
    for version in ("v18.19.1", "v12.22.9", ""):
        with pytest.raises(CourseError, match=f"needs Node.js {NODE_MAJOR} or newer"):
            check_node(version)


def test_the_hubs_python_is_one_every_account_may_run() -> None:
    """A virtual environment runs its base interpreter where it is installed: one under root's
    home (pyenv's) would leave the attendees without Python."""
    if os.geteuid() != 0:
        pytest.skip("trying a Python as another account needs root")
    from helpers.cluster.hub.runtime import NOBODY, base_python

    python, version = base_python()
    assert tuple(map(int, version.split(".")[:2])) >= (3, 11)
    done = subprocess.run([python, "-c", "import venv"], user=NOBODY, group=NOBODY,
                          extra_groups=[], cwd="/", check=False)  # fmt: skip
    assert done.returncode == 0


def test_a_loopback_server_is_allowed_only_when_that_cluster_may_be_shared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hub's case: attendees on this machine, the local control plane's loopback address.
    Allowed when the running cluster passes its check, refused with the reason otherwise."""

    class Api:
        configuration = type("C", (), {"host": "https://127.0.0.1:6443", "ssl_ca_cert": None})

    answers = iter([None, "its etcd answers without a client certificate"])
    monkeypatch.setattr(workshop, "sharing_problem", lambda api: next(answers))
    server = "https://127.0.0.1:6443"
    assert workshop.check_server(server, api=Api()) == server
    with pytest.raises(CourseError, match="its etcd answers without a client certificate"):
        workshop.check_server(server, api=Api())
    with pytest.raises(CourseError, match="no cluster was named to check"):
        workshop.check_server(server)


def test_a_cluster_an_older_version_started_may_not_be_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its saved configuration gives etcd plain HTTP: refused before any port is looked at."""
    home = CourseHome(tmp_path / "home")
    home.make_root()
    cluster = LocalCluster(home, "old")
    cluster.kwok_dir.mkdir(parents=True)
    (cluster.kwok_dir / "kwok.yaml").write_text(json.dumps({
        "kind": "KwokctlConfiguration", "options": {"etcdPort": 40123},
        "components": [{"name": "etcd", "args": [
            "--advertise-client-urls=http://127.0.0.1:40123"]}]}))  # fmt: skip
    monkeypatch.setattr(LocalCluster, "_running", lambda self: {"etcd": object()})
    assert cluster.etcd_url == "http://127.0.0.1:40123"
    problem = cluster.sharing_problem()
    assert problem and problem.startswith("its etcd answers without a client certificate")


def write_state(folder: Path, names: list[str], codes: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    state = {
        "login": "code" if "workshop" in codes else "codes", "ip": "127.0.0.1", "port": 8000,
        "hub_api_port": 8081, "proxy_api_port": 8001, "idle_minutes": 30,
        "course": "/opt/course", "runtime": {"python": "/opt/venv/bin/python",
        "singleuser": "/opt/venv/bin/jupyterhub-singleuser", "proxy": "/opt/chp"},
        "attendees": {name: {"attendee": name, "name": f"cfs-{name}", "uid": 4242, "gid": 4242,
                             "home": f"/home/cfs-{name}"} for name in names},
    }  # fmt: skip
    (folder / "state.json").write_text(json.dumps(state))
    (folder / "codes.json").write_text(json.dumps(codes))
    return folder


def test_jupyterhub_is_told_the_course_s_login_spawner_and_culler(tmp_path: Path) -> None:
    pytest.importorskip("jupyterhub", reason="requirements.txt installs it (`make setup`)")
    from traitlets.config import Config

    from helpers.cluster.hub import config

    folder = write_state(tmp_path / "hub", ["alice", "bob"], {"workshop": "k7mp-2xdq-9rtw"})
    c = Config()
    config.configure(c, str(folder))
    assert c.JupyterHub.authenticator_class is config.WorkshopCodeAuthenticator
    assert c.WorkshopCodeAuthenticator.user_password == "k7mp-2xdq-9rtw"
    assert c.JupyterHub.spawner_class is config.CourseSpawner
    assert c.Spawner.cmd == ["/opt/venv/bin/jupyterhub-singleuser"]
    assert c.Spawner.env_keep == ["LANG", "LC_ALL"]  # not the hub's PYTHONPATH or KUBECONFIG
    assert c.Spawner.environment["PYTHONPATH"] == "/opt/course"
    assert c.JupyterHub.hub_bind_url == "http://127.0.0.1:8081"
    assert c.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:8001"
    (culler,) = c.JupyterHub.services
    assert "--timeout=1800" in culler["command"]
    assert set(c.JupyterHub.load_roles[0]["scopes"]) >= {"delete:servers", "read:users:activity"}


def test_the_workshop_code_logs_in_the_attendees_on_the_list_and_nobody_else(
    tmp_path: Path,
) -> None:
    pytest.importorskip("jupyterhub", reason="requirements.txt installs it (`make setup`)")
    from helpers.cluster.hub import config

    folder = write_state(tmp_path / "hub", ["alice"], {"workshop": "k7mp-2xdq-9rtw"})
    login = config.WorkshopCodeAuthenticator(
        user_password="k7mp-2xdq-9rtw", state_file=str(folder / "state.json")
    )

    def who(name: str, code: str) -> str | None:
        model = asyncio.run(login.get_authenticated_user(None, {"username": name,
                                                                 "password": code}))  # fmt: skip
        return model["name"] if model else None

    assert who("alice", "k7mp-2xdq-9rtw") == "alice"
    assert who("alice", "wrong-code") is None
    assert who("mallory", "k7mp-2xdq-9rtw") is None  # not on the list
    write_state(folder, ["alice", "bob"], {"workshop": "k7mp-2xdq-9rtw"})  # `make hub` again
    assert who("bob", "k7mp-2xdq-9rtw") == "bob"  # known at once, without a restart


def test_each_attendee_logs_in_with_their_own_code_only(tmp_path: Path) -> None:
    pytest.importorskip("jupyterhub", reason="requirements.txt installs it (`make setup`)")
    from helpers.cluster.hub import config

    codes = {"attendees": {"alice": "aaaa-aaaa-aaaa", "bob": "bbbb-bbbb-bbbb"}}
    folder = write_state(tmp_path / "hub", ["alice", "bob"], codes)
    login = config.AttendeeCodesAuthenticator(
        state_file=str(folder / "state.json"), codes_file=str(folder / "codes.json")
    )

    def who(name: str, code: str) -> str | None:
        model = asyncio.run(login.get_authenticated_user(None, {"username": name,
                                                                 "password": code}))  # fmt: skip
        return model["name"] if model else None

    assert who("alice", "aaaa-aaaa-aaaa") == "alice"
    assert who("bob", "aaaa-aaaa-aaaa") is None  # Alice's code is not Bob's
    assert who("bob", "bbbb-bbbb-bbbb") == "bob"
    write_state(folder, ["alice"], codes)  # `make hub-down ATTENDEES=bob`
    assert who("bob", "bbbb-bbbb-bbbb") is None


def test_codes_are_long_and_unambiguous() -> None:
    codes = {hub_module.new_code() for _ in range(50)}
    assert len(codes) == 50
    for code in codes:
        assert len(code) == 14 and code.count("-") == 2
        assert not set(code.replace("-", "")) & set("01ilo")


# -- a room of its own ----------------------------------------------------------------------


@dataclass
class Room:
    cluster: LocalCluster
    hub: Hub
    state: dict[str, Any]
    code: str
    names: list[str]

    @property
    def url(self) -> str:
        return self.hub.local_url(self.state)

    def account(self, name: str) -> accounts.Account:
        return self.hub.accounts(self.state)[name]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def room() -> Iterator[Room]:
    need_a_room("the hub's tests")
    shared_bin = CourseHome.from_environment().bin_cache.resolve()
    base = Path(tempfile.mkdtemp(prefix="cfs-hub-test-", dir="/tmp"))
    base.chmod(0o755)  # anyone may enter: only the course folder's own mode keeps them out
    home = CourseHome(base / "home")
    home.make_root()
    home.bin_cache.symlink_to(shared_bin)
    env = {**os.environ, "CFS_HOME": str(home.root)}
    name = "cfs-hub-test"
    command = [sys.executable, "-m", "helpers.cluster"]
    tag = uuid.uuid4().hex[:4]
    hub = Hub(f"test-{tag}", home, hub_dir())
    names = [f"ha-{tag}", f"hb-{tag}"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CFS_HOME", str(home.root))
        try:
            started = subprocess.run(
                [*command, "up", "--backend", "local", "--name", name, "--port", str(free_port())],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
            )  # fmt: skip
            assert started.returncode == 0, started.stdout + started.stderr
            cluster = LocalCluster(home, name)
            assert cluster.sharing_problem() is None
            state = hub_module.up(hub, names, kubeconfig=str(cluster.kubeconfig),
                                  port=free_port(), ip="127.0.0.1", token_hours=1)  # fmt: skip
            code = json.loads(hub.codes_file.read_text())["workshop"]
            yield Room(cluster, hub, state, code, names)
        finally:
            if hub.state_file.exists():
                hub_module.down(hub)
            subprocess.run([*command, "down", "--name", name], cwd=ROOT, env=env,
                           capture_output=True, timeout=300, check=False)  # fmt: skip
            shutil.rmtree(base, ignore_errors=True)


PROBE = r"""
import json, os, socket, ssl, sys, urllib.error, urllib.request
todo = json.load(sys.stdin)
context = ssl.create_default_context()
context.check_hostname, context.verify_mode = False, ssl.CERT_NONE

class Stay(urllib.request.HTTPRedirectHandler):  # a redirect (to a login page) is the answer
    def redirect_request(self, *args, **kwargs):
        return None

opener = urllib.request.build_opener(Stay, urllib.request.HTTPSHandler(context=context))

def ask(url, body=None):
    request = urllib.request.Request(url, data=body)
    try:
        with opener.open(request, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError as exc:
        return f"{type(exc).__name__}: {str(exc)[:100]}"

ports = {}
for port in todo["ports"]:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
    except OSError as exc:
        ports[port] = {"connect": f"{type(exc).__name__}: {exc}"}
        continue
    ports[port] = {path: ask(f"https://127.0.0.1:{port}{path}", body) for path, body in (
        ("/api/v1/namespaces", None), ("/api/v1/secrets", None), ("/metrics", None),
        ("/debug/pprof/", None), ("/v3/kv/range", b'{"key": "L3JlZ2lzdHJ5Lw=="}'))}
    ports[port]["plain HTTP"] = ask(f"http://127.0.0.1:{port}/v3/kv/range",
                                    b'{"key": "L3JlZ2lzdHJ5Lw=="}')
    ports[port]["hub API"] = ask(f"http://127.0.0.1:{port}/hub/api/users")
    ports[port]["proxy API"] = ask(f"http://127.0.0.1:{port}/api/routes")
    ports[port]["their JupyterLab"] = ask(f"http://127.0.0.1:{port}{todo['theirs']}")
files = {}
for path in todo["files"]:
    try:
        os.listdir(path) if os.path.isdir(path) else open(path, "rb").read(1)
        files[path] = "read"
    except OSError as exc:
        files[path] = type(exc).__name__
print(json.dumps({"ports": ports, "files": files}))
"""


def test_from_an_attendees_account_every_port_needs_a_credential_they_cannot_read(
    room: Room,
) -> None:
    """What the attendee's terminal can do on this machine: connect to each port the control
    plane listens on (and the hub's own API and proxy API ports, and the other attendee's
    JupyterLab), and open the files that hold the credentials those ports demand. A port
    either refuses the connection, or refuses a client without a certificate (etcd), or
    answers every request for data with 401 or 403 (the API server without a token; the
    hub's APIs without theirs) or a redirect to the login (JupyterLab); no request gets data.
    Every credential file, the facilitator's course folder, the hub's private state and the
    other attendee's home are closed to them; their own kubeconfig and the course are not."""
    cluster, me, other = room.cluster, room.account(room.names[0]), room.account(room.names[1])
    control_plane = listening_ports(cluster._running())
    assert {component for component, _ in control_plane} == {"kube-apiserver", "etcd"}
    assert len(control_plane) == 3, control_plane  # the API server, etcd's client and peer ports
    hub_ports = [room.state["hub_api_port"], room.state["proxy_api_port"]]
    room.hub.start_server(room.state, other.attendee)  # their JupyterLab and its port
    their_ports = sorted({c.laddr.port for process in accounts.processes_of(other)
                          for c in process.net_connections("inet")
                          if c.status == "LISTEN"})  # fmt: skip
    assert their_ports, "the other attendee's JupyterLab listens nowhere"
    pki, home = cluster.kwok_dir / "pki", cluster.home
    theirs = Path(other.home)
    closed = [home.root, home.kubeconfig(cluster.name), cluster.kwok_dir / "kubeconfig.yaml",
              pki / "admin.key", pki / "ca.key", cluster.kwok_dir / "etcd", room.hub.private,
              room.hub.codes_file, theirs, theirs / ".kube" / "config"]  # fmt: skip
    open_to_them = [Path(me.home) / ".kube" / "config", room.hub.course / "helpers" / "kube.py"]
    request = {"ports": [port for _, port in control_plane] + hub_ports + their_ports,
               "files": [str(path) for path in closed + open_to_them],
               "theirs": f"/user/{other.attendee}/api/contents"}  # fmt: skip
    python = room.state["runtime"]["python"]
    seen = json.loads(accounts.run_as(me, [python, "-c", PROBE], json.dumps(request)))
    report = json.dumps(seen, indent=1)

    def granted(answer: object) -> bool:
        return isinstance(answer, int) and 200 <= answer < 300

    for port, answers in seen["ports"].items():
        assert not any(granted(answer) for answer in answers.values()), f"port {port}: {report}"
    for component, port in control_plane:
        answers = seen["ports"][str(port)]
        https = [answers[path] for path in ("/api/v1/namespaces", "/v3/kv/range", "/metrics")]
        if component == "etcd":  # no certificate, no TLS session: not a single HTTP answer
            assert all(isinstance(a, str) for a in https), f"{port}: {report}"
        else:
            assert all(a in (401, 403) for a in https), f"{port}: {report}"
    for port in hub_ports:
        answers = seen["ports"][str(port)]
        assert answers["hub API"] in (401, 403) or answers["proxy API"] in (401, 403), report
    server_port = [p for p in their_ports if seen["ports"][str(p)]["their JupyterLab"] != 404]
    assert any(seen["ports"][str(p)]["their JupyterLab"] in (302, 401, 403)
               for p in server_port), report  # fmt: skip
    for path in closed:
        assert seen["files"][str(path)] == "PermissionError", f"{path}: {report}"
    for path in open_to_them:
        assert seen["files"][str(path)] == "read", f"{path}: {report}"


def open_notebook(page: Any, url: str) -> None:
    """Open a notebook in a fresh workspace and wait until its kernel has answered the page
    (its kernel_info_reply on the websocket): before that, Run All may run nothing, or the
    indicator's "busy" may be the kernel starting, not the cells running."""
    from tests.chromium import IDLE

    replies: list[bool] = []

    def on_frame(payload: bytes | str) -> None:
        data = payload if isinstance(payload, bytes) else payload.encode()
        if b"kernel_info_reply" in data:
            replies.append(True)

    page.on("websocket", lambda socket: socket.on("framereceived", on_frame))
    page.goto(f"{url}?reset")
    page.wait_for_selector(IDLE, timeout=180_000)
    deadline = time.monotonic() + 120
    while not replies:  # Playwright delivers frames while the page waits
        assert time.monotonic() < deadline, f"{url}: no kernel info reply in 120 s"
        page.wait_for_timeout(100)
    page.wait_for_selector(IDLE, timeout=60_000)


def test_two_attendees_log_in_run_chapter_04_at_once_and_see_only_their_namespaces(
    room: Room,
) -> None:
    """In Chromium, as the room sees it: each attendee logs in with their name and the
    workshop code, gets JupyterLab on their own copy of the notebooks, and runs chapter 04
    there, both at once. Each chapter works in the attendee's namespace and ends without an
    error; each kernel runs as the attendee's account; a small notebook of theirs then lists
    each attendee's chapter 04 namespace with their kubeconfig: theirs answers, the other's
    is forbidden, and so is the cluster's list of namespaces."""
    from tests.chromium import BUSY, IDLE, launched, run_all

    check = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None,
                        "outputs": [], "id": "c0", "source": [
        "import kubernetes\n",
        "from helpers import kube\n",
        "core = kubernetes.client.CoreV1Api(kube.connect())\n",
        "def answer(call):\n",
        "    try:\n",
        "        call()\n",
        "        return 'allowed'\n",
        "    except kubernetes.client.exceptions.ApiException as exc:\n",
        "        return f'refused {exc.status}'\n",
        f"for name in {room.names!r}:\n",
        "    print(f'{name}-ch04-workqueue:', answer(lambda: core.list_namespaced_config_map("
        "f'{name}-ch04-workqueue')))\n",
        "print('all namespaces:', answer(core.list_namespace))\n"]}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    python = Path(room.state["runtime"]["python"])
    # Render every cell, not only those in view (JupyterLab 4 skips the others by default):
    # the chapter's first outputs are read after its last cell ran.
    settings = ".jupyter/lab/user-settings/@jupyterlab/notebook-extension/tracker"
    for name in room.names:
        account, home = room.account(name), Path(room.account(name).home)
        for path, text in (
            (home / "notebooks" / "whose.ipynb", json.dumps(check)),
            (home / f"{settings}.jupyterlab-settings", '{"windowingMode": "none"}'),
        ):
            accounts.write_private_as(account, python, path, text)  # fmt: skip

    with launched("the hub's browser test") as browser:
        pages: dict[str, Any] = {}
        try:
            for name in room.names:
                page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                page.goto(f"{room.url}/hub/login")
                page.fill("#username_input", name)
                page.fill("#password_input", room.code)
                page.click("#login_submit")
                page.wait_for_url(f"**/user/{name}/lab**", timeout=240_000)
                pages[name] = page
            stranger = browser.new_context().new_page()
            stranger.goto(f"{room.url}/hub/login")
            stranger.fill("#username_input", "mallory")
            stranger.fill("#password_input", room.code)
            stranger.click("#login_submit")
            stranger.wait_for_selector(".login_error, #login_error, .alert", timeout=30_000)
            assert "/hub/login" in stranger.url  # the code alone, for a name not on the list: no

            started = time.monotonic()
            for name, page in pages.items():
                open_notebook(page, f"{room.url}/user/{name}/lab/tree/04_workqueue.ipynb")
            for page in pages.values():
                run_all(page)
            outputs = {}
            for name, page in pages.items():
                page.wait_for_selector(IDLE, timeout=600_000)
                page.wait_for_function(f"!document.querySelector({BUSY.split(' >>')[0]!r})")
                outputs[name] = page.locator(".jp-OutputArea-output").all_inner_texts()
                errors = page.locator(
                    ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                ).all_inner_texts()
                assert not errors, f"{name}: {errors[0][:800]}"
            seconds = time.monotonic() - started

            kernels = {}
            for name in room.names:
                account = room.account(name)
                kernels[name] = [p.pid for p in accounts.processes_of(account)
                                 if "ipykernel_launcher" in " ".join(p.cmdline())]  # fmt: skip
            answers = {}
            for name, page in pages.items():
                open_notebook(page, f"{room.url}/user/{name}/lab/tree/whose.ipynb")
                run_all(page)
                page.wait_for_selector(IDLE, timeout=120_000)
                page.wait_for_selector(".jp-OutputArea-output:has-text('all namespaces')")
                answers[name] = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())

        except Exception as exc:
            shots, dialogs = [], []
            for name, page in pages.items():
                shot = Path(tempfile.gettempdir()) / f"hub-{name}.png"
                page.screenshot(path=str(shot), full_page=True)
                shots.append(str(shot))
                dialogs += [f"{name}: {text}" for text in
                            page.locator(".jp-Dialog").all_inner_texts()]  # fmt: skip
            raise AssertionError(f"{str(exc)[:1500]}\ndialogs: {dialogs}\nscreenshots: "
                                 f"{', '.join(shots)}") from exc  # fmt: skip

    print(f"chapter 04 by two attendees at once in the hub: {seconds:.0f} s")
    for name in room.names:
        (other,) = set(room.names) - {name}
        text = "\n".join(outputs[name])
        assert f"working in namespace {name}-ch04-workqueue" in text, text[:2000]
        assert f"namespace {name}-ch04-workqueue was emptied" in text, text[-2000:]
        assert other not in text, f"{name} saw {other}'s name: {text[:2000]}"
        assert kernels[name], f"no kernel of {name}'s ran as their account"
        assert f"{name}-ch04-workqueue: allowed" in answers[name], answers[name]
        assert f"{other}-ch04-workqueue: refused 403" in answers[name], answers[name]
        assert "all namespaces: refused 403" in answers[name], answers[name]


def test_hub_down_removes_the_accounts_their_servers_and_their_objects(room: Room) -> None:
    """Last in this file: the room goes. Before, the idle culler runs beside the hub."""
    hub, state = room.hub, room.hub.load()
    running = hub.running(state)
    assert running is not None
    culler = [child.cmdline() for child in children_of(running.pid)
              if "jupyterhub_idle_culler" in " ".join(child.cmdline())]  # fmt: skip
    assert culler, "the idle culler does not run"
    made = hub.accounts(state)
    removed = hub_module.down(hub)
    assert any("JupyterHub" in what for what in removed), removed
    for account in made.values():
        with pytest.raises(KeyError):
            accounts.pwd.getpwnam(account.name)
        assert not Path(account.home).exists()
        assert not accounts.processes_of(account)
    assert hub.running(state) is None
    assert not hub.private.exists() and not hub.public.exists()
    api = kube.connect(room.cluster.kubeconfig)
    core = kubernetes.client.CoreV1Api(api)
    selector = f"{workshop.ATTENDEE_LABEL} in ({','.join(room.names)})"
    left = [ns for ns in core.list_namespace(label_selector=selector).items
            if not ns.metadata.deletion_timestamp]  # fmt: skip
    assert not left, [ns.metadata.name for ns in left]
    accounts_left = core.list_namespaced_service_account(workshop.FACILITATOR_NAMESPACE).items
    assert not [a for a in accounts_left if a.metadata.name.startswith("attendee-h")]
    # With the last attendee gone, so are the shared objects: the Foo CRD is sample-controller's
    # again (the chapters' stored outputs were recorded on it), the ClusterRole is gone.
    assert foo_crd_drift(api) == []
    rbac = kubernetes.client.RbacAuthorizationV1Api(api)
    assert workshop.CLUSTER_ROLE not in [r.metadata.name for r in rbac.list_cluster_role().items]


def children_of(pid: int) -> list[Any]:
    import psutil

    return psutil.Process(pid).children(recursive=True)
