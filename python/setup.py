"""Build of the dainx Python package (pyproject.toml holds the metadata).

The package is ctypes over libdainx.so, so its wheel holds no Python
extension: it is tagged py3-none-<platform>, the platform being
manylinux_X_Y_<arch> where X.Y is the newest glibc symbol version the
library needs (read from the library itself; `make wheel` checks it with
objdump).

Where the library comes from, in order:
  1. dainx/libdainx.so next to this file (`make python` and `make wheel`
     put it there in build/python);
  2. else, in a dainx checkout (../go.mod), `make lib` builds it with Go
     and gcc (cgo);
  3. else the build stops with a message that says what is missing:
     never a package whose import fails.
"""

import os
import platform
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIB = "libdainx.so"


class BuildError(SystemExit):
    pass


def _fail(why):
    raise BuildError(
        "\n\ndainx: cannot build the Python package: %s\n"
        "  The package needs libdainx.so. Either install a dainx wheel (make wheel, then pip install "
        "build/wheel/dainx-*.whl; no Go needed), or build from a dainx checkout with Go 1.25+ and gcc on PATH "
        "(pip install ./python, or make python then pip install build/python).\n" % why)


def _build_library(dest):
    """Build libdainx.so with `make lib` in the checkout and copy it to dest."""
    if not os.path.exists(os.path.join(ROOT, "go.mod")) or not os.path.exists(os.path.join(ROOT, "cmd", "libdainx")):
        _fail("dainx/%s is missing and %s is not a dainx checkout to build it from" % (LIB, ROOT))
    for tool in ("go", "gcc", "make"):
        if shutil.which(tool) is None:
            _fail("dainx/%s is missing, and building it needs `%s`, which is not on PATH" % (LIB, tool))
    print("dainx: building %s with `make lib` in %s" % (LIB, ROOT))
    r = subprocess.run(["make", "-C", ROOT, "lib"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        _fail("`make lib` failed:\n%s" % r.stdout[-4000:])
    shutil.copyfile(os.path.join(ROOT, "build", "lib", LIB), dest)


def glibc_floor(path):
    """The newest GLIBC_X.Y symbol version that the ELF file at path names
    (its .gnu.version_r strings), as (X, Y); None if it names none."""
    with open(path, "rb") as f:
        data = f.read()
    versions = {tuple(map(int, m)) for m in re.findall(rb"GLIBC_(\d+)\.(\d+)(?:\.\d+)?\x00", data)}
    return max(versions) if versions else None


class BuildPy(build_py):
    """build_py that puts libdainx.so into the package, building it if needed."""

    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "dainx", LIB)
        src = os.path.join(HERE, "dainx", LIB)
        if os.path.exists(src):
            shutil.copyfile(src, dest)
        else:
            _build_library(dest)


cmdclass = {"build_py": BuildPy}

try:
    from wheel.bdist_wheel import bdist_wheel

    class BdistWheel(bdist_wheel):
        """A py3-none-manylinux_X_Y_<arch> wheel: no Python ABI (ctypes), the
        glibc floor of the library inside."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            lib = os.path.join(self.bdist_dir or "", "dainx", LIB)
            for cand in (lib, os.path.join(HERE, "dainx", LIB)):
                if os.path.exists(cand):
                    floor = glibc_floor(cand)
                    break
            else:
                floor = None
            arch = platform.machine()
            if platform.system() != "Linux" or floor is None:
                return "py3", "none", bdist_wheel.get_tag(self)[2]
            return "py3", "none", "manylinux_%d_%d_%s" % (floor[0], floor[1], arch)

    cmdclass["bdist_wheel"] = BdistWheel
except ImportError:  # no wheel package: pip install still works
    pass


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution, cmdclass=cmdclass)
