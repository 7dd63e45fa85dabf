"""Label selector parsing and matching, checked against apimachinery's scenarios.

Upstream file: apimachinery pkg/labels/selector_test.go.
"""

from __future__ import annotations

import pytest

from helpers.labels import (
    DOES_NOT_EXIST,
    EVERYTHING,
    EXISTS,
    IN,
    NOT_IN,
    Requirement,
    Selector,
    as_selector,
    parse,
    selector_from_set,
)


@pytest.mark.parametrize(
    "text",
    ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x==a"],
)
def test_selector_parse_good(text: str) -> None:
    """selector_test.go::TestSelectorParse: good strings parse and print back without spaces."""
    assert str(parse(text)) == text.replace(" ", "")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("x=a||y=b", "invalid value 'a||y'"),
        ("x==a==b", "expected ',' or end of selector, found '=='"),
        ("!x=a", "expected ',' or end of selector, found '='"),
        ("x<a", "operator '<' is not supported"),
        ("x in a", "expected '(' to open the value list, found 'a'"),
        ("x in (a", "expected a value, ',' or ')' in the value list, found end of selector"),
        ("x in (a b)", "expected a value, ',' or ')' in the value list, found 'b'"),
        ("x=a,", "expected a label key, found end of selector"),
        (",x", "expected a label key, found ','"),
        ("x y", "expected an operator after key 'x', found 'y'"),
        ("=a", "expected a label key, found '='"),
        ("-x=a", "invalid key '-x'"),
        ("Example.com/x", "prefix must be a lowercase DNS subdomain"),
        ("/x", "prefix before '/' must not be empty"),
        ("x=" + "v" * 64, "invalid value"),
    ],
)
def test_selector_parse_bad(text: str, problem: str) -> None:
    """selector_test.go::TestSelectorParse (bad strings), with a message that says what is wrong."""
    with pytest.raises(ValueError) as err:
        parse(text)
    message = str(err.value)
    assert message.startswith(f"invalid label selector {text!r}: ")
    assert problem in message


def test_error_position_points_at_the_problem() -> None:
    """The position in the message is where the offending token starts."""
    with pytest.raises(ValueError, match=r"at position 5$"):
        parse("x in a")


def test_deterministic_parse() -> None:
    """selector_test.go::TestDeterministicParse: requirement order does not change the selector."""
    assert parse("x=a,a=x") == parse("a=x,x=a")
    assert str(parse("x=a,a=x")) == "a=x,x=a"


def test_everything() -> None:
    """selector_test.go::TestEverything: matches anything and is empty."""
    assert EVERYTHING.matches({"x": "y"})
    assert EVERYTHING.empty()
    assert parse("") == EVERYTHING


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),  # "in"/"notin" are only keywords as operators
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
        ("x!=y", {}, True),  # absent counts as "not equal"
        ("x=", {"x": ""}, True),
        ("x=", {}, False),
    ],
)
def test_selector_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    """selector_test.go::TestSelectorMatches."""
    assert parse(text).matches(labels) is expected


@pytest.mark.parametrize(
    ("text", "requirements"),
    [
        ("\rx", [Requirement("x", EXISTS)]),
        (
            "this-is-a-dns.domain.com/key-with-dash",
            [Requirement("this-is-a-dns.domain.com/key-with-dash", EXISTS)],
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            [Requirement("0.1.2.domain/99", NOT_IN, frozenset({"10.10.100.1", "tick.tack.clock"}))],
        ),
        ("foo  in\t (abc)", [Requirement("foo", IN, frozenset({"abc"}))]),
        ("x notin\n (abc)", [Requirement("x", NOT_IN, frozenset({"abc"}))]),
        ("x in (abc,)", [Requirement("x", IN, frozenset({"abc", ""}))]),
        ("x in ()", [Requirement("x", IN, frozenset({""}))]),
        (
            "x notin (abc,def),bar,z in (),w",
            [
                Requirement("bar", EXISTS),
                Requirement("w", EXISTS),
                Requirement("x", NOT_IN, frozenset({"abc", "def"})),
                Requirement("z", IN, frozenset({""})),
            ],
        ),
        ("!a,b", [Requirement("a", DOES_NOT_EXIST), Requirement("b", EXISTS)]),
    ],
)
def test_set_selector_parser(text: str, requirements: list[Requirement]) -> None:
    """selector_test.go::TestSetSelectorParser: set-based syntax and whitespace."""
    assert parse(text) == Selector(tuple(requirements))


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
        ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
        ("x notin (),y", {"y": ""}, True),
        ("!x,y", {"y": ""}, True),
        ("x notin (),!y", {"y": ""}, False),
        ("x in ()", {"y": "baz"}, False),
        ("x,y in (a)", {"x": "", "y": "a"}, True),
        ("x,y in (a)", {"y": "a"}, False),
    ],
)
def test_requirement_selector_matching(text: str, labels: dict[str, str], expected: bool) -> None:
    """selector_test.go::TestRequirementSelectorMatching."""
    assert parse(text).matches(labels) is expected


def test_to_string() -> None:
    """selector_test.go::TestToString: canonical form, values sorted."""
    assert str(parse("z,y notin (jkl),x in (def,abc)")) == "x in (abc,def),y notin (jkl),z"
    assert str(parse("x notin (def,abc),y!=jkl,!z")) == "x notin (abc,def),y!=jkl,!z"


def test_set_matches() -> None:
    """selector_test.go::TestSetMatches: a {key: value} dict means equality on every pair."""
    labels = {"foo": "bar", "baz": "blah"}
    assert selector_from_set({}).matches(labels)
    assert selector_from_set({"foo": "bar"}).matches(labels)
    assert selector_from_set({"foo": "bar", "baz": "blah"}).matches(labels)
    assert not selector_from_set({"foo": "blah"}).matches(labels)
    assert selector_from_set({}).empty()


def test_set_rejects_bad_keys_and_values() -> None:
    """apimachinery ValidatedSelectorFromSet: a dict is validated like a string."""
    with pytest.raises(ValueError, match="invalid value '=blah'"):
        selector_from_set({"foo": "=blah"})
    with pytest.raises(ValueError, match="invalid key 'bad key'"):
        selector_from_set({"bad key": "x"})


def test_as_selector_accepts_the_usual_shapes() -> None:
    """None, a string, a dict and a Selector all work where a selector is expected."""
    assert as_selector(None) is EVERYTHING
    expected = Selector((Requirement("a", "=", frozenset({"b"})),))
    assert as_selector("a=b") == as_selector({"a": "b"}) == expected
    sel = parse("a")
    assert as_selector(sel) is sel
    with pytest.raises(TypeError):
        as_selector(42)  # type: ignore[arg-type]


def test_missing_labels_are_an_empty_map() -> None:
    """An object without metadata.labels has no labels; it is not an error."""
    assert parse("!app").matches(None)
    assert not parse("app").matches(None)
