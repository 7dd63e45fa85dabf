"""A room with nothing to install: JupyterHub on this machine, each attendee an account of it.

``make hub ATTENDEES=alice,bob`` (``python -m helpers.cluster.hub up``), run as
root on one Linux machine that holds the course's cluster (a facilitator's cloud
VM), serves a room whose attendees need only a browser:

* the runtime, built once per machine (:mod:`.runtime`): a Python environment
  with requirements.txt (JupyterHub, JupyterLab, the chapters' packages) and
  configurable-http-proxy from npm, under ``$CFS_HUB_DIR`` (default
  ``/opt/controllers-from-scratch-hub``), root's and read-only for others;
* a read-only copy of the course there (``<hub dir>/<hub>/course``: helpers,
  notebooks, manifests, the Jupyter settings): the attendees' kernels import
  ``helpers`` from it;
* per attendee: the workshop's namespaces, ServiceAccount and roles on the
  cluster (:func:`helpers.cluster.workshop.add_attendee`), an OS account
  ``cfs-<name>`` with a 0700 home (:mod:`.accounts`), their own copy of the
  notebooks in ``~/notebooks`` and their kubeconfig in ``~/.kube/config`` (0600),
  so their kernels run in attendee mode;
* JupyterHub, started in the background (:mod:`.config`): login with the workshop
  code, or a code per attendee; each attendee's JupyterLab runs as their account;
  a server left idle is stopped.

The hub's own state (which accounts it made, the codes, JupyterHub's database,
cookie secret and log) lives in the course's folder (``<course home>/hub/<hub>``),
0700 like the rest of it. ``make hub`` again adds attendees while the hub runs and
renews everyone's token; ``make hub-down`` stops the hub and its servers, removes
the accounts it made (and only those), the attendees' objects on the cluster and
the copy of the course.

The cluster's address is written into the attendees' kubeconfigs. For the
course's local control plane that is a loopback address, which the workshop
accepts only once the running cluster passed
:meth:`helpers.cluster.local.LocalCluster.sharing_problem` (etcd demands a client
certificate, nothing else listens, the course's folder is closed): see
:func:`helpers.cluster.workshop.check_server`.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ...errors import CourseError
from ...home import CourseHome, check_cluster_name
from ...kube import connect
from ...private_files import make_private_dirs, write_private
from .. import processes, workshop
from ..local import free_ports
from ..progress import step
from . import accounts
from .accounts import Account
from .runtime import ROOT, Runtime, ensure_runtime, hub_dir, make_public_dirs

DEFAULT_NAME = "hub"
DEFAULT_PORT = 8000
DEFAULT_IDLE_MINUTES = 60
COURSE_FILES = ("helpers", "notebooks", "manifests", "jupyter", "pyproject.toml",
                "requirements.txt", "kind-config.yaml")  # fmt: skip
"""What the attendees' copy of the course holds: what the chapters import and read."""
CODE_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
"""Codes are read aloud and typed: no 0/o, 1/l/i."""
START_TIMEOUT = 120


def new_code() -> str:
    """A code like ``k7mp-2xdq-9rtw`` (about 59 bits)."""
    letters = "".join(secrets.choice(CODE_ALPHABET) for _ in range(12))
    return "-".join(letters[i : i + 4] for i in range(0, 12, 4))


