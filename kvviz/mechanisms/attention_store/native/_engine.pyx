# cython: language_level=3
# distutils: extra_compile_args = -ffp-contract=off
"""The compiled AttentionStore engine: the reference engine's rules (events.py, gpu.py,
batching.py, host_load.py, load_rule.py, store.py, ssd_queue.py, placement/) over C data, one
compilation unit so its classes call each other directly. No FMA contraction (the flag above):
Python rounds `a * b + c` twice, so must the C. Which runs: __init__.py."""

# setup.py's hash of this folder's sources (sources.py), which the loader compares with the files
# beside it; "" where built some other way (the loader then refuses it: it cannot tell)
cdef extern from *:
    """
    #ifndef KVVIZ_SOURCE_HASH
    #define KVVIZ_SOURCE_HASH ""
    #endif
    """
    const char *KVVIZ_SOURCE_HASH
SOURCE_HASH = KVVIZ_SOURCE_HASH.decode("ascii")

cdef class BatchState
cdef class Batcher(BatchState)  # the event loop's owner: its events (kinds > 0) go to it (batcher.pxi)

include "../../../serving/native/event_loop.pxi"  # the serving core's compiled event loop
include "../../../serving/native/roofline.pxi"  # the serving core's compiled roofline
include "recorder.pxi"
include "batch_state.pxi"
include "batcher.pxi"
include "../../../serving/native/policies.pxi"  # the serving core's compiled lru, fifo and belady
include "placement.pxi"
include "ssd.pxi"
include "store.pxi"
include "figures.pxi"
