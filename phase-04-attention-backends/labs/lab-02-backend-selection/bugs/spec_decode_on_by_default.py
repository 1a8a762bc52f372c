"""resolve_cudagraph_mode assumes speculative decoding unless told otherwise.

Symptom: resolve_cudagraph_mode('FULL_AND_PIECEWISE', ['UNIFORM_SINGLE_TOKEN_DECODE']) drops to
PIECEWISE, losing the full decode graphs of every run without speculative decoding.
"""

CAUGHT_BY = ["test_resolve_cudagraph_mode_default_is_no_spec_decode"]

EDIT = (
    "def resolve_cudagraph_mode(requested, supports, spec_decode=False) -> str:\n",
    "def resolve_cudagraph_mode(requested, supports, spec_decode=True) -> str:  # BUG\n",
)
