"""Reader of a `powerapi daemon` shared-memory ring (pa_ring_* API)."""

from . import _lib


class RingReader:
    """Reads the windows a `powerapi daemon --ring NAME` publishes."""

    def __init__(self, name="powerapi"):
        if not _lib.has("pa_ring_open"):
            raise OSError(38, "powerapi: this libpowerapi has no ring "
                              "reader (pa_ring_open missing)")
        raise NotImplementedError