@dataclass(frozen=True)
class Hub:
    """One hub on this machine: its private state and what its attendees may read."""

    name: str
    home: CourseHome
    root: Path  # hub_dir(): the runtime, and each hub's copy of the course

    @classmethod
    def from_environment(cls, name: str = DEFAULT_NAME) -> Hub:
        return cls(check_cluster_name(name), CourseHome.from_environment(), hub_dir())

    @property
    def private(self) -> Path:
        return self.home.root / "hub" / self.name

    @property
    def public(self) -> Path:
        return self.root / self.name

    @property
    def course(self) -> Path:
        return self.public / "course"

    @property
    def state_file(self) -> Path:
        return self.private / "state.json"

    @property
    def codes_file(self) -> Path:
        return self.private / "codes.json"

    @property
    def log_file(self) -> Path:
        return self.private / "jupyterhub.log"

    @property
    def token_file(self) -> Path:
        """The facilitator's token for JupyterHub's API: list users, start and stop servers."""
        return self.private / "course_token"

    def api(self, state: dict[str, Any], method: str, path: str, body: Any = None) -> Any:
        """Ask JupyterHub's REST API (``/hub/api`` + ``path``) with the facilitator's token."""
        request = urllib.request.Request(
            f"{self.local_url(state)}/hub/api{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token_file.read_text().strip()}"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=30, context=_unverified()) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def add_user(self, state: dict[str, Any], name: str) -> None:
        """Tell the running JupyterHub about attendee ``name`` (it learns the others at start)."""
        try:
            self.api(state, "POST", f"/users/{name}")
        except urllib.error.HTTPError as exc:
            if exc.code != 409:  # 409: it knows them already
                raise

    def remove_user(self, state: dict[str, Any], name: str) -> None:
        """Stop attendee ``name``'s server and forget them, in the running JupyterHub."""
        try:
            self.api(state, "DELETE", f"/users/{name}/server")
        except urllib.error.HTTPError as exc:
            if exc.code not in (400, 404):  # 400: no server runs
                raise
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # a server stops in the background
            try:
                user = self.api(state, "GET", f"/users/{name}")
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    return
                raise
            if not user.get("servers") and not user.get("pending"):
                break
            time.sleep(0.5)
        try:
            self.api(state, "DELETE", f"/users/{name}")
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise

    def start_server(self, state: dict[str, Any], name: str, timeout: float = 300) -> None:
        """Start attendee ``name``'s JupyterLab, as their login would; wait until it is ready."""
        try:
            self.api(state, "POST", f"/users/{name}/server")
        except urllib.error.HTTPError as exc:
            if exc.code != 400:  # 400: it runs already
                raise
        deadline = time.monotonic() + timeout
        while not ((self.api(state, "GET", f"/users/{name}")["servers"].get("") or {})
                   .get("ready")):  # fmt: skip
            if time.monotonic() > deadline:
                raise CourseError(f"{name}'s server did not start in {timeout:g} s.",
                                  f"read {self.log_file}.")  # fmt: skip
            time.sleep(1)

    def load(self) -> dict[str, Any]:
        try:
            return json.loads(self.state_file.read_text())
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            raise CourseError(
                f"{self.state_file} is damaged ({exc}).",
                "look at it; the accounts it lists are cfs-<name> (`getent passwd | grep cfs-`).",
            ) from exc

    def save(self, state: dict[str, Any]) -> None:
        make_private_dirs(self.private)
        self.home.make_root()
        write_private(self.state_file, json.dumps(state, indent=2) + "\n")

    def accounts(self, state: dict[str, Any]) -> dict[str, Account]:
        return {name: Account.from_json(record)
                for name, record in (state.get("attendees") or {}).items()}  # fmt: skip

    def url(self, state: dict[str, Any]) -> str:
        scheme = "https" if state.get("ssl_cert") else "http"
        host = state["ip"] if state["ip"] not in ("0.0.0.0", "") else "<this machine's address>"
        return f"{scheme}://{host}:{state['port']}/"

    def local_url(self, state: dict[str, Any]) -> str:
        scheme = "https" if state.get("ssl_cert") else "http"
        host = "127.0.0.1" if state["ip"] in ("0.0.0.0", "") else state["ip"]
        return f"{scheme}://{host}:{state['port']}"

    def running(self, state: dict[str, Any]) -> processes.Identity | None:
        """JupyterHub's process, if the one this hub started still runs."""
        recorded = processes.Identity.from_json(state.get("process"))
        if recorded is None:
            return None
        now = processes.identify(recorded.pid)
        return now if now is not None and now.same_process(recorded) else None


