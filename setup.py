"""Builds the compiled tree walk (``pipelines/treewalk.pyx``); everything else is in pyproject.toml."""

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [Extension(
            "pipelines.treewalk", ["pipelines/treewalk.pyx"], include_dirs=lxml.get_include(),
            extra_compile_args=["-O2", "-Wno-unused-function"],  # lxml's header defines helpers we do not call
        )],
        compiler_directives={"language_level": 3},
    )
)
