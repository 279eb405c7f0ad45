"""Where to look for libpowerapi.so, after $POWERAPI_LIBRARY.

This copy (the one in the source tree, and in a wheel built by pip) knows no
path: the library is then found by the dynamic loader (ldconfig cache,
LD_LIBRARY_PATH).  CMake writes its own copy into the build tree (the build
tree's library first) and into the installed package (the installed
library), baked at configure time.
"""

SEARCH = ()
