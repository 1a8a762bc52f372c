"""The ragged rule starts one token late: ``capacity > RAGGED_CAPACITY`` where the README says "or
more".

Symptom: a batch whose table holds exactly 16,384 tokens is planned as if every sequence were
full length; with 16 KV heads and 40 sequences that is one split, and a single long sequence
among short ones runs on 16 programs while 132 SMs wait.
"""

CAUGHT_BY = ["test_choose_num_splits_ragged_batches"]

EDIT = (
    "    if batch > 1 and capacity >= RAGGED_CAPACITY:\n",
    "    if batch > 1 and capacity > RAGGED_CAPACITY:\n",
)
