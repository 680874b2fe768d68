"""`python -m jitwarm ...` and the `jitwarm` command of a pip install: the
jitwarm program of the installation this package loads (the one inside the
package for a wheel), with the nvidia packages' CUDA libraries handed over
as `import jitwarm` does (jitwarm._vendor_libraries)."""
from __future__ import annotations

import os
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    from . import _jitwarm  # importing the package hands the libraries over

    program = _jitwarm.install_location()["program"]
    arguments = sys.argv[1:] if argv is None else list(argv)
    if not os.access(program, os.X_OK):
        print(f"jitwarm: the jitwarm program is not installed at {program}",
              file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(program, ["jitwarm", *arguments])
    return 1  # not reached: execv replaces this process or raises


if __name__ == "__main__":
    sys.exit(main())