def install_course(hub: Hub, runtime: Runtime) -> Path:
    """Copy what the attendees' kernels import and read into ``hub.course`` (root's, 0755,
    compiled once so that nobody needs to write there), replacing an older copy."""
    make_public_dirs(hub.public)
    fresh = hub.public / "course.new"
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(mode=0o755)
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "*.pyc")
    for name in COURSE_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, fresh / name, ignore=ignore)
        elif source.exists():
            shutil.copy(source, fresh / name)
    subprocess.run([str(runtime.python), "-m", "compileall", "-q", str(fresh / "helpers")],
                   check=False, capture_output=True, umask=0o022)  # fmt: skip
    for folder, _, files in os.walk(fresh):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder) / name, 0o644)
    old = hub.public / "course.old"
    shutil.rmtree(old, ignore_errors=True)
    if hub.course.exists():
        hub.course.rename(old)
    fresh.rename(hub.course)
    shutil.rmtree(old, ignore_errors=True)
    return hub.course


def give_attendee(
    account: Account, runtime: Runtime, course: Path, kubeconfig: dict[str, Any]
) -> None:
    """The attendee's notebooks (copied once: their work is never replaced) and kubeconfig
    (written each time: a fresh token), written as the attendee."""
    home = Path(account.home)
    accounts.copy_folder_as(account, runtime.python, course / "notebooks", home / "notebooks")
    accounts.write_private_as(
        account, runtime.python, home / ".kube" / "config", yaml.safe_dump(kubeconfig)
    )


def _codes(hub: Hub, login: str, code: str | None, names: list[str]) -> dict[str, Any]:
    try:
        codes = json.loads(hub.codes_file.read_text())
    except (OSError, ValueError):
        codes = {}
    if login == "code":
        if code is not None:
            if len(code) < 8:
                raise CourseError(
                    "The workshop code must have at least 8 characters (JupyterHub's rule).",
                    "choose a longer one, or leave --code out to get one made for you.",
                )
            codes["workshop"] = code
        codes.setdefault("workshop", new_code())
    else:
        given = codes.setdefault("attendees", {})
        for name in names:
            given.setdefault(name, new_code())
    write_private(hub.codes_file, json.dumps(codes, indent=2) + "\n")
    return codes


def _config_text(hub: Hub) -> str:
    return (
        "# Written by `python -m helpers.cluster.hub up`; JupyterHub reads it (jupyterhub -f).\n"
        "from helpers.cluster.hub.config import configure\n\n"
        f"configure(c, {str(hub.private)!r})  # noqa: F821\n"
    )


def _start(hub: Hub, runtime: Runtime, state: dict[str, Any]) -> processes.Identity:
    """Start JupyterHub in the background (root, umask 077, in the private folder)."""
    config = hub.private / "jupyterhub_config.py"
    write_private(config, _config_text(hub))
    if not hub.token_file.exists():
        write_private(hub.token_file, secrets.token_hex(32) + "\n")
    environment = {
        "PATH": f"{runtime.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": str(hub.course),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(hub.private),
    }
    descriptor = os.open(hub.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW,
                         0o600)  # fmt: skip
    with os.fdopen(descriptor, "a") as log:
        log.write(f"\n==> {time.strftime('%Y-%m-%d %H:%M:%S')} starting the hub\n")
        log.flush()
        process = subprocess.Popen(
            [str(runtime.jupyterhub), "-f", str(config)], cwd=hub.private, env=environment,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, umask=0o077,
        )  # fmt: skip
    identity = processes.identify(process.pid)
    if identity is None:
        raise CourseError(f"JupyterHub exited at once; see {hub.log_file}.", "read that log.")
    state["process"] = identity.to_json()
    hub.save(state)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with urllib.request.urlopen(f"{hub.local_url(state)}/hub/health", timeout=5,
                                        context=_unverified()) as answer:  # fmt: skip
                if answer.status == 200:
                    return identity
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            tail = "\n".join(hub.log_file.read_text().splitlines()[-15:])
            raise CourseError(
                f"JupyterHub did not start (its log, {hub.log_file}, ends):\n{tail}",
                f"fix what the log says, then run this again; `python -m helpers.cluster.hub "
                f"stop --name {hub.name}` stops what started.",
            )
        time.sleep(0.5)  # a starting hub announces nothing we could wait on


