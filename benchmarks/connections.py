"""What the Python clients' connections did: the HTTP version of each response, and how many opened.

The Go program reports the same two facts about client-go's requests
(benchmarks/go/informerbench), so every row of a table says which HTTP version
it was measured at and whether its clock included opening a connection.

Every Python client here (ours, the official one, the wire readers) sends its
requests through the ``kubernetes`` client's urllib3 ``PoolManager``.
:class:`ConnectionRecorder` wraps that manager's ``urlopen``, which sees each
response, and reads urllib3's own count of the connections each pool opened.
urllib3 speaks HTTP/1.1 only, so the answer is always that; it is read from
the responses rather than assumed, as on the Go side.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import kubernetes

HTTP_VERSIONS = {10: "HTTP/1.0", 11: "HTTP/1.1", 20: "HTTP/2"}
"""urllib3's ``HTTPResponse.version`` numbers, named as Go names them."""


class ConnectionRecorder:
    """Counts the HTTP versions of an API client's responses, and its connections opened since."""

    def __init__(self, api: kubernetes.client.ApiClient) -> None:
        self._manager = api.rest_client.pool_manager
        self._opened_before = self._connections()
        self.versions: Counter[str] = Counter()
        urlopen = self._manager.urlopen

        def recording_urlopen(*args: Any, **kwargs: Any) -> Any:
            response = urlopen(*args, **kwargs)
            self.versions[HTTP_VERSIONS.get(response.version, str(response.version))] += 1
            return response

        self._manager.urlopen = recording_urlopen  # the instance's, not the class's

    def _connections(self) -> int:
        """Connections urllib3 has opened so far, over all of the manager's pools."""
        pools = self._manager.pools  # a RecentlyUsedContainer: it refuses iteration, not keys()
        return sum(pools[key].num_connections for key in pools.keys())  # noqa: SIM118

    def start(self) -> None:
        """Count connections opened from now on (when the clock starts)."""
        self._opened_before = self._connections()

    def fields(self) -> dict[str, Any]:
        """``http`` (the versions seen, joined) and ``connections_opened`` since :meth:`start`."""
        return {
            "http": ", ".join(sorted(self.versions)) or "none",
            "connections_opened": self._connections() - self._opened_before,
        }
