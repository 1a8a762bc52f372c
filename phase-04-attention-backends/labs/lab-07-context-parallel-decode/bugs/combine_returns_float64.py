"""combine_all_reduce turns the summaries into float64 for accuracy and hands back float64.

Computing in float64 is harmless; handing float32 (or bfloat16) summaries back as a float64 output
is not: the next layer receives a dtype it did not ask for, twice the bytes. Every float64 test
passes. Symptom: with float32, float16 or bfloat16 summaries, the output is float64.
"""

CAUGHT_BY = ["test_combine_keeps_each_floating_dtype", "test_combine_keeps_dtype_and_leaves_the_summaries_alone"]

EDIT = (
    '    _world_size("combine_all_reduce", group)\n',
    '    _world_size("combine_all_reduce", group)\n'
    '    m, denom, acc = m.double(), denom.double(), acc.double()  # float64 for the sums (and the result)\n',
)
