"""setup.py — builds libfusenet.so with CMake from the repository this
folder sits in and puts it inside the package (fusenet/lib/), so the
installed package needs no build tree. Nothing is downloaded: CMake uses
the system's packages as the library's own build does.

Environment:
  FUSENET_LIBRARY     a libfusenet.so to use instead: nothing is built,
                      and the package finds it at run time through the
                      same variable or an installed libfusenet.
  FUSENET_CMAKE_ARGS  extra arguments for the configure step, e.g.
                      "-DFN_CUDA=OFF" or "-DCMAKE_CUDA_ARCHITECTURES=90-real".
"""
import os
import shlex
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        if os.environ.get("FUSENET_LIBRARY"):
            return
        if not os.path.exists(os.path.join(REPO, "CMakeLists.txt")):
            raise RuntimeError("fusenet: the repository (CMakeLists.txt) is not at %s; install "
                               "from the repository's python/ folder, or set FUSENET_LIBRARY "
                               "to an installed libfusenet.so" % REPO)
        build = os.path.join(os.path.abspath(self.build_lib), "..", "fusenet-cmake")
        configure = ["cmake", "-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                     "-DFN_TESTS=OFF"] + shlex.split(os.environ.get("FUSENET_CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", build, "--target", "fusenet", "-j",
                               str(os.cpu_count() or 1)])
        target = os.path.join(self.build_lib, "fusenet", "lib")
        os.makedirs(target, exist_ok=True)
        # The real file under the plain name the package loads.
        shutil.copyfile(os.path.realpath(os.path.join(build, "libfusenet.so")),
                        os.path.join(target, "libfusenet.so"))


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: tag it for this platform."""

    def has_ext_modules(self):
        return not os.environ.get("FUSENET_LIBRARY")


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
