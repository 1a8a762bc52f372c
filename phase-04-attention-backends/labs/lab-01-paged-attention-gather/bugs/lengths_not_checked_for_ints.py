"""The checks take seq_len and block_size as they come, floats and bools included.

``int(seq_len) < 0`` and ``k_cache.shape[1] != block_size`` both let 9.0 and 4.0 through, and
``range`` refuses them later with a TypeError that names neither argument; ``True`` is taken as
a length of 1.
Symptom: "'float' object cannot be interpreted as an integer" from inside the loop, instead of a
ValueError naming the argument.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "        as_int(n, name)  # an int or a numpy integer (labkit.integers): 9.0 would reach range() as a float\n",
    "        pass  # BUG: any type goes on to range()\n",
)