def _unverified() -> Any:
    import ssl

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # our own hub on this machine, maybe self-signed
    return context


def up(
    hub: Hub,
    names: list[str],
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    port: int = DEFAULT_PORT,
    ip: str = "0.0.0.0",
    login: str = "code",
    code: str | None = None,
    idle_minutes: int = DEFAULT_IDLE_MINUTES,
    token_hours: int = workshop.DEFAULT_TOKEN_HOURS,
    ssl_cert: str | None = None,
    ssl_key: str | None = None,
    out: Any = sys.stdout,
) -> dict[str, Any]:
    """Serve ``names`` (more attendees, if the hub runs already); returns the hub's state.

    Everything is checked before an account is made: root, the names, the cluster (and,
    for a loopback API server, that it may be shared), the hub's folders.
    """
    accounts.require_root()
    attendees = workshop.attendees_for(names)
    for attendee in attendees:
        accounts.account_name(attendee.name)
    if login not in ("code", "codes"):
        raise CourseError(f"Unknown login '{login}'.", "use --login code or --login codes.")
    if (ssl_cert is None) != (ssl_key is None):
        raise CourseError("--ssl-cert and --ssl-key go together.", "give both, or neither.")
    api = connect(kubeconfig, context)
    workshop.check_server(api.configuration.host, api=api)
    runtime = ensure_runtime(hub.root)  # refuses a folder other users could change
    state = hub.load()
    running = hub.running(state)
    if running is None:
        hub_api, proxy_api = free_ports(2)
        state.update(login=login, port=port, ip=ip, idle_minutes=idle_minutes,
                     ssl_cert=ssl_cert, ssl_key=ssl_key, hub_api_port=hub_api,
                     proxy_api_port=proxy_api)  # fmt: skip
    elif (state.get("login"), state.get("port")) != (login, port):
        print(f"    the hub runs already (login {state['login']}, port {state['port']}): its "
              "settings stay; `python -m helpers.cluster.hub stop` first to change them.",
              file=out)  # fmt: skip
    state.update(
        kubeconfig=str(Path(kubeconfig).resolve()) if kubeconfig else None, context=context,
        runtime={"python": str(runtime.python), "singleuser": str(runtime.singleuser),
                 "proxy": str(runtime.proxy)},
        course=str(hub.course), attendees=state.get("attendees") or {},
    )  # fmt: skip
    hub.save(state)
    with step(f"copying the course for the attendees to {hub.course}"):
        install_course(hub, runtime)
    made = hub.accounts(state)
    with step(f"preparing {len(attendees)} attendee(s): accounts, namespaces, kubeconfigs"):
        facts = workshop.prepare_cluster(api)
        for attendee in attendees:
            account = accounts.create(attendee.name, hub.name, made.get(attendee.name))
            state["attendees"][attendee.name] = account.to_json()
            hub.save(state)  # recorded before anything else is made for it
            kubeconfig_document = workshop.add_attendee(
                api, attendee, facts=facts, token_hours=token_hours
            )
            give_attendee(account, runtime, hub.course, kubeconfig_document)
            if running is not None:
                hub.add_user(state, attendee.name)
    codes = _codes(hub, state["login"], code, list(state["attendees"]))
    if running is None:
        with step(f"starting JupyterHub on port {state['port']}"):
            _start(hub, runtime, state)
    print(f"==> the hub serves {len(state['attendees'])} attendee(s) at {hub.url(state)}",
          file=out)  # fmt: skip
    print_codes(state, codes, out)
    print(f"    idle servers stop after {state['idle_minutes']} minutes; tokens last "
          f"{token_hours} hours (`make hub` again renews them); log: {hub.log_file}",
          file=out)  # fmt: skip
    return state


