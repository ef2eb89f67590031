"""_version.py — the package's version: the library it loads must be the
same version (fn_version(), CMake's project version), checked at import."""
VERSION = "0.1.0"
