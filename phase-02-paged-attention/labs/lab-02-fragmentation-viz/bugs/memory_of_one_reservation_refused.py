"""serve_contiguous refuses a max_len equal to num_slots, a memory that holds exactly one reservation.

The check that a reservation fits the memory compares with >= instead of >, so the edge where one
reservation fills every slot is refused. Symptom: serve_contiguous(stream, num_slots=16,
max_len=16) raises ValueError naming max_len, although one request at a time fits.
"""

CAUGHT_BY = ["test_bad_input_names_the_argument"]

EDIT = (
    "    if max_len > num_slots:\n",
    "    if max_len >= num_slots:\n",
)
