from calc import add, mean, subtract


def test_add() -> None:
    assert add(2, 3) == 5


def test_subtract() -> None:
    assert subtract(2, 3) == -1


def test_mean() -> None:
    assert mean([1, 2, 3, 4]) == 2.5
