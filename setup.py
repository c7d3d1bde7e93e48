from setuptools import setup

setup(cffi_modules=["build_core.py:ffibuilder"])
