"""paged_prefill's tensors not checked to live on one device.

Symptom: ``q`` on another device than the caches and tables goes on to the launch (on a GPU, a
kernel handed a CPU pointer; here, ``q`` on the meta device) instead of a ValueError naming
paged_prefill.
"""

SOURCE = "_prefill_checks.py"

CAUGHT_BY = ["test_kernel_bad_input_gets_a_clear_error"]

EDIT = (
    "    if len(devices) > 1:\n",
    "    if False:  # BUG: devices unchecked\n",
)
