"""The CUDA compiler libraries of this Python's nvidia-* packages, handed to
the core.

A torch virtualenv brings NVRTC and nvJitLink as pip packages
(site-packages/nvidia/cu13/lib with CUDA 13, nvidia/cuda_nvrtc/lib and
nvidia/nvjitlink/lib with CUDA 12), where the dynamic loader does not look.
`import jitwarm` appends their directories to JITWARM_VENDOR_LIBRARY_PATH,
the last place the CUDA plugin searches (after JITWARM_NVRTC_LIBRARY, a copy
already loaded, the dynamic loader and the CUDA toolkit: docs/python.md,
"Installing"), before any plugin is loaded. The `jitwarm` command of a pip
install does the same before it runs the program.
"""
from __future__ import annotations

import os
import sys
from typing import Iterable, List, Optional

VARIABLE = "JITWARM_VENDOR_LIBRARY_PATH"

# Under a site directory, in the order they are searched.
NVIDIA_LIBRARY_SUBDIRECTORIES = (
    os.path.join("nvidia", "cu13", "lib"),
    os.path.join("nvidia", "cuda_nvrtc", "lib"),
    os.path.join("nvidia", "nvjitlink", "lib"),
)


def nvidia_library_directories(paths: Optional[Iterable[str]] = None) -> List[str]:
    """The nvidia packages' library directories under `paths` (default:
    sys.path), each once, in search order."""
    found: List[str] = []
    for base in sys.path if paths is None else paths:
        if not base:
            continue
        for sub in NVIDIA_LIBRARY_SUBDIRECTORIES:
            directory = os.path.join(os.path.abspath(base), sub)
            if directory not in found and os.path.isdir(directory):
                found.append(directory)
    return found


def hand_to_core(paths: Optional[Iterable[str]] = None) -> List[str]:
    """Appends the nvidia packages' library directories to
    JITWARM_VENDOR_LIBRARY_PATH (what is there already comes first) and
    returns the variable's entries."""
    entries = [e for e in os.environ.get(VARIABLE, "").split(os.pathsep) if e]
    for directory in nvidia_library_directories(paths):
        if directory not in entries:
            entries.append(directory)
    if entries:
        os.environ[VARIABLE] = os.pathsep.join(entries)
    return entries
