"""The V1 engine's gate skipped: select_backend goes straight to the backends.

Symptom: a T4 gets FLEX_ATTENTION (cuda.py's own branch for old GPUs, which the engine never
reaches in v0.10.1), and an fp8 cache with an override on an H100 is accepted.
"""

CAUGHT_BY = [
    "test_pre_ampere_gpus_get_no_v1_backend",
    "test_engine_gate_comes_before_the_override",
]

EDIT = (
    '    if refusal is not None:\n        raise ValueError(f"select_backend: {refusal}")\n',
    '',
)
