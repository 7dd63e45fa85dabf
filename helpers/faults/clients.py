"""A controller's writes failed, slowed or held on purpose: chapter 06's faulty clients.

:class:`FlakyClients` wraps a controller's :class:`helpers.controller.Clients`:
the next N writes fail, or every Nth, or every write about some Foos, or each
write first waits (a slow API server), or one write is held at a :class:`Gate`
until a cell lets it go. Events are never failed: an Event is not part of a
sync, and a failed one never fails the sync. client-go's recorder writes Events
from a goroutine of its own; it drops one the API server refuses at once, and
tries one that failed on the way up to 12 times
(https://github.com/kubernetes/client-go/blob/v0.36.3/tools/record/event.go#L288-L324);
:mod:`helpers.events` writes in the sync's thread, logs a failure, and never
raises.

No client-go counterpart: an instrument written by hand. Chapter 06's bench
(:mod:`helpers.reconcile_bench`) wraps every controller it starts in one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from helpers.controller import Clients, controller_of


class InjectedFailure(RuntimeError):
    """A write that FlakyClients failed on purpose."""


class Gate:
    """Holds one kind of write about one Foo until :meth:`release`; ``reached`` is set then."""

    def __init__(self, verb: str, key: str) -> None:
        self.verb = verb
        self.key = key
        self.reached = threading.Event()
        self._released = threading.Event()

    def release(self) -> None:
        self._released.set()

    def wait_reached(self, timeout: float = 30.0) -> None:
        """Block until a write has come to the gate (and waits there)."""
        if not self.reached.wait(timeout):
            raise TimeoutError(f"no {self.verb} of {self.key} came to the gate in {timeout:g} s")

    def _pass(self, timeout: float = 60.0) -> None:
        self.reached.set()
        self._released.wait(timeout)


class FlakyClients:
    """:class:`helpers.controller.Clients` that fail, slow down or hold writes on purpose.

    ``fail_next=N`` fails the next N writes that may fail, then none;
    ``fail_every=N`` fails every Nth write that may fail (0: none); Events are
    not counted, since they never fail: with them counted, a sync that writes a
    Deployment, a status and an Event, run alone with ``fail_every=3``, would
    put every third write on its Event, and nothing would ever fail.
    ``fail_keys`` fails every write about those Foos (``"namespace/name"``);
    ``latency`` seconds pass before each write, as with a slow API server.
    All four may change while the controller runs. ``hold(verb, key)`` returns
    a :class:`Gate` that stops the next such write until released. Events are
    slowed and held like any write, but never failed (see the module's docstring).
    """

    def __init__(
        self,
        inner: Clients,
        *,
        fail_next: int = 0,
        fail_every: int = 0,
        fail_keys: set[str] | None = None,
        latency: float = 0.0,
    ) -> None:
        self.inner = inner
        self.fail_next = fail_next
        self.fail_every = fail_every
        self.fail_keys: set[str] = set(fail_keys or ())
        self.latency = latency
        self.writes = 0
        self.failed = 0
        self._lock = threading.Lock()
        self._gates: list[Gate] = []

    def hold(self, verb: str, key: str) -> Gate:
        gate = Gate(verb, key)
        with self._lock:
            self._gates.append(gate)
        return gate

    def release_all(self) -> None:
        """Let every write held at a gate go (a controller that stops must not hang there)."""
        with self._lock:
            gates, self._gates = self._gates, []
        for gate in gates:
            gate.release()

    def _before(self, verb: str, key: str, *, may_fail: bool = True) -> None:
        with self._lock:
            if may_fail:  # the writes "every Nth" counts
                self.writes += 1
            gate = next((g for g in self._gates if (g.verb, g.key) == (verb, key)), None)
            if gate is not None:
                self._gates.remove(gate)
            every = self.fail_every
            fail = may_fail and (key in self.fail_keys or (every > 0 and self.writes % every == 0))
            if may_fail and self.fail_next > 0:
                self.fail_next -= 1
                fail = True
            self.failed += fail
        if gate is not None:
            gate._pass()
        if self.latency > 0:
            time.sleep(self.latency)  # a slow API server, on purpose
        if fail:
            raise InjectedFailure(f"injected failure: {verb} for {key}")

    def create_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]:
        self._before("create Deployment", _owner_key(namespace, deployment))
        return self.inner.create_deployment(namespace, deployment)

    def update_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]:
        self._before("update Deployment", _owner_key(namespace, deployment))
        return self.inner.update_deployment(namespace, deployment)

    def update_foo_status(self, namespace: str, foo: dict[str, Any]) -> dict[str, Any]:
        self._before("update Foo status", f"{namespace}/{foo['metadata']['name']}")
        return self.inner.update_foo_status(namespace, foo)

    def record_event(
        self, obj: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        metadata = obj.get("metadata") or {}
        key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        self._before(f"Event {reason}", key, may_fail=False)
        self.inner.record_event(obj, event_type, reason, message)


def _owner_key(namespace: str, deployment: Mapping[str, Any]) -> str:
    """A Deployment's write is about the Foo that controls it."""
    owner = controller_of(deployment) or {}
    return f"{namespace}/{owner.get('name', '')}"
