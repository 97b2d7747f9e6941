import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "src"))
import pantry  # noqa: E402


def test_add_then_low():
    items = {}
    pantry.add(items, "rice", 1)
    assert pantry.low(items) == ["rice"]


# TODO: a test for take() once it refuses to go negative
