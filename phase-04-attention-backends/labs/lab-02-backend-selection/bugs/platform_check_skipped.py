"""The platform's dtype check skipped: select_backend goes straight to the backends.

CudaPlatformBase.check_if_supports_dtype refuses bfloat16 below compute capability 8.0 when the
worker starts, before any layer asks for a backend. Symptom: a V100 or a T4 with a bfloat16 model
gets TRITON_ATTN or FLASHINFER, which would then run in a dtype the GPU has no instructions for.
"""

CAUGHT_BY = ["test_pre_ampere_bfloat16_is_refused", "test_platform_check_comes_before_the_override"]

EDIT = (
    '    refusal = platform_refusal(capability, dtype)\n'
    '    if refusal is not None:\n'
    '        raise ValueError(f"select_backend: {refusal}")\n',
    '',
)
