"""A cache entry file tampered with as someone who can write the cache, but
holds no signing key, can: a byte of its binary changed and its XXH3
checksum made right again (libxxhash through ctypes), so only a signature
can tell (core/src/cache_entry.hpp has the format)."""
import ctypes
import ctypes.util
import struct

_xxhash = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
_xxhash.XXH3_64bits.restype = ctypes.c_uint64
_xxhash.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def tamper(path):
    data = bytearray(path.read_bytes())
    assert data[:8] == b"JWCACHE\n"
    pos = 12  # magic, u32 format version
    for _ in range(4):  # key, fingerprint, format, entry point
        (n,) = struct.unpack_from("<Q", data, pos)
        pos += 8 + n
    (n,) = struct.unpack_from("<Q", data, pos)
    assert n > 0
    data[pos + 8] ^= 0x01  # the binary's first byte
    body = bytes(data[:-8])
    data[-8:] = struct.pack("<Q", _xxhash.XXH3_64bits(body, len(body)))
    path.write_bytes(bytes(data))
