import pytest
from pkg import add


def test_add():
    assert add(2, 2) == 4, "two and two make four"


def test_zero():
    assert add(0, 0) == 0


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.parametrize("a,b", [(1, 0), (2, 1)])
def test_param(a, b):
    assert add(a, b) == a + b


class TestThings:
    def test_method(self):
        raise ValueError("bad <value> & \"quoted\"")


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_fixture_error(broken):
    pass
