"""The reflector: keeps a store in step with one collection by LIST, then WATCH.

client-go counterpart: ``tools/cache/reflector.go`` (``Reflector``, ``Run``,
``ListAndWatch``, ``list``, ``watch``, ``handleWatch``, ``relistResourceVersion``,
``isExpiredError``, ``isTooLargeResourceVersionError``, ``isWatchErrorRetriable``,
``VeryShortWatchError``), with the backoff of :mod:`helpers.backoff`.

The loop, in the order the data flows:

1. LIST the collection (in pages of ``page_size``) and hand everything to
   ``sink.replace(items, resourceVersion)``. The first LIST asks for
   resourceVersion ``"0"`` (any cached version will do, so the API server's
   watch cache answers, not etcd); later ones ask for the last version we saw,
   so we never go back in time; after an "expired" / "too large" answer, ``""``
   (a consistent read from etcd). An expired ``continue`` token between pages
   falls back to one full LIST.
2. WATCH from the list's resourceVersion, with bookmarks, for a random
   ``[min_watch_timeout, 2 * min_watch_timeout]`` seconds (random, so that
   thousands of clients do not all reconnect in the same second). ADDED,
   MODIFIED and DELETED go to ``sink.add/update/delete``; every event, bookmarks
   included, moves ``last_sync_resource_version`` forward.
3. When the server ends the watch normally, watch again from there: no LIST.
   A refused connection or a 429 on the watch: back off, watch again, no LIST
   (the server is overloaded or restarting; a re-list would make it worse).
   410 "too old resource version", a broken connection, any other error, or a
   "very short watch" (closed within 1 s with no events): back off and start
   over at step 1.

Every error backs off (800 ms doubling to 30 s, with jitter), 403 and refused
connections included, so a reflector never spins in a hot loop.

The thread is owned by the reflector: ``start()`` creates it (named
``reflector-<name>``, not a daemon), ``stop()`` sets the stop event and closes
the open watch so a blocked read returns at once, ``join()`` waits for it.

What we left out of client-go's reflector: WatchList streaming
(``sendInitialEvents``), resync (the informer does that), retrying
internal errors within a deadline, expected-type checks, and the subtleties of
starting a watch at resourceVersion "0".
"""

from __future__ import annotations

import logging
import random
import re
import threading
from collections.abc import Callable
from typing import Any, Protocol

import urllib3
from kubernetes.client.exceptions import ApiException

from helpers.backoff import Backoff, RandomSource, wait_or_stop
from helpers.clock import Clock, StopEvent
from helpers.kube import explain, status_of
from helpers.listwatch import (
    EventStream,
    ListerWatcher,
    Transform,
    WatchDisconnected,
    WatchError,
)

log = logging.getLogger("helpers.reflector")

VERY_SHORT_WATCH = 1.0
"""A watch that ends sooner than this, with no events, counts as an error (client-go)."""


class ReflectorStore(Protocol):
    """Where a reflector writes (client-go ``ReflectorStore``); ``bookmark(rv)`` is optional."""

    def replace(self, items: list[Any], resource_version: str) -> None: ...

    def add(self, obj: Any) -> None: ...

    def update(self, obj: Any) -> None: ...

    def delete(self, obj: Any) -> None: ...


class VeryShortWatchError(Exception):
    """The watch closed within a second without a single event (client-go ``VeryShortWatchError``).

    A healthy server keeps a watch open for ``timeoutSeconds``; one that closes
    at once, again and again, is failing, and must not be re-watched in a hot loop.
    """


