"""helpers finds the course folder: around itself when installed in place, else from the notebook's folder
(a class image, where helpers is installed into site-packages and the course is the student's copy)."""

from pathlib import Path

from helpers import paths

ROOT = Path(__file__).resolve().parent.parent


def test_in_place_the_course_folder_is_the_one_around_helpers(tmp_path):
    assert paths.find_course_root(start=tmp_path) == ROOT
    assert paths.COURSE_ROOT == ROOT


def test_installed_elsewhere_the_course_folder_is_found_from_the_notebook_folder(tmp_path, monkeypatch):
    site = tmp_path / "venv" / "lib" / "site-packages" / "helpers"
    site.mkdir(parents=True)
    monkeypatch.setattr(paths, "__file__", str(site / "paths.py"))
    copy = tmp_path / "home" / "attention-course"
    (copy / "data").mkdir(parents=True)
    (copy / "notebooks").mkdir()
    assert paths.find_course_root(start=copy / "notebooks") == copy
    assert paths.find_course_root(start=copy) == copy
    # Nowhere near a course folder: the folder around helpers, as before.
    assert paths.find_course_root(start=tmp_path / "venv") == site.parent
