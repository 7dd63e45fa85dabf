"""Is process N still the one we started? Asked before every signal we send.

kwokctl writes each component's process id to a pid file, and the file outlives
the process. Process ids are reused: after a reboot, or once enough processes
have come and gone, the number in a pid file may belong to an editor, a shell,
another cluster's etcd, or another user's program. Sending it SIGTERM because
a file said so would kill the wrong thing.

So a process is ours only when two facts that a reused number cannot fake
match: the executable it runs, and the moment it started (:class:`Identity`).
That moment is read as the kernel keeps it, in clock ticks since boot: the
wall-clock start time psutil reports is the boot time plus those ticks, and
the boot time the kernel reports moves whenever the wall clock is adjusted
(NTP), so two readings of one process can differ by a second or more.
A process we may not inspect (another user's) is not ours, and asking about it
never raises.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

# Two readings of one process's start, in seconds since boot, agree exactly;
# this only absorbs rounding.
SAME_START_SECONDS = 0.05
# Records without a since-boot start (older ones, or systems without /proc) fall
# back to the wall-clock start, which moves with the boot time psutil reads.
SAME_WALL_START_SECONDS = 2.0


@dataclass(frozen=True)
class Identity:
    """One process, told apart from any later process that gets the same number."""

    pid: int
    exe: str  # the executable's real path (symlinks resolved by the kernel)
    started: float  # seconds since the epoch (approximate: see the module's docstring)
    since_boot: float | None = None  # when it started, in seconds since boot (Linux)

    def same_process(self, other: Identity) -> bool:
        if self.pid != other.pid or self.exe != other.exe:
            return False
        if self.since_boot is not None and other.since_boot is not None:
            return abs(self.since_boot - other.since_boot) < SAME_START_SECONDS
        return abs(self.started - other.started) < SAME_WALL_START_SECONDS

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Identity | None:
        """The identity a record holds, or None for a record that is not one."""
        try:
            since_boot = data.get("since_boot")
            return cls(
                int(data["pid"]),
                str(data["exe"]),
                float(data["started"]),
                None if since_boot is None else float(since_boot),
            )
        except (AttributeError, KeyError, TypeError, ValueError):
            return None


def identify(pid: int) -> Identity | None:
    """Who runs as ``pid`` now; None if nobody, a zombie, or a process we may not inspect."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return Identity(pid, process.exe(), process.create_time(), since_boot(pid))
    except (psutil.Error, OSError):  # gone, a zombie, or another user's (AccessDenied)
        return None


def since_boot(pid: int) -> float | None:
    """When ``pid`` started, in seconds since boot, from /proc (None where there is none).

    Field 22 of /proc/PID/stat counts clock ticks from boot to the process's
    start; it never changes for a process, whatever the wall clock does.
    """
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        # The command name (field 2) may hold spaces and parentheses: split after it.
        fields = text.rsplit(")", 1)[1].split()
        return int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def command_line(pid: int) -> list[str]:
    """The process's argv, or [] when it is gone or hidden from us."""
    try:
        return psutil.Process(pid).cmdline()
    except (psutil.Error, OSError):
        return []


def exists(pid: int) -> bool:
    """Some live process (ours or not; a zombie does not count) has this number."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except (psutil.Error, OSError):  # there, but not ours to look at
        return True


def stop(identities: list[Identity], grace: float = 10.0) -> int:
    """Signal each process that is still exactly its ``identity``; return how many were.

    SIGTERM first, and SIGKILL for any that outlives ``grace`` seconds;
    ``grace=0`` sends SIGKILL at once. psutil checks again, right before each
    signal, that the number still belongs to the process we looked at (its
    start time), so a process replaced in between is not hit either.
    """
    targets: list[psutil.Process] = []
    for identity in identities:
        if (now := identify(identity.pid)) is None or not now.same_process(identity):
            continue
        try:
            process = psutil.Process(identity.pid)
            if grace > 0:
                process.terminate()
            else:
                process.kill()
        except (psutil.Error, OSError):
            continue
        targets.append(process)
    survivors = _wait(targets, grace)
    for process in survivors:
        with contextlib.suppress(psutil.Error, OSError):
            process.kill()
    _wait(survivors, 5.0)
    return len(targets)


def _wait(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait until every process has exited (a zombie has); return those still running."""
    deadline = time.monotonic() + timeout
    running = processes
    while running:
        _, running = psutil.wait_procs(running, timeout=min(0.2, timeout))
        running = [process for process in running if _still_running(process)]
        if time.monotonic() >= deadline:
            break
    return running


def _still_running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False
