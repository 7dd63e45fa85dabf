"""One operating-system account per attendee, made by the hub and only those removed by it.

An attendee ``alice`` works as the account ``cfs-alice`` (:data:`PREFIX`): their
JupyterLab, kernels and terminal run as that user, whose home is 0700, so they
cannot read each other's work or kubeconfig, nor the facilitator's course folder.

"Never touch what is not the course's": the hub records each account it made
(name, uid, home) in its private state, and marks it in the account's comment
field (:data:`MARK`). An account of that name that the hub did not make is
refused before anything happens; removing one checks the record, the uid and
the mark, and stops only processes running as that uid.

Files the hub puts in an attendee's home (their notebooks, their kubeconfig)
are written by a process running as the attendee (:func:`run_as`), never by
root: a link the attendee planted in their home can then reach only what the
attendee could reach anyway.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from ...errors import CourseError

PREFIX = "cfs-"
"""Every account the hub makes is called ``cfs-<attendee>``."""
MARK = "controllers-from-scratch hub"
"""The start of the comment (GECOS) field of every account the hub makes."""
HOME_BASE = Path("/home")
LONGEST_ACCOUNT = 32
"""useradd's limit on an account's name."""


@dataclass(frozen=True)
class Account:
    """An account the hub made: what its record holds."""

    attendee: str
    name: str
    uid: int
    gid: int
    home: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Account:
        return cls(**{key: data[key] for key in ("attendee", "name", "uid", "gid", "home")})


def account_name(attendee: str) -> str:
    """The account attendee ``attendee`` works as; a CourseError when it would be too long."""
    name = f"{PREFIX}{attendee}"
    if len(name) > LONGEST_ACCOUNT:
        raise CourseError(
            f"'{attendee}' is too long for an account name ({name} has {len(name)} characters, "
            f"and accounts have at most {LONGEST_ACCOUNT}).",
            f"pick a name of at most {LONGEST_ACCOUNT - len(PREFIX)} characters.",
        )
    return name


def require_root() -> None:
    """A CourseError unless this runs as root on a machine with useradd and userdel."""
    if os.geteuid() != 0:
        raise CourseError(
            "The hub makes an account for each attendee and runs their servers as them, which "
            "needs root.",
            "run it as root: `sudo -i`, then `make hub ...` in the checkout.",
        )
    missing = [tool for tool in ("useradd", "userdel") if shutil.which(tool) is None]
    if missing:
        raise CourseError(
            f"The hub needs {' and '.join(missing)} to make the attendees' accounts.",
            "run it on a Linux machine with the passwd tools (Debian/Ubuntu: `apt-get install "
            "passwd`).",
        )


def mark(hub: str) -> str:
    return f"{MARK} {hub}"


def create(attendee: str, hub: str, recorded: Account | None) -> Account:
    """Attendee ``attendee``'s account: made now (home 0700), or the one this hub recorded.

    An account of that name the hub has no record of, or whose uid or comment differs from
    the record, is not the hub's: a CourseError, and it is left alone.
    """
    name = account_name(attendee)
    try:
        existing = pwd.getpwnam(name)
    except KeyError:
        existing = None
    if existing is not None:
        if recorded is None or not is_ours(recorded):
            raise CourseError(
                f"An account named {name} exists and this hub did not make it, so the hub leaves "
                "it alone.",
                f"give the attendee another name, or remove that account yourself if it is a "
                f"leftover (`userdel -r {name}`).",
            )
        Path(recorded.home).chmod(0o700)
        return recorded
    home = HOME_BASE / name
    if home.exists() or home.is_symlink():
        raise CourseError(
            f"{home} exists, and no account {name} owns it: the hub will not make an account "
            "whose home holds someone else's files.",
            f"give the attendee another name, or move {home} away.",
        )
    done = subprocess.run(
        ["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash",
         "--user-group", "--comment", f"{mark(hub)}, attendee {attendee}", name],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise CourseError(
            f"useradd could not make the account {name}: {done.stderr.strip()}",
            "read the message above; `id " + name + "` shows whether the account exists.",
        )
    record = pwd.getpwnam(name)
    os.chmod(record.pw_dir, 0o700)
    return Account(attendee, name, record.pw_uid, record.pw_gid, record.pw_dir)


def is_ours(account: Account) -> bool:
    """Is the account called ``account.name`` still the one the hub made (uid, home, mark)?"""
    try:
        now = pwd.getpwnam(account.name)
    except KeyError:
        return False
    return (
        now.pw_uid == account.uid
        and now.pw_dir == account.home
        and now.pw_gecos.startswith(MARK)
        and account.name.startswith(PREFIX)
    )


def processes_of(account: Account) -> list[psutil.Process]:
    """Every process running as the account's uid."""
    found = []
    for process in psutil.process_iter(["uids"]):
        uids = process.info["uids"]
        if uids is not None and account.uid in (uids.real, uids.effective):
            found.append(process)
    return found


