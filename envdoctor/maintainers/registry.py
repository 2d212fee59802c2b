"""Moved: the drift checker is `envdoctor.maintainers.compare` (kept so older imports still work)."""

from envdoctor.maintainers.compare import *  # noqa: F401,F403
from envdoctor.maintainers.compare import (  # noqa: F401
    LEGACY_GLIBC, SUBJECTS, Drift, RecordedRegistry, _compare_field, check_all, compare_rows, main, note_missing,
    parser, report, requires_key, subjects_of, trim_project,
)
