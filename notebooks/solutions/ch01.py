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


# The HTTP status line says "410 Gone"; the Status object's reason is "Expired".
answer_2 = (410, "Expired")

# One list, then a watch every 2 s: at 0, 2 and 4 s.
answer_3 = 4
