"""Resolved rate against a budget (steps, tokens): the cumulative curve, as inline SVG."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Point", "budget_plot", "resolved_curve"]

# The drawing in SVG user units (viewBox); the page's CSS scales it to the column's width.
WIDTH, HEIGHT = 480, 300
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 16, 48
PLOT_WIDTH = WIDTH - LEFT - RIGHT
PLOT_HEIGHT = HEIGHT - TOP - BOTTOM
RATE_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
# More ticks than this crowd the labels on a narrow page.
_MAX_TICKS = 6


@dataclass(frozen=True)
class Point:
    """One step of the curve: `resolved` of `total` instances were resolved within `budget`."""

    budget: int
    resolved: int
    total: int

    @property
    def rate(self) -> float:
        return self.resolved / self.total


def resolved_curve(runs: Sequence[tuple[int, bool]]) -> list[Point]:
    """Each run is (budget used, resolved); for each budget a resolving run used, ascending,
    how many of all the runs were resolved within it (unresolved runs count in the total)."""
    used = sorted(budget for budget, resolved in runs if resolved)
    return [
        Point(budget, index + 1, len(runs))
        for index, budget in enumerate(used)
        if index + 1 == len(used) or used[index + 1] != budget
    ]


@dataclass(frozen=True)
class _Axis:
    low: int
    high: int
    log: bool
    ticks: tuple[int, ...]

    def x(self, value: int) -> float:
        if self.log:
            # A run that used nothing (no tokens counted) sits at the axis' start.
            value = max(value, self.low)
            share = math.log10(value / self.low) / math.log10(self.high / self.low)
        else:
            share = (value - self.low) / (self.high - self.low)
        return LEFT + share * PLOT_WIDTH


def _nice_steps() -> Iterator[int]:
    scale = 1
    while True:
        yield from (scale, 2 * scale, 5 * scale)
        scale *= 10


def _linear_axis(largest: int) -> _Axis:
    step = next(s for s in _nice_steps() if math.ceil(largest / s) <= _MAX_TICKS)
    high = max(1, math.ceil(largest / step)) * step
    return _Axis(0, high, log=False, ticks=tuple(range(0, high + 1, step)))


def _log_axis(smallest: int, largest: int) -> _Axis:
    # Powers of ten computed on integers: floating-point logarithms can land just under one.
    low = 10 ** (len(str(smallest)) - 1)
    high = low * 10
    while high < largest:
        high *= 10
    ticks = []
    tick = low
    while tick <= high:
        ticks.append(tick)
        tick *= 10
    return _Axis(low, high, log=True, ticks=tuple(ticks))


def _short(value: int) -> str:
    for size, suffix in ((10**9, "B"), (10**6, "M"), (10**3, "k")):
        if value >= size and value % size == 0:
            return f"{value // size}{suffix}"
    return str(value)


def _y(rate: float) -> float:
    return TOP + (1.0 - rate) * PLOT_HEIGHT


def _n(value: float) -> str:
    # Fixed precision: the same input gives the same bytes (the page is compared in tests).
    return f"{value:.1f}"


def _frame(axis: _Axis, label: str) -> list[str]:
    bottom = TOP + PLOT_HEIGHT
    parts = []
    for rate in RATE_TICKS:
        y = _n(_y(rate))
        parts.append(
            f'<line class="grid" data-rate="{rate}" x1="{LEFT}" y1="{y}" '
            f'x2="{LEFT + PLOT_WIDTH}" y2="{y}"/>'
            f'<text x="{LEFT - 6}" y="{_n(_y(rate) + 4)}" text-anchor="end">{rate:.0%}</text>'
        )
    for tick in axis.ticks:
        x = _n(axis.x(tick))
        parts.append(
            f'<line class="tick" data-value="{tick}" x1="{x}" y1="{bottom}" x2="{x}" '
            f'y2="{bottom + 5}"/>'
            f'<text x="{x}" y="{bottom + 18}" text-anchor="middle">{_short(tick)}</text>'
        )
    parts.append(
        f'<path class="axis" d="M{LEFT} {TOP}V{bottom}H{LEFT + PLOT_WIDTH}"/>'
        f'<text x="{LEFT + PLOT_WIDTH // 2}" y="{HEIGHT - 8}" text-anchor="middle">'
        f"{escape(label)}</text>"
        f'<text transform="rotate(-90)" x="{-(TOP + PLOT_HEIGHT // 2)}" y="16" '
        'text-anchor="middle">resolved (share of all instances)</text>'
    )
    return parts


def _curve(points: Sequence[Point], axis: _Axis, unit: str) -> list[str]:
    # A step function: flat until the next budget a resolving run used, then up.
    path = [f"M{_n(axis.x(axis.low))} {_n(_y(0.0))}"]
    marks = []
    for point in points:
        x, y = _n(axis.x(point.budget)), _n(_y(point.rate))
        path.append(f"H{x}V{y}")
        marks.append(
            f'<circle class="point" data-budget="{point.budget}" data-resolved="{point.resolved}"'
            f' data-total="{point.total}" cx="{x}" cy="{y}" r="3"><title>at most '
            f"{point.budget:,} {escape(unit)}: {point.resolved} of {point.total} resolved "
            f"({point.rate:.1%})</title></circle>"
        )
    path.append(f"H{_n(axis.x(axis.high))}")
    return [f'<path class="curve" d="{"".join(path)}"/>', *marks]


def budget_plot(runs: Sequence[tuple[int, bool]], *, unit: str, log: bool) -> str:
    """The share of all runs resolved within each budget of `unit` (steps, tokens) as an
    `<svg>` element, its x axis logarithmic when `log`; a sentence when no run used any."""
    used = [budget for budget, _ in runs if budget > 0]
    if not used:
        return f'<p class="meta">No attempt recorded any {escape(unit)}.</p>'
    axis = _log_axis(min(used), max(used)) if log else _linear_axis(max(used))
    label = f"{unit} used, at most (logarithmic)" if log else f"{unit} used, at most"
    body = "".join(_frame(axis, label) + _curve(resolved_curve(runs), axis, unit))
    return (
        f'<svg class="plot" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img"><title>resolved against {escape(unit)}</title>{body}</svg>'
    )
