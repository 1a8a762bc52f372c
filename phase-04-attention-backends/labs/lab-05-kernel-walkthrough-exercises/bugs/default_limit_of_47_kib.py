"""The default shared-memory limit is 47 KiB instead of 48 KiB (49,152 bytes).

Symptom: a budget of exactly 49,152 bytes does not fit by default, and the largest partition
under the default limit is 256 tokens too small.
"""

CAUGHT_BY = ["test_defaults_are_the_launchers"]

EDIT = (
    "DEFAULT_SMEM_BYTES = 48 * 1024  # 49,152: what a block may use without opting in\n",
    "DEFAULT_SMEM_BYTES = 47 * 1024  # 49,152: what a block may use without opting in\n",
)
