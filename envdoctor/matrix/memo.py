"""Memoisation of the matrix questions: pure functions of version strings and names.

The tables they consult are read once per process (`functools.lru_cache` on each table), so an
answer depends only on the arguments; a fleet of 2,000 machines asks the same few questions
(`version_tuple("570.172.08")`, `arch("9.0")`) hundreds of thousands of times.

`@memoised` caches calls whose arguments are all strings (the bounded cache keeps memory flat);
any other argument (None, a number: `str(12.8)` and `str(12.80)` differ although 12.8 == 12.80)
runs the function itself, so the answer, or the exception, is always the function's own.
Exceptions are never cached. Only functions returning immutable values may use it.
"""

from __future__ import annotations

import functools
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)
MAXSIZE = 8192


def memoised(fn: F) -> F:
    cached = functools.lru_cache(maxsize=MAXSIZE)(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        for value in args:
            if type(value) is not str:
                return fn(*args, **kwargs)
        if kwargs:
            for value in kwargs.values():
                if type(value) is not str:
                    return fn(*args, **kwargs)
        return cached(*args, **kwargs)

    call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    call.cache_info = cached.cache_info  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


def strings(value) -> "tuple[str, ...] | None":
    """A list or tuple of strings as a tuple (a cache key); None for anything else."""
    if type(value) is not tuple and type(value) is not list:
        return None
    for item in value:
        if type(item) is not str:
            return None
    return tuple(value)
