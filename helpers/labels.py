"""Label selectors: parse ``"app=nginx,tier in (web,api),!canary"`` and match label maps.

client-go counterpart: ``k8s.io/apimachinery/pkg/labels`` (``selector.go``:
``Parse``, ``Requirement``, ``SelectorFromSet``). Listers take a selector so a
controller can ask its cache the same question it would ask the API server
with ``?labelSelector=...``; the two must agree on the syntax and the meaning.

Supported, with the API server's meaning:

==================  =========================================================
``a=b``, ``a==b``   label ``a`` exists and equals ``b``
``a!=b``            label ``a`` is absent, or differs from ``b``
``a in (x,y)``      label ``a`` exists and is one of the values
``a notin (x,y)``   label ``a`` is absent, or is none of the values
``a``               label ``a`` exists (any value)
``!a``              label ``a`` is absent
==================  =========================================================

Requirements are separated by commas and all must hold. The empty selector
matches everything. Left out: the numeric ``a>1`` / ``a<1`` operators.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NoReturn, TypeGuard

# Operator spellings as they appear in a selector string.
EQUALS = "="
DOUBLE_EQUALS = "=="
NOT_EQUALS = "!="
IN = "in"
NOT_IN = "notin"
EXISTS = "exists"
DOES_NOT_EXIST = "!"

_VALUE_OPERATORS = frozenset({EQUALS, DOUBLE_EQUALS, NOT_EQUALS, IN, NOT_IN})

# Label syntax (apimachinery util/validation): an optional DNS-subdomain prefix
# and a "/" before a name of at most 63 characters; values follow the name rules
# but may be empty.
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class Requirement:
    """One condition on one label key (apimachinery ``labels.Requirement``)."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a label map satisfies this requirement."""
        present = self.key in labels
        if self.operator in (EQUALS, DOUBLE_EQUALS, IN):
            return present and labels[self.key] in self.values
        if self.operator in (NOT_EQUALS, NOT_IN):
            # Absent counts as "not equal": the API server agrees.
            return not present or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return present
        return not present  # DOES_NOT_EXIST

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({','.join(sorted(self.values))})"
        (value,) = self.values
        return f"{self.key}{self.operator}{value}"


@dataclass(frozen=True)
class Selector:
    """All of its requirements must hold; no requirements match everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a label map (``metadata.labels``, possibly missing) is selected."""
        labels = labels or {}
        return all(req.matches(labels) for req in self.requirements)

    def empty(self) -> bool:
        """True for the select-everything selector, so callers can skip matching."""
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(req) for req in self.requirements)


EVERYTHING = Selector()
"""The selector that matches every object (apimachinery ``labels.Everything()``)."""

SelectorLike = str | Mapping[str, str] | Selector | None


def as_selector(selector: SelectorLike) -> Selector:
    """Turn ``None``, a selector string, a ``{key: value}`` dict or a Selector into a Selector."""
    if selector is None:
        return EVERYTHING
    if isinstance(selector, Selector):
        return selector
    if isinstance(selector, str):
        return parse(selector)
    if isinstance(selector, Mapping):
        return selector_from_set(selector)
    raise TypeError(f"expected a label selector string, dict or Selector, got {selector!r}")


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """Equality on every pair of ``labels`` (apimachinery ``ValidatedSelectorFromSet``)."""
    source = ",".join(f"{k}={v}" for k, v in labels.items())
    reqs = []
    for key, value in labels.items():
        _check_key(key, source)
        _check_value(value, source)
        reqs.append(Requirement(key, EQUALS, frozenset({value})))
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


# --- parsing ----------------------------------------------------------------

# A token is an operator symbol or an identifier (any run of other non-space
# characters). "in" and "notin" are identifiers; they are keywords only where an
# operator is expected, so "notin=in" is a valid selector. Whitespace separates
# tokens and is otherwise ignored.
_SYMBOLS = frozenset({"==", "!=", "=", "!", "(", ")", ",", "<", ">"})
_TOKEN = re.compile(r"==|!=|[=!(),<>]|[^\s=!(),<>]+")


def parse(selector: str) -> Selector:
    """Parse the label selector string syntax (apimachinery ``labels.Parse``).

    Raises ``ValueError`` naming the selector, the problem and the position.
    Requirements are sorted by key, as upstream does, so equal selectors print
    the same.
    """
    return Selector(tuple(sorted(_Parser(selector).parse(), key=lambda r: r.key)))


