"""The one fast-JSON swap: orjson instead of the standard library, for the benchmarks.

The chapters teach with :mod:`json` and keep doing so: ``helpers.listwatch``
decodes LIST responses (with :func:`helpers.decode.decode_list`) and watch
events with it, and nothing here changes that unless :func:`install` is called.
The profile in benchmarks/RESULTS.md shows where the time goes; when decoding
is the cost, ``install()`` points ``helpers.listwatch`` at orjson (a compiled
decoder from PyPI) for the two places that decode: the ``decode_list`` it calls
for LIST responses and the ``json`` name its ``WatchStream`` uses for each
watch event. :func:`uninstall` puts the
standard library back.

Same objects, by test (tests/test_fastjson.py): where orjson refuses what the
standard library accepts (a lone surrogate in a string), the standard library
decodes it instead, and a malformed document raises the standard library's own
error. One difference remains, outside what Kubernetes sends: orjson reads an
integer beyond 64 bits as a float, where :mod:`json` keeps it exact. The API
server holds every number as int64 or float64, so it never sends one.

orjson decodes a LIST in one call, not item by item as
``helpers.decode.decode_list`` does, so the untrimmed items exist together
for a moment; orjson shares the strings of short keys itself (a key cache), so
the key interning that ``decode_list`` does by hand is not needed.
"""

from __future__ import annotations

import json
import types
from typing import Any

import orjson

from helpers import decode, listwatch

_STANDARD_DECODE_LIST = listwatch.decode_list
_STANDARD_JSON = listwatch.json


def loads(data: bytes | bytearray | str) -> Any:
    """Decode one JSON document with orjson, or with :mod:`json` where orjson refuses it."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # the same object, or the standard library's own error


def decode_list(
    source: bytes | str | decode.Readable, transform: decode.Transform | None = None
) -> dict[str, Any]:
    """``helpers.decode.decode_list`` with orjson: the LIST as a dict, items transformed.

    A response (``source`` with ``read``) is read whole first: orjson decodes
    one complete document.
    """
    if isinstance(source, bytes | bytearray | str):
        data = source
    else:
        data = b"".join(iter(lambda: source.read(READ_SIZE), b""))  # to its end, as json would
    document = loads(data)
    if transform is not None and isinstance(document, dict):
        items = document.get("items")
        if isinstance(items, list):
            document["items"] = [transform(item) for item in items]
    return document


READ_SIZE = 1 << 20
"""Bytes asked for per read of a response (orjson needs it whole: this only bounds a read)."""

# What WatchStream finds under the name ``json``: the standard module but for loads.
_FAST_JSON_MODULE = types.SimpleNamespace(**{**vars(json), "loads": loads})


def install() -> None:
    """Make ``helpers.listwatch`` decode with orjson (lists and watch events)."""
    listwatch.decode_list = decode_list
    # A namespace with json's names in place of the json module (mypy wants a module: the ignore)
    listwatch.json = _FAST_JSON_MODULE  # type: ignore[assignment]


def uninstall() -> None:
    """Put the standard library back in ``helpers.listwatch``."""
    listwatch.decode_list = _STANDARD_DECODE_LIST
    listwatch.json = _STANDARD_JSON


def installed() -> bool:
    return listwatch.decode_list is decode_list
