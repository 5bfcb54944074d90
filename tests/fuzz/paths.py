"""Put the test helpers the fuzzer shares with the test suite on `sys.path`: tests/
(number_systems.py, gradient_agreement.py) and tests/property/ (the generators)."""
from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def share_test_helpers() -> None:
    for folder in (TESTS / "property", TESTS):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
