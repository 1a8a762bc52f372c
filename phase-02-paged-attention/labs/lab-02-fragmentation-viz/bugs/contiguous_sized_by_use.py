"""The contiguous allocator sizes each reservation by the requests' real length.

That is the allocator everyone would like and nobody can build: at admission the answer's
length is unknown, so a contiguous reservation must cover max_len. Symptom: 128 requests of
32 tokens admitted in 4096 slots instead of 8.
"""

CAUGHT_BY = ["test_admit_contiguous_reserves_max_len_per_request"]

EDIT = (
    '    return min(len(lengths), num_slots // max_len)\n',
    '    return min(len(lengths), num_slots // max(lengths, default=max_len))  # reserves what will be used\n',
)
