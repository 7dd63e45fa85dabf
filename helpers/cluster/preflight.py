"""``make preflight``: are this machine and this cluster ready for the course? In seconds.

Run before a workshop (by each attendee, with their kubeconfig) or before a
first ``make course``. Each row is ``ok`` or ``problem`` with one next step;
the exit status is 0 when no row is a problem, 1 otherwise, so a script (or
a facilitator collecting results) can use it. ``helpers/startup_checks.py`` is a
different thing: the controller program's own check at start-up (chapter 08b).

What it looks at: Python and the pinned packages, JupyterLab and the kernel
the notebooks use, the cluster (answers, ``/readyz``, version, Nodes Ready),
the Foo CRD, every permission the chapters use (one SelfSubjectAccessReview
per verb and resource, in each chapter's namespace; in attendee mode the
attendee's namespaces, and no cluster-wide writes), etcd access (the local
control plane's; without it chapters 01 to 03 say what they cannot show), and
free disk space.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import kubernetes
from kubernetes.client.exceptions import ApiException

from .. import kube, workshop_mode
from ..apierrors import explain
from ..errors import CourseError
from ..home import CourseHome
from ..startup_checks import Permission

ROOT = Path(__file__).resolve().parents[2]
MIN_PYTHON = (3, 11)
MIN_FREE_GB = 2.0
FOO_GROUP_VERSION = "samplecontroller.k8s.io/v1alpha1"
FOO_CRD = "foos.samplecontroller.k8s.io"


@dataclass(frozen=True)
class Row:
    """One line of the table: what was checked, ok or not, what was seen, what to do."""

    check: str
    ok: bool
    seen: str
    next_step: str = ""


@dataclass(frozen=True)
class Need(Permission):
    """One permission a chapter uses (chapter 08b's :class:`Permission`), and which chapters."""

    chapters: str = ""


def _needs(verbs: str, resource: str, group: str = "", chapters: str = "") -> list[Need]:
    return [Need(verb, resource, group, chapters=chapters) for verb in verbs.split()]


# What the chapters do inside their own namespace (collected from their cells).
NAMESPACED_NEEDS: list[Need] = [
    *_needs("get list watch create update patch delete", "configmaps", "", "00-05, 10"),
    *_needs("get list watch create delete", "podtemplates", "", "01-03"),
    *_needs("get list watch delete", "pods", "", "07, 10"),
    Need("patch", "pods", "", "status", chapters="07"),
    *_needs("list watch create patch", "events", "", "05-10"),
    *_needs("get list watch create update patch delete", "deployments", "apps", "03, 05-10"),
    *_needs("get list watch", "replicasets", "apps", "07"),
    *_needs(
        "get list watch create update patch delete", "foos", "samplecontroller.k8s.io", "00, 05-10"
    ),
    Need("update", "foos", "samplecontroller.k8s.io", "status", chapters="05-09"),
    Need("patch", "foos", "samplecontroller.k8s.io", "status", chapters="10"),
    *_needs("get list watch create update", "leases", "coordination.k8s.io", "08, 08a"),
    *_needs("get create", "serviceaccounts", "", "08b"),
    Need("create", "serviceaccounts", "", "token", chapters="08b"),
    *_needs("get create update patch", "roles", "rbac.authorization.k8s.io", "08b"),
    *_needs("get create update patch", "rolebindings", "rbac.authorization.k8s.io", "08b"),
]
# Read at the cluster scope by every learner (attendees get them from the workshop's ClusterRole).
CLUSTER_READS: list[Need] = [
    Need("list", "nodes", "", chapters="00, 07"),
    Need("get", "customresourcedefinitions", "apiextensions.k8s.io", chapters="00, 05, 06, 10"),
]
# Only outside attendee mode: the chapters make and remove namespaces, change the CRD, and
# install chapter 08b's ClusterRole; a workshop's facilitator does these for attendees.
CLUSTER_WRITES: list[Need] = [
    # Binding a Pod chooses its node; chapter 07's exercise 3 says it cannot check an attendee.
    Need("create", "pods", "", "binding", chapters="07"),
    Need("create", "namespaces", chapters="all"),
    Need("delete", "namespaces", chapters="all"),
    Need("update", "customresourcedefinitions", "apiextensions.k8s.io", chapters="06, 10"),
    *_needs("create update patch delete", "clusterroles", "rbac.authorization.k8s.io", "08b"),
    *_needs(
        "create update patch delete", "clusterrolebindings", "rbac.authorization.k8s.io", "08b"
    ),
]


def python_rows() -> list[Row]:
    """Python's version, and each package pinned in requirements.txt as installed here."""
    version = ".".join(map(str, sys.version_info[:3]))
    rows = [
        Row(
            "python",
            sys.version_info[:2] >= MIN_PYTHON,
            f"{version} at {sys.executable}",
            "install Python 3.11 or newer and run `make setup`",
        ),
    ]
    wrong = []
    pins = 0
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" not in line:
            continue
        pins += 1
        name, wanted = (part.strip() for part in line.split("=="))
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "missing"
        if have != wanted:
            wrong.append(f"{name} {have} (wants {wanted})")
    seen = f"all {pins} pinned versions installed" if not wrong else "; ".join(wrong)
    rows.append(
        Row(
            "packages",
            not wrong,
            seen,
            "run `make setup` (or pip install -r requirements.txt in this environment)",
        )
    )
    return rows


def jupyter_rows() -> list[Row]:
    """JupyterLab installed, and a ``python3`` kernel that runs this very Python."""
    try:
        lab = f"JupyterLab {metadata.version('jupyterlab')}"
    except metadata.PackageNotFoundError:
        return [Row("jupyterlab", False, "not installed", "run `make setup`")]
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        return [
            Row("jupyterlab", True, lab),
            Row("kernel", False, "no python3 kernel", "run `make setup`"),
        ]
    runs = spec.argv[0]
    same = runs in ("python", "python3", sys.executable) or (
        Path(runs).resolve() == Path(sys.executable).resolve()
    )
    return [
        Row("jupyterlab", True, lab),
        Row(
            "kernel",
            same,
            f"python3 runs {runs}",
            "start JupyterLab from this environment (`make lab`), so the kernel sees its packages",
        ),
    ]


def disk_row(home: CourseHome) -> Row:
    """Free space where the course writes (its home: binaries, clusters, logs)."""
    where = home.root if home.root.exists() else Path.home()
    free = shutil.disk_usage(where).free / 1e9
    return Row(
        "disk",
        free >= MIN_FREE_GB,
        f"{free:.1f} GB free at {where}",
        f"free at least {MIN_FREE_GB:.0f} GB (the binaries and a cluster's etcd need it)",
    )


def cluster_rows(kubeconfig: str | None, context: str | None) -> list[Row]:
    """Reachable, ready, version, Nodes, the Foo CRD, permissions, etcd: one row each."""
    try:
        api = kube.connect(kubeconfig, context)
    except CourseError as exc:
        return [Row("cluster", False, exc.problem, exc.next_step)]
    version = kubernetes.client.VersionApi(api).get_code(_request_timeout=5).git_version
    name, server = kube.describe_context(kubeconfig, context)
    rows = [Row("cluster", True, f"{version} at {server} (context {name})")]
    problem = kube.readiness_problem(api, timeout=5)
    rows.append(
        Row(
            "readyz",
            problem is None,
            problem or "every check passes",
            "wait a minute and check again; `make status` shows the cluster's state",
        )
    )
    rows.append(_nodes_row(api))
    try:
        who = workshop_mode.attendee(kubeconfig)
    except CourseError as exc:  # an attendee's namespace, but not the attendee's credentials
        rows.append(Row("attendee", False, exc.problem, exc.next_step))
        who = None
    rows.append(_foo_row(api, who))
    rows += _permission_rows(api, who)
    rows.append(_etcd_row(kubeconfig, context))
    return rows


def _nodes_row(api: kubernetes.client.ApiClient) -> Row:
    try:
        nodes = kubernetes.client.CoreV1Api(api).list_node(_request_timeout=5).items
    except ApiException as exc:
        return Row(
            "nodes",
            False,
            f"cannot list Nodes (HTTP {exc.status})",
            "grant `list nodes` (the workshop's ClusterRole does)",
        )
    ready = [
        n
        for n in nodes
        if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
    ]
    return Row(
        "nodes",
        bool(nodes) and len(ready) == len(nodes),
        f"{len(ready)} of {len(nodes)} Ready",
        "look at the Nodes (`kubectl describe nodes`); `make down && make up` starts afresh",
    )


def _foo_row(api: kubernetes.client.ApiClient, who: str | None) -> Row:
    """The Foo API is served; for an attendee also with chapter 06's status fields."""
    fix = "run `make up` (it installs the CRD), or `kubectl apply -f manifests/foo-crd.yaml`"
    try:
        body = kube.raw_get(api, f"/apis/{FOO_GROUP_VERSION}")
    except ApiException:
        return Row("Foo CRD", False, f"{FOO_GROUP_VERSION} is not served", fix)
    if "foos" not in {r["name"] for r in json.loads(body)["resources"]}:
        return Row("Foo CRD", False, f"{FOO_GROUP_VERSION} serves no foos", fix)
    if who is None:
        return Row("Foo CRD", True, f"foos served by {FOO_GROUP_VERSION}")
    crd = kubernetes.client.ApiextensionsV1Api(api).read_custom_resource_definition(FOO_CRD)
    status = crd.spec.versions[0].schema.open_apiv3_schema.properties["status"].properties or {}
    extended = "observedGeneration" in status
    return Row(
        "Foo CRD",
        extended,
        "served, with chapter 06's status fields"
        if extended
        else "served, but without chapter 06's status fields",
        "ask the facilitator to run `python -m helpers.cluster.workshop up` again",
    )


def _namespaces(who: str | None) -> list[str]:
    from .workshop import chapter_namespaces

    return [f"{who}-{n}" if who else n for n in chapter_namespaces()]


def _permission_rows(api: kubernetes.client.ApiClient, who: str | None) -> list[Row]:
    """One SelfSubjectAccessReview per permission and namespace, sent eight at a time."""
    authz = kubernetes.client.AuthorizationV1Api(api)
    asks: list[tuple[str, Need, str | None]] = [
        ("in the chapters' namespaces", need, namespace)
        for namespace in _namespaces(who)
        for need in NAMESPACED_NEEDS
    ]
    asks += [("cluster reads", need, None) for need in CLUSTER_READS]
    if who is None:
        asks += [("cluster writes", need, None) for need in CLUSTER_WRITES]
    else:  # chapter 08 reads the controller manager's Lease
        asks.append(
            (
                "cluster reads",
                Need("get", "leases", "coordination.k8s.io", name="kube-controller-manager"),
                "kube-system",
            )
        )

    def allowed(ask: tuple[str, Need, str | None]) -> bool:
        _, need, namespace = ask
        attributes = {"verb": need.verb, "resource": need.resource, "group": need.group}
        if need.subresource:
            attributes["subresource"] = need.subresource
        if need.name:
            attributes["name"] = need.name
        if namespace:
            attributes["namespace"] = namespace
        review = authz.create_self_subject_access_review(
            {"spec": {"resourceAttributes": attributes}}, _request_timeout=5
        )
        return bool(review.status.allowed)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(allowed, asks))
    rows = []
    for group in dict.fromkeys(kind for kind, _, _ in asks):
        mine = [
            (need, ns) for (kind, need, ns), ok in zip(asks, answers, strict=True) if kind == group
        ]
        missing = [
            (need, ns)
            for (kind, need, ns), ok in zip(asks, answers, strict=True)
            if kind == group and not ok
        ]
        shown = ", ".join(f"{need}" + (f" in {ns}" if ns else "") for need, ns in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        step = (
            "ask the facilitator to run `python -m helpers.cluster.workshop up` for you again"
            if who
            else "use a cluster-admin kubeconfig (the course's own cluster has one)"
        )
        rows.append(
            Row(
                f"permissions ({group})",
                not missing,
                f"{len(mine)} of {len(mine)} allowed"
                if not missing
                else f"missing {len(missing)} of {len(mine)}: {shown}{more}",
                step,
            )
        )
    return rows


def _etcd_row(kubeconfig: str | None, context: str | None) -> Row:
    """Direct etcd access (the local control plane only), and what its absence changes."""
    from .info import describe

    url = describe(kubeconfig, context).etcd_url
    without = (
        "chapters 01-03 cannot compact etcd or read it directly: they say so in one "
        "sentence and go on"
    )
    if url is None:
        return Row("etcd", True, f"withheld: {without}")
    from ..etcd import EtcdClient

    try:
        health = EtcdClient(url, timeout=2).healthy()
    except (OSError, ValueError) as exc:
        return Row(
            "etcd",
            False,
            f"{url} does not answer ({exc})",
            "restart the cluster (`make down && make up`)",
        )
    return Row(
        "etcd",
        health,
        f"{url} answers: the 410 and compaction sections run",
        "restart the cluster (`make down && make up`)",
    )


def run(kubeconfig: str | None = None, context: str | None = None) -> list[Row]:
    """Every check, in the order of the table."""
    home = CourseHome.from_environment()
    rows = python_rows() + jupyter_rows()
    try:
        rows += cluster_rows(kubeconfig, context)
    except ApiException as exc:
        rows.append(
            Row(
                "cluster",
                False,
                f"the API server refused a check: {explain(exc)}",
                "check your kubeconfig's credentials",
            )
        )
    rows.append(disk_row(home))
    return rows


def table(rows: list[Row]) -> str:
    """The rows as text: check, ok/problem, what was seen, and the next step for a problem."""
    width = max(len(row.check) for row in rows)
    lines = []
    for row in rows:
        lines.append(f"{row.check:{width}}  {'ok' if row.ok else 'PROBLEM':7}  {row.seen}")
        if not row.ok and row.next_step:
            lines.append(f"{'':{width}}  {'':7}  next step: {row.next_step}")
    return "\n".join(lines)


def main(argv: list[str] | None = None, clock: Callable[[], float] = time.monotonic) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.cluster.preflight",
        description="Check this machine and the cluster for the course; exit 1 on any problem.",
    )
    parser.add_argument("--kubeconfig", help="default: $KUBECONFIG, as kubectl reads it")
    parser.add_argument("--context", help="default: the kubeconfig's current context")
    args = parser.parse_args(argv)
    started = clock()
    rows = run(args.kubeconfig or None, args.context)
    print(table(rows))
    problems = sum(not row.ok for row in rows)
    try:
        who = workshop_mode.attendee(args.kubeconfig)
    except CourseError:
        who = None  # the table says why, in its own row
    mode = f"attendee {who}" if who else ""
    print(
        f"\n{len(rows) - problems} ok, {problems} problem(s) in {clock() - started:.1f} s"
        + (f" ({mode} mode)" if mode else "")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
