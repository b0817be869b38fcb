"""The eval run's summary page and end-of-run table: figures, plots, links, hostile text inert."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest
from pydantic import ValidationError
from rich.console import Console

from frognano.eval.figures import Agreement
from frognano.eval.pages import Headline, headline, safe_href, summary_page, terminal_table
from frognano.eval.plot import Point, resolved_curve
from frognano.eval.records import Attempt, InstanceResult, Official, Status, TestsStatus, Verdict

# --- the records ---------------------------------------------------------------------------


def _attempt(  # noqa: PLR0917 - a table of test records reads best positionally
    number: int,
    status: Status,
    steps: int = 0,
    tokens: int = 0,
    ready: bool | None = None,
    reason: str = "graded",
    stop_reason: str | None = None,
) -> Attempt:
    official = Official(
        status=status,
        reason=reason,
        patch_applied=status != "empty_patch",
        fail_to_pass=TestsStatus(success=[], failure=[]),
        pass_to_pass=TestsStatus(success=[], failure=[]),
        seconds=2.5,
    )
    verdict = None
    if ready is not None:
        verdict = Verdict(ready=ready, reason="checked", strength=[0.0], evidence="tests")
    return Attempt(
        attempt=number,
        model_patch="" if status == "empty_patch" else "diff --git a/x b/x\n",
        official=official,
        verdict=verdict,
        steps=steps,
        prompt_tokens=tokens - tokens // 4,
        completion_tokens=tokens // 4,
        agent_seconds=12.25,
        stop_reason=stop_reason,
        run_dir=f"attempt-{number}",
    )


def _result(instance_id: str, *attempts: Attempt, chosen: int = 0) -> InstanceResult:
    return InstanceResult(
        instance_id=instance_id,
        mode="agent",
        model_name_or_path="frognano",
        attempts=list(attempts),
        chosen=chosen,
    )


def _trajectory(result: InstanceResult, attempt: Attempt) -> str | None:
    return f"instances/{result.instance_id}/{attempt.run_dir}/trajectory.html"


# Resolved at steps 3, 10 and 10, one unresolved at 7: 1 of 4 within 3 steps, 3 of 4 within 10.
FOUR = [
    _result("a__a-1", _attempt(1, "resolved", 3, 1_000, ready=True)),
    _result("a__a-2", _attempt(1, "resolved", 10, 20_000, ready=False)),
    _result("a__a-3", _attempt(1, "resolved", 10, 20_000, ready=True)),
    _result("a__a-4", _attempt(1, "unresolved", 7, 500, ready=True)),
]

# --- the page, parsed -----------------------------------------------------------------------

_VOID = {"meta", "br", "img", "input", "link", "hr", "source", "wbr", "area", "base", "col"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    children: list[Element | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.walk()

    def find(self, tag: str, **attrs: str) -> list[Element]:
        return [
            e
            for e in self.walk()
            if e.tag == tag and all(e.attrs.get(k) == v for k, v in attrs.items())
        ]

    def by_id(self, key: str) -> Element:
        (found,) = [e for e in self.walk() if e.attrs.get("id") == key]
        return found


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs))
        self.stack[-1].children.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        # Well-formed output closes what it opens: a stray end tag is a bug to see.
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Element:
    tree = _Tree()
    tree.feed(page)
    tree.close()
    assert tree.stack == [tree.root], "unclosed elements"
    return tree.root


def rows(page: Element) -> list[dict[str, str]]:
    found = []
    for row in page.find("tr", **{"class": "instance"}):
        cells = [c for c in row.children if isinstance(c, Element)]
        found.append({(c.attrs["class"] or "").split()[0]: c.text() for c in cells})
    return found


def plot(page: Element, unit: str) -> Element:
    (svg,) = [
        s
        for s in page.find("svg")
        if any(t.text() == f"resolved against {unit}" for t in s.find("title"))
    ]
    return svg


def _f(element: Element, name: str) -> float:
    return float(element.attrs[name] or "nan")


# --- the figures ----------------------------------------------------------------------------


def test_the_headline_counts_each_status_and_the_verdicts_agreement() -> None:
    results = [
        *FOUR,
        _result("b__b-1", _attempt(1, "empty_patch", 2, 100, ready=False)),
        _result("b__b-2", _attempt(1, "error", 0, 0)),
    ]
    page = parse(summary_page(results, title="run", links=_trajectory))
    counts = {key: page.by_id(key).text() for key in ("instances", "resolved", "unresolved")}
    assert counts == {"instances": "6", "resolved": "3", "unresolved": "1"}
    assert page.by_id("empty-patch").text() == "1"
    assert page.by_id("error").text() == "1"
    assert page.by_id("resolved-rate").text() == "50.0%"
    # ready: a-1 and a-3 resolved, a-4 not; not ready: a-2 resolved, b-1 not; b-2 has none.
    table = {
        key: page.by_id(key).text()
        for key in ("ready-resolved", "ready-unresolved", "not-ready-resolved")
    }
    assert table == {"ready-resolved": "2", "ready-unresolved": "1", "not-ready-resolved": "1"}
    assert page.by_id("not-ready-unresolved").text() == "1"
    assert (page.by_id("agreed").text(), page.by_id("judged").text()) == ("3", "5")
    assert page.by_id("no-verdict").text() == "1"
    # One attempt each: no pass@k, no best-of-K to speak of.
    assert not [e for e in page.walk() if (e.attrs.get("id") or "").startswith(("pass-", "best"))]


def test_pass_at_k_and_best_of_k_over_several_attempts() -> None:
    def tries(*statuses: Status) -> list[Attempt]:
        return [_attempt(n, status) for n, status in enumerate(statuses, 1)]

    results = [
        _result("c__c-1", *tries("unresolved", "resolved", "unresolved"), chosen=1),
        _result("c__c-2", *tries("unresolved", "unresolved", "unresolved"), chosen=2),
        _result("c__c-3", *tries("resolved", "unresolved", "resolved"), chosen=2),
    ]
    figures = headline(results)
    # pass@k = 1 - C(n-c, k) / C(n, k) with n = 3: c-1 (c = 1) 1/3, 2/3, 1; c-2 (c = 0) 0, 0,
    # 0; c-3 (c = 2) 2/3, 1, 1. Best-of-K chose a resolving attempt for c-1 and c-3.
    assert figures.pass_at.keys() == {1, 2, 3}
    assert figures.pass_at[1] == pytest.approx(1 / 3)
    assert figures.pass_at[2] == pytest.approx(5 / 9)
    assert figures.pass_at[3] == pytest.approx(2 / 3)
    assert figures.best_of == pytest.approx(2 / 3)
    assert figures.resolved == 2  # the chosen attempts, as predictions.jsonl submits them
    page = parse(summary_page(results, title="run", links=_trajectory))
    shown = {k: page.by_id(k).text() for k in ("pass-at-1", "pass-at-2", "pass-at-3", "best-of")}
    assert shown == {
        "pass-at-1": "33.3%",
        "pass-at-2": "55.6%",
        "pass-at-3": "66.7%",
        "best-of": "66.7%",
    }
    assert [row["chosen"] for row in rows(page)] == [
        "2 (resolved)", "3 (unresolved)", "3 (resolved)",
    ]  # fmt: skip
    assert [row["attempts"] for row in rows(page)] == ["1 2 3"] * 3


def test_figures_given_are_the_figures_shown() -> None:
    given = Headline(
        instances=4, resolved=3, unresolved=1, empty_patch=0, error=0,
        agreement=Agreement(ready_resolved=2), pass_at={1: 0.5, 8: 0.875}, best_of=0.625,
    )  # fmt: skip
    page = parse(summary_page(FOUR, title="run", links=_trajectory, figures=given))
    assert page.by_id("pass-at-8").text() == "87.5%"
    assert page.by_id("best-of").text() == "62.5%"
    assert page.by_id("ready-resolved").text() == "2"


def test_one_row_per_instance_with_its_first_attempts_figures() -> None:
    page = parse(summary_page(FOUR, title="run", links=_trajectory))
    found = rows(page)
    assert [row["id"] for row in found] == ["a__a-1", "a__a-2", "a__a-3", "a__a-4"]
    assert found[1] == {
        "id": "a__a-2",
        "status": "resolved",
        "reason": "graded",
        "verdict": "not ready",
        "agree": "no",
        "steps": "10",
        "tokens": "20,000",
        "agent-s": "12.2",  # 12.25 rounds half to even
        "eval-s": "2.5",
        "chosen": "1",
        "attempts": "1",
    }
    assert [(row["verdict"], row["agree"]) for row in found] == [
        ("ready", "yes"), ("not ready", "no"), ("ready", "yes"), ("ready", "no"),
    ]  # fmt: skip


def test_a_record_without_attempts_is_refused_and_one_without_a_verdict_shows() -> None:
    with pytest.raises(ValidationError, match="at least 1"):
        _result("d__d-1")
    with pytest.raises(ValidationError, match="chosen is 1, with 1 attempt"):
        _result("d__d-1", _attempt(1, "error"), chosen=1)
    results = [
        _result("d__d-2", _attempt(1, "error", stop_reason="model_error")),
        _result("d__d-3", _attempt(1, "error")),
    ]
    page = parse(summary_page(results, title="run", links=_trajectory))
    found = rows(page)
    assert [(r["status"], r["verdict"], r["agree"]) for r in found] == [
        ("error", "none", "—"), ("error", "none", "—"),
    ]  # fmt: skip
    assert "stopped: model_error" in found[0]["reason"]
    assert page.by_id("error").text() == "2"
    empty = parse(summary_page([], title="nothing", links=_trajectory))
    assert empty.by_id("resolved-rate").text() == "—"
    assert rows(empty) == []


# --- the plots ------------------------------------------------------------------------------


def test_the_curve_is_the_share_of_all_instances_resolved_within_each_budget() -> None:
    runs = [(3, True), (10, True), (10, True), (7, False)]
    assert resolved_curve(runs) == [Point(3, 1, 4), Point(10, 3, 4)]
    assert [p.rate for p in resolved_curve(runs)] == [0.25, 0.75]
    assert resolved_curve([(5, False)]) == []


def _path_vertices(d: str) -> list[tuple[float, float]]:
    """The corners of a path made of absolute M, H and V commands."""
    x = y = 0.0
    found = []
    for command, first, second in re.findall(r"([MHV])([-\d.]+)(?:[ ,]([-\d.]+))?", d):
        if command == "M":
            x, y = float(first), float(second)
        elif command == "H":
            x = float(first)
        else:
            y = float(first)
        found.append((x, y))
    return found


def test_the_steps_plot_draws_the_hand_computed_points_against_its_axes() -> None:
    svg = plot(parse(summary_page(FOUR, title="run", links=_trajectory)), "steps")
    points = svg.find("circle", **{"class": "point"})
    drawn = [
        (p.attrs["data-budget"], p.attrs["data-resolved"], p.attrs["data-total"]) for p in points
    ]
    assert drawn == [("3", "1", "4"), ("10", "3", "4")]
    grid = {float(g.attrs["data-rate"] or ""): _f(g, "y1") for g in svg.find("line")
            if g.attrs.get("class") == "grid"}  # fmt: skip
    ticks = {int(t.attrs["data-value"] or ""): _f(t, "x1") for t in svg.find("line")
             if t.attrs.get("class") == "tick"}  # fmt: skip
    assert sorted(ticks) == [0, 2, 4, 6, 8, 10]
    # The y axis runs from 0% at its foot to 100% at its head, the x axis from 0 to 10 steps.
    (axis,) = [p for p in svg.find("path") if p.attrs.get("class") == "axis"]
    head, foot, end = _path_vertices(axis.attrs["d"] or "")
    assert (head, foot, end) == (
        (ticks[0], grid[1.0]),
        (ticks[0], grid[0.0]),
        (ticks[10], grid[0.0]),
    )
    # 1 of 4 sits on the 25% grid line, 3 of 4 on the 75% one; 10 steps on its tick, 3 midway
    # between the ticks for 2 and 4.
    assert [_f(p, "cy") for p in points] == [grid[0.25], grid[0.75]]
    assert _f(points[1], "cx") == ticks[10]
    assert _f(points[0], "cx") == pytest.approx((ticks[2] + ticks[4]) / 2, abs=0.1)
    # The curve starts at 0% at no steps, passes through each point and ends at the axis' end.
    (curve,) = [p for p in svg.find("path") if p.attrs.get("class") == "curve"]
    corners = _path_vertices(curve.attrs["d"] or "")
    assert corners[0] == (ticks[0], grid[0.0])
    assert all((_f(p, "cx"), _f(p, "cy")) in corners for p in points)
    assert corners[-1] == (ticks[10], grid[0.75])
    assert [t.text() for t in svg.find("text")][-2:] == [
        "steps used, at most", "resolved (share of all instances)",
    ]  # fmt: skip


def test_the_tokens_plot_is_logarithmic_in_powers_of_ten() -> None:
    svg = plot(parse(summary_page(FOUR, title="run", links=_trajectory)), "tokens")
    ticks = {int(t.attrs["data-value"] or ""): _f(t, "x1") for t in svg.find("line")
             if t.attrs.get("class") == "tick"}  # fmt: skip
    assert sorted(ticks) == [100, 1_000, 10_000, 100_000]
    labels = [t.text() for t in svg.find("text")]
    assert {"100", "1k", "10k", "100k"} <= set(labels)
    points = svg.find("circle", **{"class": "point"})
    assert [p.attrs["data-budget"] for p in points] == ["1000", "20000"]
    assert _f(points[0], "cx") == ticks[1_000]
    decade = ticks[100_000] - ticks[10_000]
    assert _f(points[1], "cx") == pytest.approx(ticks[10_000] + math.log10(2) * decade, abs=0.1)


def test_runs_that_counted_nothing_get_a_sentence_not_a_plot() -> None:
    gold = [_result(f"g__g-{n}", _attempt(1, "resolved")) for n in range(3)]
    page = parse(summary_page(gold, title="gold", links=_trajectory))
    assert page.find("svg") == []
    texts = [p.text() for p in page.find("p")]
    assert "No attempt recorded any steps." in texts
    assert "No attempt recorded any tokens." in texts


def test_the_page_is_byte_identical_for_the_same_records() -> None:
    copies = [InstanceResult.model_validate_json(r.model_dump_json()) for r in FOUR]
    first = summary_page(FOUR, title="run", links=_trajectory)
    assert summary_page(copies, title="run", links=_trajectory) == first
    assert summary_page(FOUR[:3], title="run", links=_trajectory) != first


# --- links and hostile text ----------------------------------------------------------------

HOSTILE = (
    "<script>alert(1)</script><img src=http://evil.example/x.png onerror=alert(2)>"
    '<a href="javascript:alert(3)">x</a>[bold red]boom[/bold red]\x1b[2J'
)
# Every element the page itself draws; anything else came from the records.
_OURS = {
    "#document", "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "table",
    "thead", "tbody", "tr", "th", "td", "span", "div", "code", "a", "svg", "line", "text",
    "path", "circle",
}  # fmt: skip


@pytest.mark.parametrize(
    "href",
    [
        "https://evil.example/x",
        "//evil.example/x",
        "/etc/passwd",
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "java\tscript:alert(1)",
        " javascript:alert(1)",
        "java\nscript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "\\\\evil.example\\x",
        "/\\evil.example",
        "instances/x/\x00trajectory.html",
        "",
        None,
    ],
)
def test_only_relative_paths_become_links(href: str | None) -> None:
    assert safe_href(href) is None
    page = parse(summary_page(FOUR[:1], title="run", links=lambda _r, _a: href))
    assert page.find("a") == []
    assert rows(page)[0]["attempts"] == "1"


@pytest.mark.parametrize(
    "href", ["instances/a__a-1/attempt-1/trajectory.html", "../x.html", "a.html#step-3"]
)
def test_a_relative_path_is_a_link(href: str) -> None:
    assert safe_href(href) == href
    page = parse(summary_page(FOUR[:1], title="run", links=lambda _r, _a: href))
    assert [(a.attrs, a.text()) for a in page.find("a")] == [({"href": href}, "1")]


def test_each_attempt_links_its_own_trajectory() -> None:
    result = _result("e__e-1", _attempt(1, "unresolved"), _attempt(2, "resolved"), chosen=1)
    page = parse(summary_page([result], title="run", links=_trajectory))
    assert [a.attrs["href"] for a in page.find("a")] == [
        "instances/e__e-1/attempt-1/trajectory.html",
        "instances/e__e-1/attempt-2/trajectory.html",
    ]


def test_a_quote_in_a_relative_path_cannot_add_an_attribute() -> None:
    href = 'x.html"onmouseover="alert(1)'
    page = parse(summary_page(FOUR[:1], title="run", links=lambda _r, _a: href))
    assert [a.attrs for a in page.find("a")] == [{"href": href}]


def test_hostile_text_from_the_records_comes_out_as_text() -> None:
    result = _result(
        HOSTILE,
        _attempt(1, "resolved", 4, 100, ready=True, reason=HOSTILE, stop_reason=HOSTILE),
    )
    raw = summary_page([result], title=HOSTILE, links=lambda _r, _a: "javascript:alert(4)")
    page = parse(raw)
    assert {e.tag for e in page.walk()} <= _OURS
    assert page.find("script") == []
    assert page.find("img") == []
    assert page.find("a") == []
    handlers = [k for e in page.walk() for k in e.attrs if k.startswith("on")]
    assert handlers == []
    shown = HOSTILE.replace("\x1b", "\\x1b")  # the control character shown, not sent
    (row,) = rows(page)
    assert row["id"] == shown
    assert row["reason"] == shown + "stopped: " + shown
    assert page.find("h1")[0].text() == shown
    assert "\x1b" not in raw


def test_the_page_fetches_nothing_and_runs_nothing() -> None:
    raw = summary_page(FOUR, title="run", links=_trajectory)
    page = parse(raw)
    sources = [k for e in page.walk() for k in e.attrs if k in ("src", "srcset", "xlink:href")]
    assert sources == []
    assert {e.tag for e in page.walk()} <= _OURS
    (style,) = page.find("style")
    assert "url(" not in style.text()
    assert "@import" not in style.text()
    (policy,) = page.find("meta", **{"http-equiv": "Content-Security-Policy"})
    assert (policy.attrs["content"] or "").startswith("default-src 'none'")
    assert all((a.attrs["href"] or "").startswith("instances/") for a in page.find("a"))


# --- the terminal table ---------------------------------------------------------------------


def _printed(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, force_terminal=True, color_system="truecolor", width=400).print(renderable)
    return out.getvalue()


def test_the_terminal_table_has_a_row_per_instance() -> None:
    table = terminal_table(FOUR, title="SWE-bench Lite")
    assert [c.header for c in table.columns] == [
        "instance", "status", "verdict", "steps", "tokens", "seconds",
    ]  # fmt: skip
    assert table.row_count == 4
    assert [str(c) for c in table.columns[0].cells] == [r.instance_id for r in FOUR]
    assert [str(c) for c in table.columns[2].cells] == ["ready", "not ready", "ready", "ready"]
    assert [str(c) for c in table.columns[4].cells] == ["1,000", "20,000", "20,000", "500"]
    assert [str(c) for c in table.columns[5].cells] == ["14.8"] * 4  # 12.25 agent + 2.5 eval
    assert "3 of 4 resolved (75.0%)" in _printed(table)


def test_the_terminal_table_prints_markup_and_escapes_as_text() -> None:
    # The control: the same text printed as a string is taken for markup and obeyed.
    assert "[bold red]" not in _printed("[bold red]boom[/bold red]")
    printed = _printed(terminal_table([_result(HOSTILE, _attempt(1, "error"))], title=HOSTILE))
    assert "[bold red]boom[/bold red]" in printed
    assert "\x1b[2J" not in printed
    assert "\\x1b[2J" in printed
