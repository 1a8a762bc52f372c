"""The number of warps is computed with ``/``: every byte count derived from it is a float.

128 / 32 is 4.0, so the reduction scratch, the static bytes and the total are floats equal to
the right numbers. Symptom: floats where the annotations say int.
"""

CAUGHT_BY = ["test_byte_counts_are_ints"]

EDIT = (
    "    num_warps = num_threads // WARP_SIZE\n",
    "    num_warps = num_threads / WARP_SIZE\n",
)
