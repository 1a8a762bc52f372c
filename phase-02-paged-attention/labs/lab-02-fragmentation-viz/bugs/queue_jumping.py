"""A request that does not fit is skipped and later, smaller ones are admitted.

Packing more requests looks like a win, but it breaks first come, first served: a long
request can wait forever behind a stream of short ones. vLLM's scheduler stops at the first
request it cannot place. Symptom: 3 admitted where the queue allows 2.
"""

CAUGHT_BY = ["test_admit_paged_counts_blocks_of_the_pool"]

EDIT = (
    '            break  # first come, first served: a later, smaller request does not jump the queue\n',
    '            continue  # try the next one\n',
)
