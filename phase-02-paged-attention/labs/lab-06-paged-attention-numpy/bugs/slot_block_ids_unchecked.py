"""build_slot_mapping's given check never looks at the block ids its tokens use.

A negative id makes negative slots, which write_kv then skips as padding, so the tokens are written
nowhere; an id whose slots pass the largest int64 wraps around to a slot of some other block.
Symptom: no error, a slot mapping that loses or misplaces tokens, instead of a ValueError naming the
block id.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_checks.py"  # the given input checks

EDIT = (
    "    if int(num_tokens) == 0:\n",
    "    if True:  # the ids are never looked at\n",
)