def print_codes(state: dict[str, Any], codes: dict[str, Any], out: Any = sys.stdout) -> None:
    if state["login"] == "code":
        print(f"    login: your name ({', '.join(sorted(state['attendees']))}) and the "
              f"workshop code {codes['workshop']}", file=out)  # fmt: skip
        return
    print("    login: each attendee's name and their own code:", file=out)
    for name in sorted(state["attendees"]):
        print(f"      {name:24} {codes['attendees'][name]}", file=out)


def stop(hub: Hub, state: dict[str, Any]) -> bool:
    """Stop JupyterHub (which stops the attendees' servers and its proxy); True if it ran."""
    identity = hub.running(state)
    if identity is None:
        return False
    processes.stop([identity], grace=60)
    state.pop("process", None)
    hub.save(state)
    return True


def down(hub: Hub, names: list[str] | None = None, *, out: Any = sys.stdout) -> list[str]:
    """Remove attendees ``names`` (default: all, and stop the hub); returns what went.

    Their servers and processes stop, their accounts and homes go (only accounts this hub
    made), and so do their objects on the cluster; with everyone gone, the hub's copy of the
    course and its private state too.
    """
    accounts.require_root()
    state = hub.load()
    if not state:
        print(f"==> no hub named '{hub.name}' here ({hub.private}); nothing to remove.", file=out)
        return []
    made = hub.accounts(state)
    unknown = sorted(set(names or []) - set(made))
    if unknown:
        raise CourseError(
            f"This hub has no attendee {', '.join(unknown)}.",
            f"its attendees: {', '.join(sorted(made)) or 'none'}.",
        )
    everyone = names is None or set(names) == set(made)
    removed: list[str] = []
    if everyone and stop(hub, state):
        removed.append("JupyterHub and the attendees' servers")
    running = None if everyone else hub.running(state)
    for name in sorted(names or made):
        account = made[name]
        if running is not None:
            hub.remove_user(state, name)
        if accounts.remove(account):
            removed.append(f"account {account.name} and {account.home}")
        else:
            print(f"    {account.name} is not the account this hub made any more: left alone.",
                  file=out)  # fmt: skip
        del state["attendees"][name]
        hub.save(state)
    try:
        api = connect(state.get("kubeconfig"), state.get("context"))
        removed += workshop.down(api, sorted(names or made))
        if everyone and not _attendees_left(api):
            removed += workshop.down(api)
    except CourseError as exc:
        print(f"    the cluster's objects for them were not removed: {exc.problem}", file=out)
    if everyone:
        shutil.rmtree(hub.public, ignore_errors=True)
        shutil.rmtree(hub.private, ignore_errors=True)
        removed.append(f"{hub.public} and {hub.private}")
    return removed


def summary(removed: list[str]) -> list[str]:
    """``removed`` with the cluster's objects counted by kind ("28 Namespace(s)")."""
    kinds: dict[str, int] = {}
    lines = []
    for what in removed:
        kind, _, name = what.partition(" ")
        if kind[:1].isupper() and kind.isalpha() and name and "/" not in kind:
            kinds[kind] = kinds.get(kind, 0) + 1
        else:
            lines.append(what)
    return lines + [f"{count} {kind}(s) from the cluster" for kind, count in kinds.items()]


def _attendees_left(api: Any) -> bool:
    """Does any attendee's namespace remain, not counting those being deleted? The ones
    ``workshop.down`` has just deleted are still listed, Terminating, for a while: counted,
    they kept the shared objects (the ClusterRole, the Pod policy, chapter 10's CRD rule)."""
    import kubernetes

    core = kubernetes.client.CoreV1Api(api)
    namespaces = core.list_namespace(label_selector=workshop.ATTENDEE_LABEL).items
    return any(item.metadata.deletion_timestamp is None for item in namespaces)


