"""rlang as a GradBench tool: ``python benchmarks/gradbench/tool.py [--tool NAME]``.

Speaks GradBench's protocol on standard input and output (``suite/protocol.py``).
``--tool jax`` and ``--tool pytorch`` serve this suite's baselines the same way, so
that GradBench's evals can check them too.  Nothing but protocol lines is written
to standard output; rlang's and JAX's messages go to standard error.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from suite import TOOLS  # noqa: E402
from suite.protocol import serve  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", choices=sorted(TOOLS), default="rlang")
    args = parser.parse_args(argv)
    protocol_out = sys.stdout
    sys.stdout = sys.stderr  # stray prints from libraries must not break the protocol
    serve(sys.stdin, protocol_out, args.tool)
    return 0


if __name__ == "__main__":
    sys.exit(main())
