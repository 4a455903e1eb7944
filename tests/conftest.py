"""Settings shared by every test.

Hypothesis fails a property test whose example takes longer than 200 ms by
default. That is a timed test, and the course measures speed in benchmarks
(``make bench``), never in tests: on a shared 2-core machine under load the
same example can take 400 ms. So property tests have no deadline.
"""

from hypothesis import settings

settings.register_profile("course", deadline=None)
settings.load_profile("course")

