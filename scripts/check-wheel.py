#!/usr/bin/env python3
"""check-wheel.py WHEEL: check a dainx wheel before it is installed anywhere.

- its tag is py3-none-manylinux_X_Y_<arch> (ctypes over libdainx.so: no
  Python ABI);
- it holds dainx/libdainx.so, and the newest GLIBC_ symbol version the
  library needs (objdump -T) is exactly X.Y: the wheel claims no older
  glibc than the library runs on, and no newer;
- the library needs no shared library outside glibc (objdump -p NEEDED),
  so it runs on any manylinux_X_Y system;
- the wheel's version is the library's release number (internal/version).
Prints the floor and the symbols that set it; exits 1 on any failure."""

import os
import re
import subprocess
import sys
import tempfile
import zipfile

GLIBC_LIBS = {"libc.so.6", "libpthread.so.0", "libdl.so.2", "libm.so.6", "librt.so.1", "ld-linux-x86-64.so.2",
              "ld-linux-aarch64.so.1"}


def fail(msg):
    print("check-wheel: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main(path):
    name = os.path.basename(path)
    m = re.fullmatch(r"dainx-([^-]+)-py3-none-manylinux_(\d+)_(\d+)_(x86_64|aarch64)\.whl", name)
    if not m:
        fail("%s: want dainx-VERSION-py3-none-manylinux_X_Y_ARCH.whl" % name)
    version, tag_floor = m.group(1), (int(m.group(2)), int(m.group(3)))
    with zipfile.ZipFile(path) as z, tempfile.TemporaryDirectory() as d:
        names = z.namelist()
        if "dainx/libdainx.so" not in names:
            fail("%s holds no dainx/libdainx.so" % name)
        wheel_meta = z.read("dainx-%s.dist-info/WHEEL" % version).decode()
        if "Root-Is-Purelib: false" not in wheel_meta:
            fail("WHEEL says the wheel is pure")
        lib = z.extract("dainx/libdainx.so", d)
        syms = subprocess.run(["objdump", "-T", lib], check=True, stdout=subprocess.PIPE, text=True).stdout
        need = subprocess.run(["objdump", "-p", lib], check=True, stdout=subprocess.PIPE, text=True).stdout
    by_version = {}
    for line in syms.splitlines():
        v = re.search(r"\bGLIBC_(\d+)\.(\d+)(?:\.\d+)?\b", line)
        if v:
            by_version.setdefault((int(v.group(1)), int(v.group(2))), []).append(line.split()[-1])
    if not by_version:
        fail("objdump -T lists no GLIBC_ symbol version")
    floor = max(by_version)
    if floor != tag_floor:
        fail("the tag says glibc %d.%d, the library needs %d.%d (%s)"
             % (tag_floor + floor + (", ".join(sorted(by_version[floor])),)))
    needed = set(re.findall(r"NEEDED\s+(\S+)", need))
    extra = needed - GLIBC_LIBS
    if extra:
        fail("libdainx.so needs %s, outside glibc" % ", ".join(sorted(extra)))
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "internal", "version", "version.go")
    base = re.search(r'const Base = "([^"]+)"', open(src).read()).group(1)
    if version != base:
        fail("wheel version %s, library release %s" % (version, base))
    print("check-wheel: %s: glibc floor %d.%d (set by %s), needs only %s; version %s"
          % (name, floor[0], floor[1], ", ".join(sorted(set(by_version[floor]))), ", ".join(sorted(needed)), version))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
