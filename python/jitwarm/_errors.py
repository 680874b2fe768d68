"""jitwarm's exceptions: one class per status of the C API (jitwarm.h
jw_status), all subclasses of jitwarm.Error, which carries the status and the
core's message. The extension raises them (python/src/py_errors.cpp)."""
from __future__ import annotations

import enum


class Status(enum.IntEnum):
    """jw_status, with the C API's numbering (frozen, R4)."""

    OK = 0
    INVALID_ARGUMENT = 1
    NOT_FOUND = 2
    ALREADY_EXISTS = 3
    UNSUPPORTED = 4
    COMPILE_FAILED = 5
    LAUNCH_FAILED = 6
    NO_DEVICE = 7
    ABI_MISMATCH = 8
    OUT_OF_MEMORY = 9
    JIT_REFUSED = 10
    IO = 11
    INTERNAL = 12


class Error(Exception):
    """A jitwarm error: `status` (a Status) and `message` (the core's words)."""

    def __init__(self, message: str, status: int = Status.INTERNAL) -> None:
        super().__init__(message)
        self.message = message
        try:
            self.status = Status(status)
        except ValueError:
            self.status = Status.INTERNAL

    def __reduce__(self):  # picklable across processes
        return (type(self), (self.message, int(self.status)))


class InvalidArgumentError(Error, ValueError):
    """Bad metadata, a wrong dtype, a value out of range, a bad manifest."""


class NotFoundError(Error, LookupError):
    """An unknown kernel, platform or plugin entry."""


class AlreadyExistsError(Error):
    """A kernel schema defined twice."""


class UnsupportedError(Error):
    """A target or feature this side lacks."""


class CompileError(Error):
    """The JIT compiler rejected a key (or a warmup had failed keys)."""


class LaunchError(Error):
    """The device (or an override) refused the launch."""


class NoDeviceError(Error):
    """No driver or no device: compile-only."""


class AbiMismatchError(Error):
    """A plugin's ABI version handshake failed."""


class OutOfMemoryError(Error, MemoryError):
    pass


class JitRefusedError(Error):
    """The JIT monitor refused a compile after seal (mode 'error')."""


class IoError(Error):
    """A file: a manifest, a cache entry, a record path."""


class InternalError(Error):
    """A bug in jitwarm: please report it."""


_CLASS_BY_STATUS = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.NOT_FOUND: NotFoundError,
    Status.ALREADY_EXISTS: AlreadyExistsError,
    Status.UNSUPPORTED: UnsupportedError,
    Status.COMPILE_FAILED: CompileError,
    Status.LAUNCH_FAILED: LaunchError,
    Status.NO_DEVICE: NoDeviceError,
    Status.ABI_MISMATCH: AbiMismatchError,
    Status.OUT_OF_MEMORY: OutOfMemoryError,
    Status.JIT_REFUSED: JitRefusedError,
    Status.IO: IoError,
    Status.INTERNAL: InternalError,
}
