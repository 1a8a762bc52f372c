"""Attention sinks given to every FlashInfer backend on 10.x, FlashInfer MLA included.

Sinks come to FlashInfer through TRT-LLM's dense attention; the MLA backends, FlashInfer MLA
among them, keep the base class's supports_sink, which says no. Symptom: an MLA
layer with sinks on a B200 gets FLASHINFER_MLA instead of a ValueError naming sinks.
"""

CAUGHT_BY = ["test_mla_with_no_backend"]

EDIT = (
    '    if backend == "FLASHINFER":\n        return capability[0] == 10\n',
    '    if backend.startswith("FLASHINFER"):  # BUG: FLASHINFER alone\n        return capability[0] == 10\n',
)
