"""A dense backend accepts an MLA layer: the "MLA layer needs an MLA backend" check left out.

MLA caches hold one latent vector (512 + 64 values) per token, not K and V per head; a dense
kernel would read them as something they are not. Symptom: FLEX_ATTENTION, which takes any head
size, reports no problem with an MLA layer.
"""

CAUGHT_BY = [
    "test_mla_and_dense_backends_do_not_mix",
    "test_mla_choices",
]

EDIT = (
    '    if "mla" in features and not limits.mla:\n        problems.append("an MLA layer needs an MLA backend")\n',
    '',
)
