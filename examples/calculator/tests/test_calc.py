import pytest

from calc import add, mean, subtract


def test_add() -> None:
    assert add(2, 3) == 5


def test_subtract() -> None:
    assert subtract(2, 3) == -1


def test_mean() -> None:
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_of_an_empty_list_is_a_value_error() -> None:
    # Fails until ISSUE.md is fixed: mean([]) raises ZeroDivisionError today.
    with pytest.raises(ValueError, match="empty"):
        mean([])
