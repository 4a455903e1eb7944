"""Settings shared by every test.

Hypothesis fails a property test whose example takes longer than 200 ms by
default. That is a timed test, and the course measures speed in benchmarks
(``make bench``), never in tests: on a shared 2-core machine under load the
same example can take 400 ms. So property tests have no deadline.

Each test also starts with no exercise built (see the fixture below).
"""

import pytest
from hypothesis import settings

settings.register_profile("course", deadline=None)
settings.load_profile("course")


@pytest.fixture(autouse=True)
def _no_exercises_from_other_tests():
    """Each test starts with no exercise built: an exercise checker names an answer that belongs to "another
    exercise built in the same session", and without this an exercise kept alive by another test module on
    the same xdist worker (a module-level one) would be that other exercise."""
    from helpers.exercises import base
    base._BUILT.clear()
    yield
