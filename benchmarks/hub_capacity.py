"""How many attendees can run chapter 05 at once on this machine's hub, and in how much memory?

Not a timed test: a measurement recorded in benchmarks/RESULTS.md and docs/facilitator.md.

It makes a hub of its own (``capacity``, attendees ``cap-01``, ``cap-02``, ... made as
``make hub`` makes them: accounts, namespaces, kubeconfigs), on the course's cluster (which
must be one the hub may share: started by this version of the course). Then:

1. the chapter's time alone: one attendee runs it, ``--alone`` times, one after another;
2. N = 1, 2, 3, ... attendees at once: each attendee's JupyterLab is started through the
   hub (as their login would start it: they stay running, idle, as in a room), then the
   chapter runs for all N at the same moment, each under strict nbval (every stored output
   matched, their namespace prefix sanitised), as their own account, from their own copy
   of the notebooks, with their kubeconfig and the course on PYTHONPATH, as their kernels
   in JupyterLab would run it;
3. it stops at the first N where a run fails or any attendee's run takes more than twice
   the time alone; the largest N before it is the room this machine held. On a machine
   shared with other work, ``--retries K`` tries a round that was too slow (never one that
   failed) up to K times more when other accounts took more than ``--busy`` of the CPU
   meanwhile; every attempt is reported.

CPU: each run's own (the driving pytest and the kernel, which in a room is the attendee's
kernel), the control plane's meanwhile, and the machine's, so that other work shows. From
the runs alone it extrapolates the room of a machine that does nothing else: N runs at
once need N times a run's CPU (its own and the control plane's) from the machine's cores.

Memory per attendee: the peak, during their run, of the proportional set size (PSS: shared
pages split between the processes sharing them) of their kernel and their JupyterLab
server together (the pytest process that drives the kernel is left out: in a room the
browser drives it). The hub and the control plane are reported once, beside.

Run it as root, on a machine with the course's cluster up (``make up``) and the hub's
runtime (built on the first run, a few minutes):

    sudo .venv/bin/python -m benchmarks.hub_capacity [--max 12] [--alone 2] [--retries 2]

It removes its hub (accounts, homes, namespaces) at the end; ``--keep`` leaves it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from benchmarks.guard import refuse_clusters_not_the_courses
from helpers.cluster import hub as hub_module
from helpers.cluster.hub import Hub, accounts
from helpers.cluster.local import LocalCluster, free_ports
from helpers.errors import CourseError
from helpers.home import DEFAULT_CLUSTER_NAME, CourseHome

ROOT = Path(__file__).resolve().parents[1]
HUB_NAME = "capacity"


@dataclass
class Run:
    attendee: str
    seconds: float
    passed: bool
    summary: str
    cpu: float = 0.0  # seconds of CPU, the driving pytest and the kernel together
    control_plane_cpu: float = 0.0  # seconds of CPU the control plane used meanwhile (alone)
    machine_cpu: float = 0.0  # seconds of CPU the whole machine used meanwhile (alone)
    peak_pss: int = 0
    peak_rss: int = 0


@dataclass
class Round:
    attendees: int
    runs: list[Run]
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    available_drop: int = 0  # bytes: MemAvailable at the start minus its lowest during the round
    limit: float = 0.0
    control_plane_cpu: float = 0.0  # seconds of CPU the control plane used during the round
    machine_cpu: float = 0.0  # seconds of CPU every process of the machine used meanwhile

    @property
    def ok(self) -> bool:
        return all(run.passed and run.seconds <= self.limit for run in self.runs)

    @property
    def others_cpu(self) -> float:
        """CPU seconds of other work meanwhile: the machine's busy time less the runs' and the
        control plane's (other accounts, the hub and the idle JupyterLab servers)."""
        return self.machine_cpu - self.control_plane_cpu - sum(run.cpu for run in self.runs)

    def others_share(self, cores: int) -> float:
        """The part of the machine's CPU other work took while the round ran."""
        return self.others_cpu / (cores * max(run.seconds for run in self.runs))


