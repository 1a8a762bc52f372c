"""The 128-token block is forced for CUTLASS MLA only when it is the default, not when it is named.

``check_and_update_config`` forces 128 whenever CUTLASS MLA will run: chosen by default on SM
10.0, or named by ``VLLM_ATTENTION_BACKEND``. Without the forced case the named override keeps
the default 16-token blocks, which CUTLASS MLA cannot run. Symptom: on a B200, an MLA layer
with ``override="CUTLASS_MLA"`` is refused ("block size 16 is not 128") instead of running.
"""

CAUGHT_BY = ["test_override_is_obeyed"]

EDIT = (
    '        if override == "CUTLASS_MLA":\n            return 128\n',
    "",
)
