"""What `rlang.<part>` says where the package an optional part needs is missing
(rlang/__init__.py `_OPTIONAL`), checked in a fresh interpreter."""
from __future__ import annotations

import subprocess
import sys


def missing_package_message(part: str, package: str) -> str:
    """The ImportError's text of `rlang.<part>` in a process where `package` cannot
    be imported."""
    code = (f"import sys; sys.modules[{package!r}] = None; import rlang\n"
            f"try:\n    rlang.{part}\nexcept ImportError as e:\n    print(e)")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout
