"""What a first launch needs besides the compiled kernel, built ahead of time.

The first time a process launches a Triton kernel, Triton builds two native
modules with the C compiler, each through its cache manager
(compile_module_from_src): the driver's utilities (cuda_utils, hip_utils:
once per process) and a launcher for the kernel's argument signature
(__triton_launcher: one per distinct signature). A compile-only warmup on a
GPU-less build box never launches, so without this a fleet node would build
them at its first launches: hundreds of milliseconds each, with a compiler the
node may not have, and stored into the tiers while serving.

prepare_launch(kernel, target) builds both for a kernel just compiled for a
target, while jitwarm's cache manager is Triton's, so they become entries of
that target and travel with the kernels (bundles, the Redis tier). A module
is stored before Triton loads it: where loading fails on the build box (no
driver library to bind), the entry is kept all the same; the node, which has
the driver, loads it.
"""
from __future__ import annotations

import logging
import sys
from typing import Any, Dict, Optional

from . import _triton_cache

_log = logging.getLogger("jitwarm.triton")


def _launcher_class_of(target: Any) -> Optional[Any]:
    """The backend's launcher class: its driver's launcher_cls, the driver
    made once per cache in use (making it builds its utilities into that
    cache) without asking for a device, which the build box lacks. Where the
    driver cannot be made here (its utilities were built and stored, but do
    not load without the driver library), the launcher class its module
    defines (CudaLauncher, HIPLauncher), which builds and stores the same
    way."""
    made: Dict[str, Any] = _triton_cache.active_store().drivers
    if target.backend in made:
        return made[target.backend]
    import triton  # noqa: WPS433
    # Triton's backends by package ("nvidia", "amd"): the one whose compiler
    # takes the target, as triton.compiler.make_backend picks it.
    backends = getattr(getattr(triton, "backends", None), "backends", None) or {}
    backend = next((b for b in backends.values() if b.compiler.supports_target(target)), None)
    launcher_cls = None
    backend_name = target.backend
    if backend is None:
        _log.warning("jitwarm.triton: this Triton has no backend for %s; its launchers are "
                     "built where the kernels first launch", backend_name)
    else:
        try:
            launcher_cls = backend.driver().launcher_cls
        except Exception as error:  # noqa: BLE001  (no driver library here: the class itself)
            module = sys.modules.get(getattr(backend.driver, "__module__", ""))
            classes = [value for name, value in (vars(module) if module else {}).items()
                       if name.endswith("Launcher") and isinstance(value, type)]
            launcher_cls = classes[0] if len(classes) == 1 else None
            if launcher_cls is None:
                _log.warning("jitwarm.triton: Triton's %s driver could not be made here (%s); "
                             "its launchers are built where the kernels first launch",
                             backend_name, error)
    made[backend_name] = launcher_cls
    return launcher_cls


def prepare_launch(kernel: Any, target: Any) -> bool:
    """Builds (or finds in the tiers) the launcher of a kernel compiled for
    `target` (Triton's GPUTarget) and its backend's utilities. True when the
    launcher is in the tiers after the call."""
    launcher_cls = _launcher_class_of(target)
    if launcher_cls is None:
        return False
    before = _triton_cache.cache_counters()
    try:
        launcher_cls(kernel.src, kernel.metadata)
    except Exception as error:  # noqa: BLE001  (a load failure here leaves the entry)
        _log.debug("jitwarm.triton: launcher of %s built but not loaded here: %s",
                   getattr(kernel, "name", "?"), error)
    after = _triton_cache.cache_counters()
    return (after["modules_built"] + after["modules_loaded"]
            > before["modules_built"] + before["modules_loaded"])
