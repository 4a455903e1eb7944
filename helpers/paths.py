"""Where the course folder is: the folder holding data/, notebooks/ and requirements.txt.

With ``make lab`` the helpers package is installed in place (editable), so the
course folder is the one around helpers/. In a class image (binder/postBuild,
see INSTRUCTORS.md) helpers is installed into the image's Python, away from
the course folder, and each student works in their own copy of the course
(pulled by nbgitpuller, or the repository itself on Binder): the notebook's
kernel runs in that copy's notebooks/ folder, so the course folder is found
from the working directory upwards.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["find_course_root", "COURSE_ROOT"]


def _is_course_folder(folder):
    return (folder / "data").is_dir() and (folder / "notebooks").is_dir()


def find_course_root(start=None):
    """The course folder: the one around helpers/ if it is one, else ``start`` (default: the working
    directory) or the nearest of its parents holding data/ and notebooks/. Falls back to the folder around
    helpers/ when none does."""
    around_helpers = Path(__file__).resolve().parent.parent
    if _is_course_folder(around_helpers):
        return around_helpers
    start = Path.cwd() if start is None else Path(start).resolve()
    return next((folder for folder in (start, *start.parents) if _is_course_folder(folder)), around_helpers)


COURSE_ROOT = find_course_root()