def status(hub: Hub, out: Any = sys.stdout) -> int:
    state = hub.load()
    if not state:
        print(f"no hub named '{hub.name}' here ({hub.private})", file=out)
        return 1
    running = hub.running(state)
    print(f"hub '{hub.name}': {'running, pid ' + str(running.pid) if running else 'stopped'}"
          f" at {hub.url(state)}", file=out)  # fmt: skip
    try:
        codes = json.loads(hub.codes_file.read_text())
        print_codes(state, codes, out)
    except (OSError, ValueError, KeyError):
        pass
    for name, account in sorted(hub.accounts(state).items()):
        busy = len(accounts.processes_of(account))
        print(f"  {name:24} account {account.name} ({account.home}), {busy} process(es)",
              file=out)  # fmt: skip
    return 0


def _names(args: argparse.Namespace) -> list[str]:
    if getattr(args, "attendees", None):
        return [name.strip() for name in args.attendees.split(",") if name.strip()]
    if getattr(args, "count", None):
        return [f"{args.prefix}-{n:02d}" for n in range(1, args.count + 1)]
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.cluster.hub",
        description="JupyterHub for a room: one account, JupyterLab and namespaces per attendee.",
    )
    parser.add_argument("--name", default=DEFAULT_NAME, help="this hub's name (default: hub)")
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("up", help="start the hub, or add attendees to the running one")
    make.add_argument("--attendees", help="comma-separated names, e.g. alice,bob")
    make.add_argument("--count", type=int, help="N attendees named PREFIX-01 .. PREFIX-N")
    make.add_argument("--prefix", default="attendee", help="for --count (default: attendee)")
    make.add_argument("--kubeconfig", help="the facilitator's kubeconfig (default: as kubectl)")
    make.add_argument("--context", help="its context (default: the current one)")
    make.add_argument("--port", type=int, default=DEFAULT_PORT, help="public port (8000)")
    make.add_argument("--ip", default="0.0.0.0", help="address to listen on (all)")
    make.add_argument("--login", choices=("code", "codes"), default="code",
                      help="code: one workshop code; codes: a code per attendee")  # fmt: skip
    make.add_argument("--code", help="the workshop code (default: one is made)")
    make.add_argument("--idle-minutes", type=int, default=DEFAULT_IDLE_MINUTES,
                      help=f"stop a server idle this long ({DEFAULT_IDLE_MINUTES})")  # fmt: skip
    make.add_argument("--token-hours", type=int, default=workshop.DEFAULT_TOKEN_HOURS,
                      help=f"token lifetime ({workshop.DEFAULT_TOKEN_HOURS})")  # fmt: skip
    make.add_argument("--ssl-cert", help="serve HTTPS with this certificate (and --ssl-key)")
    make.add_argument("--ssl-key", help="the certificate's key")
    clear = commands.add_parser("down", help="remove attendees (all: and stop the hub)")
    clear.add_argument("--attendees", help="comma-separated names (default: everyone)")
    commands.add_parser("stop", help="stop JupyterHub and the servers; keep the accounts")
    commands.add_parser("status", help="the hub, its URL, codes and attendees")
    args = parser.parse_args(argv)
    try:
        hub = Hub.from_environment(args.name)
        if args.command == "up":
            names = _names(args)
            if not names:
                raise CourseError("No attendees named.", "add --attendees a,b,c or --count N.")
            up(hub, names, kubeconfig=args.kubeconfig, context=args.context, port=args.port,
               ip=args.ip, login=args.login, code=args.code, idle_minutes=args.idle_minutes,
               token_hours=args.token_hours, ssl_cert=args.ssl_cert,
               ssl_key=args.ssl_key)  # fmt: skip
        elif args.command == "down":
            removed = down(hub, _names(args) or None)
            for line in summary(removed):
                print(f"    removed {line}")
            print("==> done; namespaces finish deleting by themselves.")
        elif args.command == "stop":
            accounts.require_root()
            state = hub.load()
            print("==> stopped." if state and stop(hub, state) else "==> it was not running.")
        else:
            return status(hub)
    except CourseError as exc:
        print(f"error: {exc.problem}\nnext step: {exc.next_step}", file=sys.stderr)
        return 2
    return 0
