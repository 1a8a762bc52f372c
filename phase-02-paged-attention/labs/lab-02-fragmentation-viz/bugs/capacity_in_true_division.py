"""serve_contiguous computes its capacity with true division, num_slots / max_len.

The count of reservations that fit is a whole number: 47 slots hold two reservations of 16, not
2.9. With a float capacity, ``len(running) < capacity`` admits a third request whenever the memory
is not a multiple of max_len. Symptom: three requests run at once in 47 slots of max_len 16, 48
slots reserved in 47.
"""

CAUGHT_BY = ["test_serve_contiguous_hand_stream"]

EDIT = (
    "    capacity = num_slots // max_len\n",
    "    capacity = num_slots / max_len\n",
)
