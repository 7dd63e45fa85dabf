"""Solutions to chapter 02's exercises (02a and 02b). Try them yourself first!"""

from __future__ import annotations

import threading

from helpers.exercises.ch02 import Ending
from helpers.listwatch import ListWatch, WatchExpired
from helpers.store import Indexer


# 02b, exercise 1.
# A failed LIST leaves nothing to watch from: LIST again. A refused connection or a 429 says
# the server is restarting or overloaded, not that the version is bad: repeat the same request
# (a LIST would only add load). Any other failure before a stream existed, a reset included,
# starts over with a LIST. An open stream that ends or breaks leaves the version good: WATCH
# again, unless it ended within a second without one event (a failing server). An ERROR event
# other than 429 (410, 500, ...) starts over with a LIST.
def next_action(ending: Ending) -> str:
    if ending.stage == "list":
        return "list"
    if ending.cause in ("refused", 429):
        return "watch"
    if ending.stage == "watch request":
        return "list"
    if ending.cause in (None, "reset", "timeout"):
        return "list" if ending.seconds < 1 and ending.events == 0 else "watch"
    return "list"


# Any cached state for the first LIST ("0"); never older than what we saw for a re-list (the
# last version); the newest state ("") once the server said that version is unavailable.
def relist_resource_version(last: str, unavailable: bool) -> str:
    if unavailable:
        return ""
    return last or "0"


# 02b, exercise 2.
# The first watch starts at the list's version (not at any item's); every event moves the
# version forward, and a bookmark is an event: the second watch starts at the bookmark's.
answer_2 = ("120", "150")


# 02a, exercise 2. As client-go's delay() does, the cap limits only the growth: an initial
# delay above the cap is handed out once, as it is, and the cap from the second delay on.
def schedule(initial: float, factor: float, cap: float, n: int) -> list[float]:
    delays = []
    base = initial
    for _ in range(n):
        delays.append(base)
        base = min(base * factor, cap)
    return delays


# 02b, exercise 3.
def follow(list_watch: ListWatch, store: Indexer, stop: threading.Event) -> None:
    """List, then watch; watch again after a normal close; list again after a 410."""
    while not stop.is_set():
        listed = list_watch.list()
        version = listed["metadata"]["resourceVersion"]
        store.replace(listed["items"], version)
        try:
            while not stop.is_set():
                for event in list_watch.watch(version, timeout_seconds=60):
                    obj = event["object"]
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] == "ADDED":
                        store.add(obj)
                    elif event["type"] == "MODIFIED":
                        store.update(obj)
                    elif event["type"] == "DELETED":
                        store.delete(obj)
        except WatchExpired:
            continue  # our version is gone from etcd: only a fresh list helps


# 02a, exercise 1. The replace swaps everything for the list's items: the apple, not in the
# list, is gone, and the banana is the list's (green) one. The Node is cluster-scoped: its key
# is its name alone, and it is indexed under the namespace "". The tombstone deletes by its key,
# so the banana goes, and with it the last key under "shop": the index drops that value. The
# apple's delete finds no key, and changes nothing.
answer_store = (["farm/cherry", "kwok-node-0"], ["", "farm"])
