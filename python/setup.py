# The package carries libdainx.so, so its wheel is platform-specific
# (pyproject.toml holds the metadata).
from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution)
