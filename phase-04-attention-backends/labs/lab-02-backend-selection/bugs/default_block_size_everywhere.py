"""The block size left at 16 when the user sets none, whatever backend was chosen.

Platform.update_block_size_for_backend asks the chosen backend for its preferred size. Symptom:
FlashMLA (kernel blocks of 64), CUTLASS MLA (128) and FlashInfer MLA (32) get 16-token blocks they
cannot run.
"""

CAUGHT_BY = ["test_mla_choices", "test_override_is_obeyed"]

EDIT = (
    '    block = _preferred_block_size(chosen) if block_size is None else block_size\n',
    '    block = DEFAULT_BLOCK_SIZE if block_size is None else block_size  # BUG: the backend is not asked\n',
)
