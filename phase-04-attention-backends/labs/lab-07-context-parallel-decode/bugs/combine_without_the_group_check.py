"""combine_all_reduce leaves out the given check of the process group.

Without a group, torch's own all_reduce refuses, with a message about the default process group that
names no function of the lab. Symptom: combine_all_reduce without a process group raises a
ValueError that does not say which of the lab's functions needs one.
"""

CAUGHT_BY = ["test_combine_explains_what_is_missing"]

EDIT = (
    '    _world_size("combine_all_reduce", group)\n',
    "",
)