def stop_processes(account: Account, grace: float = 10.0) -> int:
    """Stop every process of the account (SIGTERM, then SIGKILL); returns how many there were."""
    running = processes_of(account)
    for process in running:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    _, alive = psutil.wait_procs(running, timeout=grace)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=5)
    return len(running)


def remove(account: Account) -> bool:
    """Stop the account's processes and delete it with its home; False when it is no longer
    the hub's (then it is left alone) or already gone."""
    if not is_ours(account):
        return False
    stop_processes(account)
    for _ in range(3):
        done = subprocess.run(["userdel", "--remove", account.name], capture_output=True,
                              text=True, check=False)  # fmt: skip
        if done.returncode in (0, 12):  # 12: the home could not be removed (gone already)
            return True
        time.sleep(1)  # a process that started between the stop and userdel: stop it again
        stop_processes(account, grace=2)
    raise CourseError(
        f"userdel could not remove {account.name}: {done.stderr.strip()}",
        f"`ps -u {account.name}` shows what still runs as it; stop that, then run this again.",
    )


def run_as(account: Account, command: list[str], stdin: str | None = None) -> str:
    """Run ``command`` as the account (its uid, gid and groups, in its home, umask 077)."""
    done = subprocess.run(
        command, input=stdin, capture_output=True, text=True, check=False, cwd=account.home,
        user=account.uid, group=account.gid, extra_groups=[], umask=0o077,
        env={"HOME": account.home, "USER": account.name, "PATH": "/usr/bin:/bin",
             "LANG": "C.UTF-8"},
    )  # fmt: skip
    if done.returncode != 0:
        raise CourseError(
            f"`{' '.join(command[:3])} ...` as {account.name} failed: {done.stderr.strip()}",
            f"look at {account.home} (it belongs to {account.name}).",
        )
    return done.stdout


WRITE_PRIVATE = """
import os, sys
path = sys.argv[1]
os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
os.fchmod(fd, 0o600)
with os.fdopen(fd, "w") as out:
    out.write(sys.stdin.read())
"""


def write_private_as(account: Account, python: Path, path: Path, text: str) -> None:
    """Write ``text`` to ``path`` in the account's home, as the account (with ``python``, one
    the account may run), mode 0600."""
    run_as(account, [str(python), "-c", WRITE_PRIVATE, str(path)], stdin=text)


def copy_folder_as(account: Account, python: Path, source: Path, target: Path) -> bool:
    """Copy ``source`` (readable by everyone) to ``target`` as the account, unless ``target``
    exists (an attendee's work is never overwritten); True if it was copied."""
    script = (
        "import shutil, sys, os\n"
        "if not os.path.lexists(sys.argv[2]):\n"
        "    shutil.copytree(sys.argv[1], sys.argv[2], ignore=shutil.ignore_patterns("
        "'__pycache__', '.ipynb_checkpoints'))\n"
        "    print('copied')\n"
    )
    return run_as(account, [str(python), "-c", script, str(source), str(target)]) != ""
