"""Solutions to chapter 01's exercises. Try them yourself first!"""

from __future__ import annotations

import json
from collections.abc import Iterator

import kubernetes


def watch_from(
    api: kubernetes.client.ApiClient, path: str, resource_version: str, timeout_seconds: int
) -> Iterator[tuple[str, str]]:
    response = api.call_api(
        path,
        "GET",
        query_params=[
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds)),
        ],
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        _request_timeout=(5, timeout_seconds + 5),
    )
    try:
        for line in iter(response.readline, b""):
            event = json.loads(line)
            yield event["type"], event["object"]["metadata"].get("name", "")
    finally:
        response.release_conn()


# (a) Without resourceVersionMatch, a LIST's resourceVersion is a lower bound ("not older
# than"): the server may answer with any newer state, so it answers 200 with its newest one.
# (b) With a limit, a legacy rule makes the version exact, because every page must show the
# same moment: that moment is compacted away, so 410. client-go's reflector, when it re-lists
# at its last version, asks without a limit (chapter 02b): the watch cache can answer such a
# LIST, and it cannot be a 410.
answer_2 = (200, 410)

# One list, then a watch every 2 s: at 0, 2 and 4 s.
answer_3 = 4
