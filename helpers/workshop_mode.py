"""Who this kernel works for in a workshop: attendee mode, claimed by the kubeconfig, verified.

On a shared workshop cluster the facilitator gives each attendee namespaces
of their own (``<attendee>-ch04-workqueue``, ...) and no right to create or
delete namespaces (``python -m helpers.cluster.workshop up``). A chapter then
works in the attendee's namespace and empties it instead of deleting it
(:mod:`helpers.namespaces`). Outside a workshop nothing here changes anything.

Emptying a namespace removes everything in it, finalizers stripped, so
attendee mode is not taken on a guess. The kubeconfig only *claims* it (its
context's namespace is an attendee's, or ``$CFS_ATTENDEE`` names one); the
course acts as that attendee only when the API server confirms both halves:
its SelfSubjectReview says the user is that attendee's ServiceAccount
(``system:serviceaccount:cfs-workshop:attendee-<name>``), and the namespace
carries that attendee's label. An admin's context pointed at an attendee's
namespace (a common way to help someone) is refused with a sentence, and
nothing is emptied.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from .errors import CourseError
from .kube import Kubeconfig, KubeconfigArg, connect, kubeconfig_paths

ATTENDEE_ENV = "CFS_ATTENDEE"
"""An attendee's name (as ``python -m helpers.cluster.workshop up`` made it): claims the mode."""
WORKSHOP_LABEL = "controllers-from-scratch/workshop"
"""Objects the facilitator made in an attendee's namespaces carry it; emptying keeps them."""
ATTENDEE_LABEL = "controllers-from-scratch/attendee"
"""Each of an attendee's namespaces carries it, with the attendee's name as its value."""
FACILITATOR_NAMESPACE = "cfs-workshop"
"""Where the attendees' ServiceAccounts live, out of their reach."""
_CHAPTER_NAMESPACE = re.compile(
    r"^(?P<attendee>[a-z0-9]([-a-z0-9]*[a-z0-9])?)-ch\d\d[a-z]?-[-a-z0-9]+$"
)
_verified: dict[tuple[Any, ...], str] = {}
_verified_lock = threading.Lock()


def service_account(name: str) -> str:
    """The ServiceAccount attendee ``name`` works as (in :data:`FACILITATOR_NAMESPACE`)."""
    return f"attendee-{name}"


def username(name: str) -> str:
    """What the API server calls attendee ``name`` (a SelfSubjectReview's ``userInfo.username``)."""
    return f"system:serviceaccount:{FACILITATOR_NAMESPACE}:{service_account(name)}"


def claimed(kubeconfig: KubeconfigArg = None) -> tuple[str | None, str | None]:
    """``(attendee, namespace)`` the kubeconfig claims, read from the files alone.

    The attendee is ``$CFS_ATTENDEE``, or the one whose chapter namespace the
    current context names (the kubeconfig ``workshop up`` writes sets it); the
    namespace is the context's, if it is one of theirs. ``(None, None)``: no claim.
    """
    namespace = ""
    try:
        config = Kubeconfig(kubeconfig)
        namespace = (config.context(None).value.get("context") or {}).get("namespace") or ""
    except CourseError:
        pass
    match = _CHAPTER_NAMESPACE.match(namespace)
    named = os.environ.get(ATTENDEE_ENV, "").strip() or (match["attendee"] if match else None)
    if named is None:
        return None, None
    return named, namespace if namespace.startswith(f"{named}-") else None


def attendee(kubeconfig: KubeconfigArg = None) -> str | None:
    """The workshop attendee this kernel works for, or None outside a shared workshop cluster.

    None when the kubeconfig claims no attendee (:func:`claimed`): nothing is
    asked of the API server. A claim is verified once per kubeconfig (and again
    when a file changes): a CourseError says why it was refused.
    """
    who, namespace = claimed(kubeconfig)
    if who is None:
        return None
    paths = kubeconfig_paths(kubeconfig)
    key = (who, namespace, *((str(p), p.stat().st_mtime_ns if p.exists() else 0) for p in paths))
    with _verified_lock:
        if key in _verified:
            return _verified[key]
    verify(connect(kubeconfig), who, namespace)
    with _verified_lock:
        _verified[key] = who
    return who


def verify(api: kubernetes.client.ApiClient, who: str, namespace: str | None) -> None:
    """Check with the API server that ``api`` acts as attendee ``who``, in their ``namespace``.

    Two questions: who am I (a SelfSubjectReview, which every authenticated user
    may ask), and does the namespace carry ``who``'s label. Either answer wrong:
    a CourseError, before anything is touched.
    """
    review = kubernetes.client.AuthenticationV1Api(api).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    )
    user = review.status.user_info.username
    if user != username(who):
        where = f"namespace {namespace}" if namespace else f"${ATTENDEE_ENV}={who}"
        raise CourseError(
            f"This kubeconfig points at attendee {who}'s {where}, but the API server says you "
            f"are {user}, not {who}'s ServiceAccount: the course does not act as attendee {who} "
            f"for anyone else (it would empty {who}'s namespaces).",
            f"to work as {who}, use their kubeconfig file; to work as yourself, point the context "
            f"at a namespace of your own (`kubectl config set-context --current --namespace "
            f"default`) and unset {ATTENDEE_ENV}.",
        )
    if namespace is not None:
        require_attendees_namespace(api, namespace, who)


def require_attendees_namespace(api: kubernetes.client.ApiClient, namespace: str, who: str) -> None:
    """A CourseError unless ``namespace`` carries attendee ``who``'s label (the facilitator's)."""
    try:
        labels = kubernetes.client.CoreV1Api(api).read_namespace(namespace).metadata.labels or {}
    except ApiException as exc:
        if exc.status not in (403, 404):
            raise
        labels = {}
    if labels.get(ATTENDEE_LABEL) != who:
        raise CourseError(
            f"Namespace {namespace} is not attendee {who}'s (it lacks the label "
            f"{ATTENDEE_LABEL}={who} that `workshop up` gives their namespaces, or you may not "
            "read it), so the course leaves it and everything in it alone.",
            f"ask the facilitator to run `make workshop-up ATTENDEES={who}` again.",
        )


def chapter_namespace(name: str) -> str:
    """The namespace a chapter calls ``name``: ``<attendee>-name`` in attendee mode, else itself."""
    who = attendee()
    if who is None or name.startswith(f"{who}-"):
        return name
    return f"{who}-{name}"