@dataclass
class Sampler:
    """Samples, once a second, each attendee's kernel and server memory (peaks kept)."""

    accounts: list[accounts.Account]
    peaks: dict[str, tuple[int, int]] = field(default_factory=dict)
    available_at_start: int = 0
    lowest_available: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Sampler:
        self.available_at_start = psutil.virtual_memory().available
        self.lowest_available = self.available_at_start
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.lowest_available = min(self.lowest_available, psutil.virtual_memory().available)
            for account in self.accounts:
                pss = rss = 0
                for process in accounts.processes_of(account):
                    try:
                        if "pytest" in " ".join(process.cmdline()):
                            continue
                        memory = process.memory_full_info()
                    except psutil.Error:
                        continue
                    pss += memory.pss
                    rss += memory.rss
                old = self.peaks.get(account.attendee, (0, 0))
                self.peaks[account.attendee] = (max(old[0], pss), max(old[1], rss))


def control_plane() -> list[psutil.Process]:
    """The course's cluster's processes (CFS_HOME's, verified as its own, not another
    cluster's of the same names on this machine)."""
    running = LocalCluster(CourseHome.from_environment(), DEFAULT_CLUSTER_NAME).running()
    if not running:
        raise CourseError("The course's local control plane is not running.", "`make up` first.")
    return [psutil.Process(pid) for pid in running.values()]


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def machine_cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine since it booted (every core, every account)."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def sanitize_file(folder: Path, names: list[str]) -> Path:
    """tests/nbval-sanitize.cfg, with the attendees' namespace prefix and clean-up masked
    (as tests/test_workshop.py runs chapters as attendees)."""
    path = folder / "sanitize.cfg"
    path.write_text(
        f"[attendee namespaces]\nregex: \\b(?:{'|'.join(names)})-(ch\\d\\d-)\nreplace: \\1\n\n"
        "[attendee clean-up]\nregex: was emptied \\(an attendee keeps their namespaces\\)\n"
        "replace: is being deleted\n\n" + (ROOT / "tests" / "nbval-sanitize.cfg").read_text()
    )
    path.chmod(0o644)
    return path


