"""``supports`` read twice: once to check the levels, once to rank them.

A generator is empty on its second pass. Symptom: resolve_cudagraph_mode('FULL', <a generator of
'ALWAYS', 'UNIFORM_BATCH'>) raises "min() arg is an empty sequence".
"""

SOURCE = "_checks.py"

CAUGHT_BY = ["test_resolve_cudagraph_mode_takes_any_iterable"]

EDIT = (
    "    supports = list(supports)\n",
    "    pass  # BUG: supports read as it came\n",
)
