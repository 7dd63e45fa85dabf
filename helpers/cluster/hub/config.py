"""What JupyterHub loads: the course's spawner and login, from the hub's private state.

``python -m helpers.cluster.hub up`` writes a ``jupyterhub_config.py`` that
calls :func:`configure` with the hub's private folder; JupyterHub (run as root
from the hub's runtime, with the course's read-only copy on ``PYTHONPATH``)
reads the state there at start, and again at every login and every start of a
server, so attendees added or removed while it runs are known at once.

* Login (:class:`WorkshopCodeAuthenticator`): JupyterHub's shared-password
  authenticator, the workshop code shared by all, for the names on the attendee
  list only; or (:class:`AttendeeCodesAuthenticator`) a code per attendee.
* Servers (:class:`CourseSpawner`): JupyterHub's local-process spawner, run as
  the attendee's account (``cfs-<name>``), on their copy of the notebooks, with
  their kubeconfig, the course's packages and settings, and a cap on their
  processes.
* An idle culler (jupyterhub-idle-culler, a hub service) stops a server nobody
  used for the idle time.
"""

from __future__ import annotations

import json
import resource
from pathlib import Path
from secrets import compare_digest
from typing import Any

from jupyterhub.auth import Authenticator
from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
from traitlets import Unicode

MAX_PROCESSES = 4096
"""RLIMIT_NPROC for an attendee's account (threads count): a runaway fork stops there, far
above what a chapter starts (a few controller processes, a few dozen threads)."""


def _state(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def _attendees(state_file: str) -> dict[str, dict[str, Any]]:
    return _state(state_file).get("attendees") or {}


class WorkshopCodeAuthenticator(SharedPasswordAuthenticator):
    """The workshop code (``user_password``) for every name on the attendee list, and no other
    name; the list is read at each login."""

    state_file = Unicode(config=True, help="the hub's state.json")

    def check_allowed(self, username: str, authentication: Any = None) -> bool:
        return username in _attendees(self.state_file)


class AttendeeCodesAuthenticator(Authenticator):
    """Each attendee logs in with their own code (read from the hub's codes.json at each login)."""

    state_file = Unicode(config=True, help="the hub's state.json")
    codes_file = Unicode(config=True, help="the hub's codes.json")

    async def authenticate(self, handler: Any, data: dict[str, str]) -> dict[str, Any] | None:
        name = self.normalize_username(data.get("username", ""))
        codes = json.loads(Path(self.codes_file).read_text()).get("attendees") or {}
        code = codes.get(name)
        if code and compare_digest(data.get("password", "").strip().encode(), code.encode()):
            return {"name": name, "admin": False}
        return None

    def check_allowed(self, username: str, authentication: Any = None) -> bool:
        return username in _attendees(self.state_file)


class CourseSpawner(LocalProcessSpawner):
    """JupyterHub's local-process spawner, for the attendee's account (``cfs-<name>``)."""

    state_file = Unicode(config=True, help="the hub's state.json")

    def _account(self) -> dict[str, Any]:
        account = _attendees(self.state_file).get(self.user.name)
        if account is None:
            raise RuntimeError(f"{self.user.name} is not an attendee of this hub any more")
        return account

    def make_preexec_fn(self, name: str) -> Any:
        become = set_user_setuid(self._account()["name"])

        def preexec() -> None:
            resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))
            become()

        return preexec

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        account = self._account()
        env.update(
            USER=account["name"],
            LOGNAME=account["name"],
            HOME=account["home"],
            SHELL="/bin/bash",
            KUBECONFIG=f"{account['home']}/.kube/config",
        )
        return env


def configure(c: Any, private: str) -> None:
    """Set JupyterHub's configuration ``c`` from the hub's private folder ``private``."""
    folder = Path(private)
    state_file = str(folder / "state.json")
    state = _state(state_file)
    runtime, course = state["runtime"], state["course"]
    login, names = state["login"], sorted(state.get("attendees") or {})
    scheme = "https" if state.get("ssl_cert") else "http"

    c.JupyterHub.bind_url = f"{scheme}://{state['ip']}:{state['port']}/"
    if state.get("ssl_cert"):
        c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = state["ssl_cert"], state["ssl_key"]
    c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{state['hub_api_port']}"
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{state['proxy_api_port']}"
    c.ConfigurableHTTPProxy.command = [runtime["proxy"]]
    c.ConfigurableHTTPProxy.pid_file = str(folder / "proxy.pid")
    c.JupyterHub.db_url = f"sqlite:///{folder / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(folder / "jupyterhub_cookie_secret")
    c.JupyterHub.pid_file = str(folder / "jupyterhub.pid")
    c.JupyterHub.cleanup_servers = True  # the hub stopped: so are the attendees' servers
    c.JupyterHub.template_vars = {
        "announcement_login": "Username: your name as the facilitator wrote it. Password: the "
        + ("workshop code." if login == "code" else "code the facilitator gave you.")
    }

    if login == "code":
        c.JupyterHub.authenticator_class = WorkshopCodeAuthenticator
        codes = json.loads((folder / "codes.json").read_text())
        c.WorkshopCodeAuthenticator.user_password = codes["workshop"]
        c.WorkshopCodeAuthenticator.state_file = state_file
    else:
        c.JupyterHub.authenticator_class = AttendeeCodesAuthenticator
        c.AttendeeCodesAuthenticator.state_file = state_file
        c.AttendeeCodesAuthenticator.codes_file = str(folder / "codes.json")
    c.Authenticator.allowed_users = set(names)  # checked again, live, by check_allowed

    c.JupyterHub.spawner_class = CourseSpawner
    c.CourseSpawner.state_file = state_file
    c.Spawner.cmd = [runtime["singleuser"]]
    c.Spawner.notebook_dir = "~/notebooks"
    c.Spawner.default_url = "/lab"
    c.Spawner.env_keep = ["LANG", "LC_ALL"]
    c.Spawner.environment = {
        "PATH": f"{Path(runtime['python']).parent}:/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": course,
        "JUPYTER_CONFIG_PATH": f"{course}/jupyter",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    c.Spawner.start_timeout = 180  # a busy 2-core machine starts a server in 10-60 s
    c.Spawner.http_timeout = 180

    idle = int(state["idle_minutes"]) * 60
    c.JupyterHub.services = [{
        "name": "idle-culler",
        "command": [runtime["python"], "-m", "jupyterhub_idle_culler", f"--timeout={idle}",
                    f"--cull-every={max(60, idle // 4)}"],
    }]  # fmt: skip
    c.JupyterHub.load_roles = [{
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }]  # fmt: skip
    token = folder / "course_token"
    if token.exists():  # the facilitator's side (`hub up` and `down` while it runs, benchmarks)
        c.JupyterHub.services.append({"name": "course", "api_token": token.read_text().strip()})
        c.JupyterHub.load_roles.append({
            "name": "course", "services": ["course"],
            "scopes": ["list:users", "read:users", "read:servers", "servers", "admin:users"],
        })  # fmt: skip
