"""block_size_tradeoff lets an empty list of lengths through, and divides by zero.

With no request, no slot is allocated: the waste fraction is 0 / 0 and the mean table length is
0 / 0 requests. Symptom: block_size_tradeoff([], [4, 16]) fails with ZeroDivisionError from inside
the loop instead of a ValueError that names lengths.
"""

CAUGHT_BY = ["test_bad_input_names_the_argument"]

EDIT = (
    "    if not lengths:\n"
    "        raise ValueError(\"lengths must name at least one request\")\n",
    "",
)