class _Parser:
    """A recursive-descent parser over a token list; one instance per string."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = [(m.group(), m.start()) for m in _TOKEN.finditer(source)]
        self.i = 0

    # -- token helpers
    def peek(self) -> str | None:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else None

    def position(self) -> int:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else len(self.source)

    def next(self) -> str | None:
        tok = self.peek()
        self.i += 1
        return tok

    def fail(self, problem: str) -> NoReturn:
        raise ValueError(
            f"invalid label selector {self.source!r}: {problem} at position {self.position()}"
        )

    @staticmethod
    def is_ident(tok: str | None) -> TypeGuard[str]:
        return tok is not None and tok not in _SYMBOLS

    def found(self) -> str:
        tok = self.peek()
        return "end of selector" if tok is None else repr(tok)

    # -- grammar
    def parse(self) -> list[Requirement]:
        if not self.tokens:
            return []
        reqs = [self.requirement()]
        while self.peek() is not None:
            if self.peek() != ",":
                self.fail(f"expected ',' or end of selector, found {self.found()}")
            self.next()
            reqs.append(self.requirement())
        return reqs

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.next()
            key = self.key()
            return Requirement(key, DOES_NOT_EXIST)
        key = self.key()
        op = self.peek()
        if op is None or op == ",":
            return Requirement(key, EXISTS)
        if op in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
            self.next()
            return Requirement(key, op, frozenset({self.single_value()}))
        if op in (IN, NOT_IN):
            self.next()
            return Requirement(key, op, self.value_list())
        if op in ("<", ">"):
            self.fail(f"operator {op!r} is not supported here (only =, ==, !=, in, notin, !)")
        self.fail(f"expected an operator after key {key!r}, found {self.found()}")

    def key(self) -> str:
        tok, pos = self.peek(), self.position()
        if not self.is_ident(tok):
            self.fail(f"expected a label key, found {self.found()}")
        self.next()
        _check_key(tok, self.source, pos)
        return tok

    def single_value(self) -> str:
        tok, pos = self.peek(), self.position()
        if tok is None or tok == ",":
            return ""  # "a=" selects the empty value
        if not self.is_ident(tok):
            self.fail(f"expected a label value, found {self.found()}")
        self.next()
        _check_value(tok, self.source, pos)
        return tok

    def value_list(self) -> frozenset[str]:
        if self.peek() != "(":
            self.fail(f"expected '(' to open the value list, found {self.found()}")
        self.next()
        values: set[str] = set()
        want_value = True
        while True:
            tok, pos = self.peek(), self.position()
            if tok == ")" or tok == ",":
                if want_value:
                    values.add("")  # "(a,)" and "()" hold the empty value, as upstream
                self.next()
                if tok == ")":
                    return frozenset(values)
                want_value = True
            elif self.is_ident(tok) and want_value:
                _check_value(tok, self.source, pos)
                values.add(tok)
                self.next()
                want_value = False
            else:
                self.fail(f"expected a value, ',' or ')' in the value list, found {self.found()}")


def _check_key(key: str, source: str, position: int | None = None) -> None:
    """Reject keys the API server would reject (a qualified name with an optional prefix)."""
    prefix, slash, name = key.rpartition("/")
    problem = None
    if slash and not prefix:
        problem = "prefix before '/' must not be empty"
    elif slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        problem = "prefix must be a lowercase DNS subdomain of at most 253 characters"
    elif len(name) > 63 or not _NAME.match(name):
        problem = (
            "name must be at most 63 characters, alphanumeric at both ends, "
            "with only '-', '_' or '.' inside"
        )
    if problem:
        where = "" if position is None else f" at position {position}"
        raise ValueError(
            f"invalid label selector {source!r}: invalid key {key!r}{where}: {problem}"
        )


def _check_value(value: str, source: str, position: int | None = None) -> None:
    """Reject label values the API server would reject; the empty value is allowed."""
    if value and (len(value) > 63 or not _NAME.match(value)):
        where = "" if position is None else f" at position {position}"
        raise ValueError(
            f"invalid label selector {source!r}: invalid value {value!r}{where}: must be at most "
            "63 characters, alphanumeric at both ends, with only '-', '_' or '.' inside"
        )
