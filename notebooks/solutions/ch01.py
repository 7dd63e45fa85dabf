"""Solutions to chapter 01's exercises. Try them yourself first!"""

from __future__ import annotations

import json

import kubernetes


class WatchFailed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"the watch ended with an ERROR event, code {code}")
        self.code = code


def watch_once(
    api: kubernetes.client.ApiClient, path: str, resource_version: str, timeout_seconds: int
) -> tuple[list[tuple[str, str]], str]:
    response = api.call_api(
        path,
        "GET",
        query_params=[
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds)),
            ("allowWatchBookmarks", "true"),
        ],
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        _request_timeout=(5, timeout_seconds + 5),
    )
    changes, version = [], resource_version
    try:
        for line in iter(response.readline, b""):
            event = json.loads(line)
            if event["type"] == "ERROR":  # the object is a Status, with no resourceVersion
                raise WatchFailed(event["object"].get("code"))
            # Every event moves the version on, a bookmark's too: after a replay (from "" or
            # "0") the objects come in key order, and only the bookmark that ends it says
            # where the replay stands.
            version = event["object"]["metadata"]["resourceVersion"]
            if event["type"] != "BOOKMARK":
                changes.append((event["type"], event["object"]["metadata"]["name"]))
    finally:
        response.close()
        response.release_conn()
    return changes, version


# (a) Without resourceVersionMatch, a LIST's resourceVersion is a lower bound ("not older
# than"): the server may answer with any newer state, so it answers 200 with its newest one.
# (b) With a limit, a legacy rule makes the version exact, because every page must show the
# same moment: that moment is compacted away, so 410. client-go's reflector, when it re-lists
# at its last version, asks without a limit (chapter 02b): the watch cache can answer such a
# LIST, and it cannot be a 410.
answer_2 = (200, 410)

# One list, then a watch every 2 s: at 0, 2 and 4 s.
answer_3 = 4
