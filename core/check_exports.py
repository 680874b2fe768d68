#!/usr/bin/env python3
"""Checks that libjitwarm exports exactly its API, as plugins are checked to
export their one entry point (plugins/check_exports.sh): every dynamic
symbol it defines is a jw_* C entry point, or a name of the C++ host API in
namespace jitwarm (with its typeinfo and vtables), never jitwarm::detail,
an unprefixed C function, or another library's template instantiation.

Usage: check_exports.py LIBJITWARM [NM]"""
import subprocess
import sys

PUBLIC_CXX = ("jitwarm::", "typeinfo for jitwarm::", "typeinfo name for jitwarm::",
              "vtable for jitwarm::")


def exported(library, nm):
    out = subprocess.run([nm, "-D", "--defined-only", "--format=posix", library],
                         capture_output=True, text=True, check=True).stdout
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                               text=True, check=True).stdout.splitlines()
    return list(zip(names, demangled))


def why_not(name, demangled):
    """Why a symbol must not be exported, or None."""
    if not name.startswith("_Z"):
        return None if name.startswith("jw_") else "a C symbol without the jw_ prefix"
    if "jitwarm::detail::" in demangled.split("(")[0]:
        return "an internal (jitwarm::detail) name"
    if not demangled.startswith(PUBLIC_CXX):
        return "not a name of the C++ host API (namespace jitwarm)"
    return None


def main():
    library = sys.argv[1]
    nm = sys.argv[2] if len(sys.argv) > 2 else "nm"
    symbols = exported(library, nm)
    bad = [(d, why) for n, d in symbols if (why := why_not(n, d))]
    c_api = sum(1 for n, _ in symbols if n.startswith("jw_"))
    print(f"{library}: {len(symbols)} exported symbols, {c_api} of them jw_* C entry points")
    for demangled, why in bad:
        print(f"FAIL {demangled}: {why}")
    if c_api == 0:
        print("FAIL no jw_* C entry point is exported")
    return 1 if bad or c_api == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
