"""Row checks shared by the matrix subject modules (tensorflow, jax, paddle): each raises a
MatrixError naming the file and row."""

from __future__ import annotations

from typing import Any, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envdoctor.matrix import PLATFORMS
from envdoctor.matrix.loader import MatrixError


def row_label(filename: str, table: str, index: int, row: dict[str, Any], key: str = "version") -> str:
    return f"{filename}: [[{table}]] row {index} ({key}={row.get(key)})"


def describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing {exc.args[0]!r}"
    return str(exc)


def check_spec(where: str, name: str, spec: str) -> None:
    try:
        SpecifierSet(spec)
    except InvalidSpecifier:
        raise MatrixError(f"{where}: {name} {spec!r} is not a version specifier") from None


def check_platforms(where: str, platforms: list[str]) -> None:
    for platform in platforms:
        if platform not in PLATFORMS:
            raise MatrixError(f"{where}: unknown platform {platform!r} (one of {', '.join(PLATFORMS)})")


def check_glibc(where: str, glibc: Mapping[str, str]) -> None:
    check_platforms(where, list(glibc))
    for platform, value in glibc.items():
        parts = str(value).split(".")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise MatrixError(f"{where}: glibc for {platform} {value!r} is not a version like '2.17'")


def check_pythons(where: str, wheels: Mapping[str, tuple[str, ...]]) -> None:
    for platform, pythons in wheels.items():
        for python in pythons:
            major, _, minor = python.rstrip("t").partition(".")
            if not (major.isdigit() and minor.isdigit()):
                raise MatrixError(f"{where}: {platform}: {python!r} is not a Python version like '3.12'")