def run_chapter(
    hub: Hub, state: dict[str, Any], account: accounts.Account, chapter: str, sanitize: Path
) -> Run:
    """The chapter under strict nbval as ``account``, as its kernel in JupyterLab would run."""
    runtime, course = state["runtime"], state["course"]
    notebooks = Path(account.home) / "notebooks"
    env = {
        "HOME": account.home, "USER": account.name, "LANG": "C.UTF-8",
        "PATH": f"{Path(runtime['python']).parent}:/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": course, "JUPYTER_CONFIG_PATH": f"{course}/jupyter",
        "KUBECONFIG": f"{account.home}/.kube/config",
    }  # fmt: skip
    with tempfile.TemporaryFile("w+") as output:
        started = time.monotonic()
        process = subprocess.Popen(
            [runtime["python"], "-m", "pytest", "-p", "no:cacheprovider", "-q", "--nbval",
             "--nbval-sanitize-with", str(sanitize), "--nbval-cell-timeout=300", chapter],
            cwd=notebooks, env=env, user=account.uid, group=account.gid, extra_groups=[],
            umask=0o077, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        # wait4: the CPU time of pytest and of the kernel it started (and reaped) together
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        output.seek(0)
        lines = output.read().strip().splitlines()
    summary = lines[-1] if lines else f"exit {process.returncode}"
    if process.returncode != 0:
        summary = "\n".join(lines[-40:])
    cpu = usage.ru_utime + usage.ru_stime
    return Run(account.attendee, seconds, process.returncode == 0, summary, cpu=cpu)


def alone_run(
    hub: Hub, state: dict[str, Any], account: accounts.Account, chapter: str, sanitize: Path
) -> Run:
    """One run by itself, with the CPU the control plane and the machine spent meanwhile."""
    cluster = control_plane()
    cluster_before, machine_before = cpu_seconds(cluster), machine_cpu_seconds()
    run = run_chapter(hub, state, account, chapter, sanitize)
    run.control_plane_cpu = cpu_seconds(cluster) - cluster_before
    run.machine_cpu = machine_cpu_seconds() - machine_before
    return run


def at_once(
    hub: Hub, state: dict[str, Any], chosen: list[accounts.Account], chapter: str,
    sanitize: Path, limit: float,
) -> Round:  # fmt: skip
    load_before = os.getloadavg()
    cluster = control_plane()
    cluster_before, machine_before = cpu_seconds(cluster), machine_cpu_seconds()
    with Sampler(chosen) as sampler, ThreadPoolExecutor(len(chosen)) as pool:
        runs = list(pool.map(lambda a: run_chapter(hub, state, a, chapter, sanitize), chosen))
    cluster_cpu = cpu_seconds(cluster) - cluster_before
    machine_cpu = machine_cpu_seconds() - machine_before
    for run in runs:
        run.peak_pss, run.peak_rss = sampler.peaks.get(run.attendee, (0, 0))
    drop = max(0, sampler.available_at_start - sampler.lowest_available)
    return Round(len(chosen), runs, load_before, os.getloadavg(), drop, limit,
                 control_plane_cpu=cluster_cpu, machine_cpu=machine_cpu)  # fmt: skip


def mib(value: float) -> str:
    return f"{value / 2**20:.0f} MiB"


def fixed_memory(state: dict[str, Any], hub: Hub) -> dict[str, int]:
    """PSS of the hub (JupyterHub, its proxy and culler) and of the control plane."""
    found = {"hub": 0, "control plane": 0}
    identity = hub.running(state)
    if identity is not None:
        hub_process = psutil.Process(identity.pid)
        for process in [hub_process, *hub_process.children(recursive=True)]:
            try:
                if process.uids().real == 0:  # the servers run as the attendees
                    found["hub"] += process.memory_full_info().pss
            except psutil.Error:
                pass
    for process in control_plane():
        with contextlib.suppress(psutil.Error):
            found["control plane"] += process.memory_full_info().pss
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=12, help="the most attendees tried (12)")
    parser.add_argument("--alone", type=int, default=2, help="runs alone for the baseline (2)")
    parser.add_argument("--chapter", default="05_controller.ipynb")
    parser.add_argument("--factor", type=float, default=2.0,
                        help="a run may take this many times the time alone (2)")  # fmt: skip
    parser.add_argument("--retries", type=int, default=0,
                        help="try a round again this many times when it was too slow while "
                        "other work took more than --busy of the CPU (0)")  # fmt: skip
    parser.add_argument(
        "--busy",
        type=float,
        default=0.1,
        help="the share of the CPU other work may take in a round (0.1)",
    )
    parser.add_argument("--keep", action="store_true", help="leave the hub and its accounts")
    parser.add_argument("--json", type=Path,
                        help="also add the results to the list of runs in this file")  # fmt: skip
    parser.add_argument(
        "--summary",
        type=Path,
        metavar="FILE",
        help="only print the runs recorded in FILE (no cluster needed)",
    )
    args = parser.parse_args(argv)
    if args.summary:
        for result in json.loads(args.summary.read_text()):
            report(result)
        return 0
    refuse_clusters_not_the_courses()
    hub = Hub.from_environment(HUB_NAME)
    names = [f"cap-{n:02d}" for n in range(1, args.max + 1)]
    started = time.time()
    folder = Path(tempfile.mkdtemp(prefix="cfs-capacity-"))  # the sanitizer file, for all
    try:
        kubeconfig = None  # as kubectl finds it: KUBECONFIG, else the course's cluster
        hub_module.up(hub, names[:1], kubeconfig=kubeconfig, port=free_ports(1)[0],
                      ip="127.0.0.1", token_hours=6, out=sys.stderr)  # fmt: skip
        state = hub.load()
        folder.chmod(0o755)
        sanitize = sanitize_file(folder, names)
        hub.start_server(state, names[0])
        first = hub.accounts(state)[names[0]]
        alone = [alone_run(hub, state, first, args.chapter, sanitize) for _ in range(args.alone)]
        for run in alone:
            print(f"alone: {run.seconds:.1f} s ({run.cpu:.1f} s of CPU, the control plane "
                  f"{run.control_plane_cpu:.1f} s, the machine {run.machine_cpu:.1f} s), "
                  f"{'passed' if run.passed else 'FAILED'}", file=sys.stderr)  # fmt: skip
            if not run.passed:
                print(run.summary, file=sys.stderr)
                return 1
        baseline = statistics.median(run.seconds for run in alone)
        limit = args.factor * baseline
        rounds: list[Round] = []
        for count in range(1, args.max + 1):
            if count > 1:
                hub_module.up(hub, names[:count], kubeconfig=kubeconfig, port=state["port"],
                              ip="127.0.0.1", token_hours=6, out=sys.stderr)  # fmt: skip
                state = hub.load()
            for name in names[:count]:
                hub.start_server(state, name)
            chosen = [hub.accounts(state)[name] for name in names[:count]]
            for _attempt in range(1 + args.retries):
                done = at_once(hub, state, chosen, args.chapter, sanitize, limit)
                rounds.append(done)
                slowest = max(run.seconds for run in done.runs)
                share = done.others_share(psutil.cpu_count() or 1)
                print(f"{count} at once: slowest {slowest:.1f} s (limit {limit:.1f} s), "
                      f"{sum(r.passed for r in done.runs)}/{count} passed, peak PSS per "
                      f"attendee {mib(statistics.median(r.peak_pss for r in done.runs))}, "
                      f"other work {share:.0%} of the CPU", file=sys.stderr)  # fmt: skip
                for run in done.runs:
                    if not run.passed:
                        print(f"--- {run.attendee}:\n{run.summary}", file=sys.stderr)
                # Too slow while other accounts' work took a real part of the machine: the
                # round says more about them than about the room, so it is tried again
                # (every attempt is reported). A failed run is never retried.
                if done.ok or not all(r.passed for r in done.runs) or share < args.busy:
                    break
            if not done.ok:
                break
        fixed = fixed_memory(state, hub)
    except CourseError as exc:
        print(f"error: {exc.problem}\nnext step: {exc.next_step}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if not args.keep and hub.state_file.exists():
            hub_module.down(hub, out=sys.stderr)
    result = record(args, alone, rounds, baseline, limit, fixed, started)
    if args.json:  # a list of runs: each run is added to those the file holds
        runs = json.loads(args.json.read_text()) if args.json.exists() else []
        args.json.write_text(json.dumps([*runs, result], indent=1) + "\n")
    report(result)
    return 0


def record(
    args: argparse.Namespace, alone: list[Run], rounds: list[Round], baseline: float,
    limit: float, fixed: dict[str, int], started: float,
) -> dict[str, Any]:  # fmt: skip
    """What a run measured, as it is kept in the --json file (the figures are derived from it
    by :func:`summary`)."""
    cores = psutil.cpu_count() or 1
    return {
        "command": "python -m benchmarks.hub_capacity " + " ".join(sys.argv[1:]),
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "minutes": (time.time() - started) / 60,
        "chapter": args.chapter, "factor": args.factor, "max_tried": args.max,
        "cores": cores, "memory_total": psutil.virtual_memory().total,
        "baseline_seconds": baseline, "limit_seconds": limit, "fixed_pss": fixed,
        "alone": [{"seconds": run.seconds, "cpu": run.cpu, "passed": run.passed,
                   "control_plane_cpu": run.control_plane_cpu,
                   "machine_cpu": run.machine_cpu} for run in alone],
        "rounds": [{"attendees": r.attendees, "ok": r.ok, "load_before": r.load_before,
                    "load_after": r.load_after, "available_drop": r.available_drop,
                    "control_plane_cpu": r.control_plane_cpu, "machine_cpu": r.machine_cpu,
                    "others_cpu": r.others_cpu, "others_share": r.others_share(cores),
                    "runs": [{"attendee": run.attendee, "seconds": run.seconds,
                              "cpu": run.cpu, "passed": run.passed, "peak_pss": run.peak_pss,
                              "peak_rss": run.peak_rss} for run in r.runs]} for r in rounds],
    }  # fmt: skip


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """The figures of one recorded run: what was measured, and what it extrapolates to."""
    cores, rounds, alone = result["cores"], result["rounds"], result["alone"]
    passing = [r for r in rounds if r["ok"]]
    best = max((r["attendees"] for r in passing), default=0)
    cpu = statistics.median(run["cpu"] for run in alone)
    cluster_cpu = statistics.median(run["control_plane_cpu"] for run in alone)
    per_run_cpu = cpu + cluster_cpu
    # Extrapolated, not measured. A run alone is CPU-bound: it takes about its CPU time (its
    # own and the control plane's for it), one core's worth at a time, on a machine doing
    # nothing else; on a busy one it takes longer, so the time alone on a quiet machine is
    # taken as the smaller of the fastest run alone and that CPU time. N runs at once need N
    # times that CPU from `cores` cores, and end within `factor` x the time alone while
    # N <= factor x quiet time x cores / CPU a run.
    quiet_seconds = min(min(run["seconds"] for run in alone), per_run_cpu)
    by_cpu = int(result["factor"] * quiet_seconds * cores / per_run_cpu + 1e-9)
    chosen = [r for r in rounds if r["attendees"] == best and r["ok"]] or rounds[:1]
    pss = statistics.median(run["peak_pss"] for r in chosen for run in r["runs"])
    fixed = result["fixed_pss"]
    reserve = fixed["hub"] + fixed["control plane"] + 2 * 2**30  # and 2 GiB for the system
    return {
        "measured_room": best, "measured_per_core": best / cores,
        "most_tried": max((r["attendees"] for r in rounds), default=0),
        "memory_per_attendee": pss, "cpu_alone": cpu, "control_plane_cpu_alone": cluster_cpu,
        "quiet_seconds": quiet_seconds, "extrapolated_room": by_cpu,
        "extrapolated_per_core": by_cpu / cores,
        "room_by_memory": int((result["memory_total"] - reserve) / pss) if pss else 0,
    }  # fmt: skip


def report(result: dict[str, Any]) -> None:
    """A recorded run as a table and its figures (Markdown, as benchmarks/RESULTS.md has it)."""
    figures, cores = summary(result), result["cores"]
    alone = result["alone"]
    print(
        f"\n{result['started']}, `{result['command']}`: chapter {result['chapter']} took "
        + ", ".join(f"{run['seconds']:.1f} s" for run in alone)
        + f" alone ({figures['cpu_alone']:.1f} s of CPU for the attendee's side and "
        f"{figures['control_plane_cpu_alone']:.1f} s for the control plane, medians); a run "
        f"may take {result['limit_seconds']:.1f} s ({result['factor']:g}x the median)\n"
    )
    print("| attendees at once | slowest Run All | CPU per run (median) | control plane CPU | "
          "other work's CPU (share) | passed | peak PSS per attendee (median, max) | "
          "MemAvailable drop | 1-min load before, after |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in result["rounds"]:
        peaks = [run["peak_pss"] for run in r["runs"]]
        slowest = max(run["seconds"] for run in r["runs"])
        others = r["machine_cpu"] - r["control_plane_cpu"] - sum(run["cpu"] for run in r["runs"])
        print(f"| {r['attendees']} | {slowest:.1f} s{'' if r['ok'] else ' (over)'} | "
              f"{statistics.median(run['cpu'] for run in r['runs']):.1f} s | "
              f"{r['control_plane_cpu']:.1f} s | {others:.1f} s "
              f"({others / (cores * slowest):.0%}) | "
              f"{sum(run['passed'] for run in r['runs'])}/{r['attendees']} | "
              f"{mib(statistics.median(peaks))}, {mib(max(peaks))} | "
              f"{mib(r['available_drop'])} | "
              f"{r['load_before'][0]:.1f}, {r['load_after'][0]:.1f} |")  # fmt: skip
    fixed = result["fixed_pss"]
    best = figures["measured_room"]
    print(
        f"\nmeasured: {best} attendee(s) at once within the limit on {cores} cores "
        f"({figures['measured_per_core']:.1f} per core)"
        + (" (the most tried)" if best == result["max_tried"] else "")
        + f"; memory per attendee (kernel and JupyterLab server, peak PSS) "
        f"{mib(figures['memory_per_attendee'])}; the hub {mib(fixed['hub'])}, the control "
        f"plane {mib(fixed['control plane'])}"
    )
    per_run = figures["cpu_alone"] + figures["control_plane_cpu_alone"]
    print(
        f"extrapolated: on a machine doing nothing else, CPU allows "
        f"{figures['extrapolated_room']} at once ({result['factor']:g} x "
        f"{figures['quiet_seconds']:.1f} s x {cores} cores / {per_run:.1f} s of CPU a run), "
        f"{figures['extrapolated_per_core']:.1f} per core; memory allows "
        f"{figures['room_by_memory']} ({mib(result['memory_total'])} less the hub, the "
        f"control plane and 2 GiB, / {mib(figures['memory_per_attendee'])})"
    )


if __name__ == "__main__":
    sys.exit(main())
