"""Makes ``benchmarks/gradbench`` importable (its package is ``suite``)."""

import os
import sys

GRADBENCH_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks", "gradbench")
if GRADBENCH_DIR not in sys.path:
    sys.path.insert(0, GRADBENCH_DIR)