class Reflector:
    """LIST then WATCH one collection into ``sink`` until stopped (client-go ``Reflector``).

    ``last_sync_resource_version``, ``has_synced``, ``last_error`` and the
    counters (``lists``, ``relists``, ``watches``, ``events``, ``errors``,
    ``backoff_waits``) are there for tests and notebooks; :meth:`wait_for`
    blocks until a condition on them holds, without polling.
    """

    def __init__(
        self,
        list_watch: ListerWatcher,
        sink: ReflectorStore,
        *,
        name: str,
        page_size: int = 500,
        min_watch_timeout: float = 300.0,
        read_timeout: float | None = None,
        backoff: Backoff | None = None,
        clock: Clock | None = None,
        rng: RandomSource | None = None,
        transform: Transform | None = None,
    ) -> None:
        if backoff is None:
            backoff = Backoff(clock=clock)
        self.name = name
        self._lw = list_watch
        self._sink = sink
        self._page_size = page_size
        self._min_watch_timeout = max(1.0, min_watch_timeout)
        self._read_timeout = read_timeout
        self._backoff = backoff
        self._clock: Clock = clock if clock is not None else backoff.clock
        self._rng: RandomSource = rng if rng is not None else random.Random()
        # client-go TransformFunc: applied to each object as it arrives, before
        # the sink sees it (list items while they are decoded).
        self._transform = transform

        self._stop = StopEvent()
        self._thread: threading.Thread | None = None
        # Guards the state below and is notified whenever it changes (wait_for).
        self._changed = threading.Condition()
        self._stream: EventStream | None = None
        self._last_sync_rv = ""
        self._rv_unavailable = False  # the last LIST/WATCH said our RV is expired or too new
        self._paginated_result = False  # the server paginated a "0" list: no watch cache
        self._has_synced = False

        self.lists = 0
        """LIST operations started (one per full list, however many pages)."""
        self.relists = 0
        """LIST operations after the first successful one."""
        self.watches = 0
        """WATCH requests made."""
        self.events = 0
        """Watch events handed to the sink (bookmarks included)."""
        self.errors = 0
        """Errors seen, each one logged (expired watches included)."""
        self.backoff_waits = 0
        """Times the reflector backed off before retrying."""
        self.last_error: BaseException | None = None
        """The most recent error, or None."""
        self.last_error_message: str | None = None
        """``last_error`` as the sentence that was logged."""

    def __repr__(self) -> str:
        return (
            f"<Reflector {self.name} rv={self.last_sync_resource_version!r} "
            f"synced={self.has_synced} lists={self.lists} watches={self.watches} "
            f"errors={self.errors}>"
        )

    # -- state ------------------------------------------------------------------

    @property
    def last_sync_resource_version(self) -> str:
        """The newest resourceVersion seen, from a LIST or any watch event."""
        with self._changed:
            return self._last_sync_rv

    @property
    def has_synced(self) -> bool:
        """True once the first LIST has been handed to ``sink.replace``."""
        with self._changed:
            return self._has_synced

    @property
    def stopped(self) -> bool:
        """True once ``stop()`` was called."""
        return self._stop.is_set()

    def wait_for(self, predicate: Callable[[Reflector], bool], timeout: float) -> bool:
        """Block until ``predicate(self)`` holds (re-checked on every change); False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout)

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Run the loop in a new thread named ``reflector-<name>``."""
        with self._changed:
            if self._thread is not None:
                raise RuntimeError(f"reflector {self.name} was already started")
            self._thread = threading.Thread(target=self.run, name=f"reflector-{self.name}")
        self._thread.start()

    def stop(self) -> None:
        """Ask the loop to end, and cut the open watch so a blocked read returns now.

        An in-flight LIST cannot be cut short; it ends within the ListWatch's
        list read timeout at worst.
        """
        self._stop.set()
        with self._changed:
            stream = self._stream
            self._changed.notify_all()
        if stream is not None:
            stream.close()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; True if it has (or was never started)."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def run(self) -> None:
        """The loop: ``list_and_watch``, back off after it fails, repeat until stopped.

        client-go ``Reflector.Run``: ``wait.BackoffUntil(ListAndWatch)``.
        """
        log.info("reflector %s: starting (%s)", self.name, self._lw)
        try:
            while not self._stop.is_set():
                try:
                    self.list_and_watch()
                except Exception as err:
                    self._record_error(err)
                if self._stop.is_set() or not self._back_off():
                    break
        finally:
            log.info("reflector %s: stopped", self.name)
            with self._changed:
                self._changed.notify_all()

    # -- one round: LIST, then WATCH until something says "list again" ------------------

    def list_and_watch(self) -> None:
        """LIST into the sink, then WATCH until an error calls for a fresh LIST.

        client-go ``ListAndWatch``. Returns only when stopped; every reason to
        start over (410, a broken stream, a 403, a very short watch) is raised,
        and :meth:`run` logs it and backs off.
        """
        if self._list():
            self._watch_until_error()

    def _list(self) -> bool:
        """LIST everything and ``sink.replace`` it; False if stopped meanwhile."""
        resource_version = self._relist_resource_version()
        with self._changed:
            self.lists += 1
            if self._has_synced:
                self.relists += 1
            self._changed.notify_all()
        try:
            listed = self._list_pages(resource_version)
        except ApiException as err:
            if not (is_expired(err) or is_too_large_resource_version(err)):
                raise
            # The version we asked for is gone (or the server has not reached it
            # yet): ask etcd for the newest state instead.
            log.info(
                "reflector %s: LIST at resourceVersion %r failed (%s); listing at the newest "
                'version (resourceVersion "")',
                self.name,
                resource_version,
                status_of(err)["message"],
            )
            with self._changed:
                self._rv_unavailable = True
            listed = self._list_pages(self._relist_resource_version())
        if listed is None:
            return False
        items, list_rv = listed
        self._sink.replace(items, list_rv)
        with self._changed:
            self._rv_unavailable = False
            self._last_sync_rv = list_rv
            self._has_synced = True
            self._changed.notify_all()
        log.debug("reflector %s: listed %d objects at %s", self.name, len(items), list_rv)
        return True

    def _list_pages(self, resource_version: str) -> tuple[list[Any], str] | None:
        """The pager: LIST in pages, or in one go when an exact version is asked for.

        client-go pages only when the request goes to etcd anyway ("" or "0"
        without a watch cache); for an exact version it asks for everything at
        once so the watch cache can answer without touching etcd.
        """
        paginate = self._page_size > 0 and (resource_version in ("", "0") or self._paginated_result)
        limit = self._page_size if paginate else None
        transform = self._transform
        first = self._lw.list(resource_version=resource_version, limit=limit, transform=transform)
        items = _items_of(first)
        token = _continue_of(first)
        if resource_version == "0" and token:
            self._paginated_result = True
        while token:
            if self._stop.is_set():
                return None
            try:
                page = self._lw.list(limit=limit, continue_token=token, transform=transform)
            except ApiException as err:
                if not is_expired(err):
                    raise
                # The snapshot behind the token was compacted away mid-list.
                log.info(
                    "reflector %s: continue token expired after %d objects; "
                    "listing everything in one request",
                    self.name,
                    len(items),
                )
                whole = self._lw.list(resource_version=resource_version, transform=transform)
                return _items_of(whole), _resource_version_of(whole)
            items.extend(_items_of(page))
            token = _continue_of(page)
        return items, _resource_version_of(first)

    def _relist_resource_version(self) -> str:
        """client-go ``relistResourceVersion``: "" after expiry, "0" at first, else the last RV."""
        with self._changed:
            if self._rv_unavailable:
                return ""
            return self._last_sync_rv or "0"

    def _watch_until_error(self) -> None:
        """WATCH, and WATCH again after each normal close, until an error (raised) or a stop."""
        while not self._stop.is_set():
            started = self._clock.now()
            with self._changed:
                self.watches += 1
                resource_version = self._last_sync_rv
                self._changed.notify_all()
            try:
                stream = self._lw.watch(
                    resource_version,
                    self._watch_timeout_seconds(),
                    allow_bookmarks=True,
                    read_timeout=self._read_timeout,
                )
            except Exception as err:
                if not is_retriable_watch_error(err):
                    raise
                # Refused or throttled: the server is restarting or overloaded.
                # Our resourceVersion is still good, so no re-list.
                self._record_error(err)
                if not self._back_off():
                    return
                continue
            try:
                count = self._follow(stream)
            except WatchError as err:
                if err.status != 429:
                    raise
                self._record_error(err)
                if not self._back_off():
                    return
                continue
            if self._stop.is_set():
                return
            if count == 0 and self._clock.now() - started < VERY_SHORT_WATCH:
                raise VeryShortWatchError(
                    f"very short watch: {self.name}: unexpected watch close - "
                    "watch lasted less than a second and no items received"
                )
            log.debug(
                "reflector %s: watch closed after %d events; watching again", self.name, count
            )

    def _follow(self, stream: EventStream) -> int:
        """Hand the stream's events to the sink until it ends; returns how many."""
        with self._changed:
            self._stream = stream
        if self._stop.is_set():  # stop() ran before it could see this stream
            stream.close()
        count = 0
        try:
            for event in stream:
                if self._stop.is_set():
                    break
                self._apply(event)
                count += 1
        except WatchDisconnected:
            if not self._stop.is_set():
                raise
        finally:
            with self._changed:
                self._stream = None
            stream.close()
        return count

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        resource_version = (obj.get("metadata") or {}).get("resourceVersion")
        if self._transform is not None and kind in ("ADDED", "MODIFIED", "DELETED"):
            obj = self._transform(obj)
        try:
            if kind == "ADDED":
                self._sink.add(obj)
            elif kind == "MODIFIED":
                self._sink.update(obj)
            elif kind == "DELETED":
                self._sink.delete(obj)
            elif kind == "BOOKMARK":
                bookmark = getattr(self._sink, "bookmark", None)
                if bookmark is not None:
                    bookmark(resource_version)
            else:
                log.warning("reflector %s: ignoring a watch event of type %r", self.name, kind)
                return
        except Exception:
            # A store that cannot take one object must not stop the whole watch.
            log.exception("reflector %s: the store rejected a %s event", self.name, kind)
        with self._changed:
            if resource_version:
                self._last_sync_rv = resource_version
            self.events += 1
            self._changed.notify_all()

    def _watch_timeout_seconds(self) -> int:
        low = self._min_watch_timeout
        return max(1, int(low + self._rng.random() * low))

    # -- errors and backoff -----------------------------------------------------------

    def _back_off(self) -> bool:
        """Wait the next backoff delay; False if stopped meanwhile."""
        delay = self._backoff.next_delay()
        with self._changed:
            self.backoff_waits += 1
            self._changed.notify_all()
        log.debug("reflector %s: backing off for %.2fs", self.name, delay)
        return not wait_or_stop(self._stop, delay, self._backoff.clock)

    def _record_error(self, err: BaseException) -> None:
        message = self.describe_error(err)
        with self._changed:
            self.errors += 1
            self.last_error = err
            self.last_error_message = message
            self._changed.notify_all()
        if is_expired(err):
            log.info("reflector %s: %s", self.name, message)  # routine: etcd compacts
        else:
            log.warning("reflector %s: %s", self.name, message)

    def describe_error(self, err: BaseException) -> str:
        """One sentence about ``err`` that says what happens next (or what to fix)."""
        if is_expired(err):
            return (
                f"{status_of(err)['message']} (410): etcd no longer has resourceVersion "
                f"{self.last_sync_resource_version or '?'}; listing again"
            )
        if isinstance(err, ApiException) and err.status == 403:
            return forbidden_message(err)
        if isinstance(err, ApiException) and err.status == 429:
            return (
                "the API server asked us to slow down (429 Too Many Requests); backing off, "
                "then watching again without a re-list"
            )
        if isinstance(err, ApiException):
            return explain(err)
        if is_connection_refused(err):
            return (
                f"the API server refused the connection ({self._lw}); is it running? "
                "backing off, then trying again"
            )
        if isinstance(err, WatchDisconnected | VeryShortWatchError):
            return f"{err}; listing again"
        return f"{type(err).__name__}: {err}"


