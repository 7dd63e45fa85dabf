"""Solutions to chapter 02's exercises (02a and 02b). Try them yourself first!"""

from __future__ import annotations

import threading

from helpers.listwatch import ListWatch, WatchExpired
from helpers.store import Indexer

# 02b, exercise 1.
# Only a 410 (the version is gone) or a very short watch (a failing server) leads back to a
# LIST. A watch that ends on time or whose connection breaks is watched again from the last
# version seen; so is a 429, after a backoff (a LIST would only add load).
answer_1 = {"a": "watch", "b": "watch", "c": "list", "d": "watch", "e": "list"}


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
