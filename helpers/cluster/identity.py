"""Which clusters are the course's own: recorded when it creates one, checked before it acts.

The test suite and the benchmarks create and delete namespaces, CRDs and
140,000 ConfigMaps. Pointed by ``KUBECONFIG`` (or ``~/.kube/config``) at a
learner's work cluster, they would do that there. So every cluster the course
creates (local control plane or kind) is recorded in its state file with the
two things that identify it: the API server's URL and the fingerprint of its
CA certificate. :func:`require_course_cluster` compares the kubeconfig about
to be used with those records, from the files alone, and refuses with one
sentence before a single request is sent, unless the user names that cluster
explicitly (:data:`ALLOW_ENV`): by its context and the same identity
(:func:`allow_value`), so that a context of the same name pointed elsewhere
later, or in another kubeconfig, is not taken for it.

A cluster the course merely uses (``up --backend existing``) is recorded too,
without the identity: the course did not create it, so it is never taken for
one the tests may break.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from .. import kube
from ..errors import CourseError
from ..home import STATE_FILE, CourseHome
from ..private_files import write_private

ALLOW_ENV = "CFS_ALLOW_CLUSTER"
"""Set to :func:`allow_value` of a cluster to let the tests and benchmarks run on it anyway."""
CREATED_BY_THE_COURSE = ("local", "kind")


@dataclass(frozen=True)
class Identity:
    """What tells one cluster from another: the API server's URL and its CA's fingerprint."""

    server: str
    ca_sha256: str | None


def identity_of(kubeconfig: kube.KubeconfigArg, context: str | None) -> tuple[str, Identity]:
    """``(context name, identity)`` of the cluster a kubeconfig's context points at.

    Read from the files only: nothing is sent to that server.
    """
    config = kube.Kubeconfig(kubeconfig)
    name = str(config.context(context).value["name"])
    cluster = config.standalone(name)["clusters"][0].get("cluster") or {}
    return name, Identity(str(cluster.get("server", "")), _ca_fingerprint(cluster))


def _ca_fingerprint(cluster: dict[str, object]) -> str | None:
    """SHA-256 of the CA certificate (DER), however the kubeconfig holds it; None without one."""
    if data := cluster.get("certificate-authority-data"):
        pem = base64.b64decode(str(data)).decode(errors="replace")
    elif path := cluster.get("certificate-authority"):
        try:
            pem = Path(str(path)).read_text()
        except OSError:
            return None
    else:
        return None
    try:
        der = ssl.PEM_cert_to_DER_cert(pem.strip())
    except ValueError:
        return None
    return hashlib.sha256(der).hexdigest()


def allow_value(name: str, identity: Identity) -> str:
    """What :data:`ALLOW_ENV` must hold to name context ``name`` at ``identity``:
    ``<context>@<server>#sha256:<CA fingerprint>`` (``#no-ca`` for a cluster without one)."""
    ca = f"sha256:{identity.ca_sha256}" if identity.ca_sha256 else "no-ca"
    return f"{name}@{identity.server}#{ca}"


def record_state(home: CourseHome, name: str, backend: str, context: str) -> None:
    """Write cluster ``name``'s state file: its backend and context, and, once its kubeconfig
    exists and the course created the cluster, its identity."""
    state: dict[str, object] = {"backend": backend, "context": context}
    kubeconfig = home.kubeconfig(name)
    if backend in CREATED_BY_THE_COURSE and kubeconfig.exists():
        _, identity = identity_of(kubeconfig, context)
        state.update(server=identity.server, ca_sha256=identity.ca_sha256)
    home.make_cluster_dir(name)
    write_private(home.state_file(name), json.dumps(state, indent=2) + "\n")


def created_clusters(home: CourseHome) -> dict[str, Identity]:
    """``{cluster name: identity}`` of every cluster the course created under ``home``."""
    found: dict[str, Identity] = {}
    for state_file in sorted((home.root / "clusters").glob(f"*/{STATE_FILE}")):
        try:
            state = json.loads(state_file.read_text())
        except (OSError, ValueError):
            continue
        if (
            isinstance(state, dict)
            and state.get("backend") in CREATED_BY_THE_COURSE
            and state.get("server")
            and state.get("ca_sha256")
        ):
            found[state_file.parent.name] = Identity(state["server"], state["ca_sha256"])
    return found


def require_course_cluster(
    kubeconfig: kube.KubeconfigArg = None,
    context: str | None = None,
    *,
    home: CourseHome | None = None,
    doing: str = "The tests",
) -> str:
    """The context's name if it points at a cluster the course created; else a CourseError.

    ``kubeconfig`` defaults to what :func:`helpers.kube.connect` would read
    (``$KUBECONFIG``, the course's kubeconfig, ``~/.kube/config``). ``doing``
    starts the sentence: "The tests", "The benchmarks".
    """
    home = home or CourseHome.from_environment()
    name, identity = identity_of(kubeconfig, context)
    if identity in created_clusters(home).values():
        return name
    allowed = allow_value(name, identity)
    named = os.environ.get(ALLOW_ENV, "")
    if named == allowed:
        return name
    other = f" ({ALLOW_ENV} names {named}, not this cluster)" if named else ""
    raise CourseError(
        f"{doing} create and delete namespaces, CRDs and objects, so they run only on a cluster "
        f"the course created, and context '{name}' ({identity.server}) is not one{other}.",
        f"run `make test` (it starts the course's own cluster); or, if this cluster is yours to "
        f"break, name it, context, server and CA: `export '{ALLOW_ENV}={allowed}'`.",
    )
