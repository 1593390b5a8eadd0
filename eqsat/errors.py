"""Errors a user sees: every one names the file, line and column of the offending code."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def one_line(text, limit: int = 400) -> str:
    """A message of several lines (an engine's error) as one line: its non-empty lines,
    stripped, joined by spaces, cut at `limit` characters."""
    return " ".join(x.strip() for x in str(text).splitlines() if x.strip())[:limit]


class EqsatError(Exception):
    """Base class of the errors eqsat raises on purpose."""


class ProgramError(EqsatError):
    """A program uses something the language does not support, or is ill-formed."""

    def __init__(self, message: str, loc: Loc | None):
        self.message = message
        self.loc = loc
        super().__init__(f"{loc}: {message}" if loc else message)

    def __reduce__(self):
        # (pickled as its two arguments: a worker process's error reaches the caller of
        # `optimize_many`, a Ray or Dask task's its client; the default pickles `args`, the
        # one formatted message, and fails to rebuild it)
        return (type(self), (self.message, self.loc))


class ArgumentError(EqsatError):
    """`run`/`reference`/`optimize` got arguments that do not fit the program."""
