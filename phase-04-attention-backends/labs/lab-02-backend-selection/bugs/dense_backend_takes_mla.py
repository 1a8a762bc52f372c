"""A dense backend accepts an MLA layer: the "MLA layer needs an MLA backend" check left out.

validate_configuration compares ``use_mla`` with the backend's ``is_mla()`` both ways. Symptom: a
dense backend reports no MLA problem for DeepSeek's latent attention; with the override, TRITON_ATTN
would be handed an MLA layer.
"""

CAUGHT_BY = ["test_mla_and_dense_backends_do_not_mix", "test_override_that_cannot_run_is_rejected"]

EDIT = (
    '    if "mla" in features and not limits.mla:\n'
    '        problems.append("an MLA layer needs an MLA backend")\n',
    '',
)