# --- classifying errors ------------------------------------------------------------


def is_expired(err: BaseException) -> bool:
    """410: the resourceVersion was compacted away (client-go ``isExpiredError``)."""
    return isinstance(err, ApiException) and err.status == 410


def is_too_large_resource_version(err: BaseException) -> bool:
    """The server has not seen that resourceVersion yet (``isTooLargeResourceVersionError``).

    Happens after talking to an API server whose watch cache lags behind
    another's. Newer servers mark it with a status cause; servers before 1.18
    said it only in a 504 Timeout's message, so both are checked.
    """
    if not isinstance(err, ApiException):
        return False
    status = status_of(err)
    causes = (status.get("details") or {}).get("causes") or []
    if any(cause.get("type") == "ResourceVersionTooLarge" for cause in causes):
        return True
    if status.get("code") != 504:
        return False
    if any(cause.get("message") == "Too large resource version" for cause in causes):
        return True
    return "Too large resource version" in str(status.get("message"))


def is_connection_refused(err: BaseException) -> bool:
    """True if ``err`` (or anything it wraps) is a refused TCP connection."""
    seen: set[int] = set()
    todo: list[BaseException] = [err]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        if isinstance(current, urllib3.exceptions.HTTPError | OSError) and (
            "connection refused" in str(current).lower()
        ):
            return True
        for inner in (current.__cause__, current.__context__, getattr(current, "reason", None)):
            if isinstance(inner, BaseException):
                todo.append(inner)
    return False


