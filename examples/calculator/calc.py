"""A tiny calculator used to try FrogNano end to end."""


def add(a: float, b: float) -> float:
    return a + b


def subtract(a: float, b: float) -> float:
    return a - b


def mean(values: list[float]) -> float:
    return sum(values) / len(values)
