"""Builds the compiled parts (the tree walk, the index's loops); everything else is in pyproject.toml."""

import platform
import shutil
from pathlib import Path

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The popcount instruction (every x86-64 processor since 2008; other processors have theirs by default).
POPCOUNT = ["-mpopcnt"] if platform.machine().lower() in ("x86_64", "amd64") else []
#: The other name the package installs under (pyproject.toml): the same folder, the same compiled modules.
ALIAS = "scrapy_simhash_dedup"


class BuildBothNames(build_ext):
    """Compiles each module once, as ``pipelines.<name>``, and puts a copy where ``scrapy_simhash_dedup``
    finds it (a wheel holds the package twice; in place, both names are the one folder)."""

    def run(self) -> None:
        super().run()
        if self.inplace:
            return
        for extension in self.extensions:
            built = Path(self.get_ext_fullpath(extension.name))
            alias = Path(self.get_ext_fullpath(extension.name.replace("pipelines.", f"{ALIAS}.", 1)))
            alias.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built, alias)


setup(
    cmdclass={"build_ext": BuildBothNames},
    ext_modules=cythonize(
        [
            Extension(
                "pipelines.treewalk", ["pipelines/treewalk.pyx"], include_dirs=lxml.get_include(),
                extra_compile_args=["-O2", "-Wno-unused-function"],  # lxml's header defines helpers we do not call
            ),
            Extension("pipelines.indexloops", ["pipelines/indexloops.pyx"], extra_compile_args=["-O3", *POPCOUNT]),
            Extension("pipelines.textloops", ["pipelines/textloops.pyx"], include_dirs=["pipelines"],
                      extra_compile_args=["-O3"]),
        ],
        compiler_directives={"language_level": 3},
    ),
)