def is_retriable_watch_error(err: BaseException) -> bool:
    """client-go ``isWatchErrorRetriable``: re-watch (no re-list) after refused or 429."""
    return is_connection_refused(err) or (isinstance(err, ApiException) and err.status == 429)


_FORBIDDEN = re.compile(
    r'User "(?P<user>[^"]*)" cannot (?P<verb>[\w-]+) resource "(?P<resource>[^"]+)"'
    r' in API group "(?P<group>[^"]*)"(?: in the namespace "(?P<namespace>[^"]+)")?'
)


def forbidden_message(err: ApiException) -> str:
    """A 403 as the permission that is missing, e.g. for a LIST or WATCH.

    The API server says ``configmaps is forbidden: User "system:serviceaccount:
    demo:ctl" cannot watch resource "configmaps" in API group "" in the
    namespace "demo"``; we say who may not do what, and which grant fixes it.
    """
    status = status_of(err)
    match = _FORBIDDEN.search(str(status["message"]))
    if match is None:
        return explain(err)
    user, verb, resource, group, namespace = match.group(
        "user", "verb", "resource", "group", "namespace"
    )
    if user.startswith("system:serviceaccount:"):
        sa_namespace, _, sa_name = user.removeprefix("system:serviceaccount:").partition(":")
        who = f"the service account {sa_namespace}/{sa_name}"
    else:
        who = f'the user "{user}"'
    what = f"{resource}.{group}" if group else resource
    if namespace:
        where, grant = f"in namespace {namespace}", "a Role and RoleBinding in that namespace"
    else:
        where, grant = "at the cluster scope", "a ClusterRole and ClusterRoleBinding"
    return (
        f'forbidden: {who} may not {verb} {what} {where}; grant the "{verb}" verb '
        f"on {what} with {grant}"
    )


# --- reading list responses ------------------------------------------------------------


def _items_of(listed: dict[str, Any]) -> list[Any]:
    """The items of a list, each with ``kind`` and ``apiVersion`` filled in.

    The API server leaves those out of list items but sends them with watch
    events; filling them makes an object look the same whichever way it came.
    """
    items = listed.get("items") or []
    kind = str(listed.get("kind") or "").removesuffix("List")
    api_version = listed.get("apiVersion")
    if kind and api_version:
        for item in items:
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", api_version)
    return list(items)


def _continue_of(listed: dict[str, Any]) -> str | None:
    return (listed.get("metadata") or {}).get("continue") or None


def _resource_version_of(listed: dict[str, Any]) -> str:
    return str((listed.get("metadata") or {}).get("resourceVersion") or "")
