"""A PEP 517 build backend: setuptools' own, run on a temporary copy of this directory.

setuptools builds in the source tree: `pip install ./clients/python` would leave `build/` and
`dnaserve_client.egg-info/` in the checkout, and a later install would reuse the stale copies
in `build/lib`. Each hook here copies the sources (without those directories) to a temporary
directory, runs setuptools' hook there and removes the copy; the wheel, sdist and metadata are
written where pip asks (absolute paths), so nothing is written beside the sources. Editable
installs must point at the sources, so they run in place.
"""

import contextlib
import os
import shutil
import tempfile

from setuptools import build_meta as _setuptools

_LEFT_OUT = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "*.pyc")


@contextlib.contextmanager
def _in_a_copy():
    source = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="dnaserve-client-build-") as scratch:
        copy = os.path.join(scratch, "src")
        shutil.copytree(source, copy, ignore=_LEFT_OUT)
        os.chdir(copy)
        try:
            yield
        finally:
            os.chdir(source)


def get_requires_for_build_wheel(config_settings=None):
    with _in_a_copy():
        return _setuptools.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    with _in_a_copy():
        return _setuptools.get_requires_for_build_sdist(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    with _in_a_copy():
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with _in_a_copy():
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    with _in_a_copy():
        return _setuptools.build_sdist(sdist_directory, config_settings)


# Editable installs point at the sources, so their metadata is made in place.
get_requires_for_build_editable = getattr(_setuptools, "get_requires_for_build_editable", None)
prepare_metadata_for_build_editable = getattr(_setuptools, "prepare_metadata_for_build_editable",
                                              None)
build_editable = getattr(_setuptools, "build_editable", None)
