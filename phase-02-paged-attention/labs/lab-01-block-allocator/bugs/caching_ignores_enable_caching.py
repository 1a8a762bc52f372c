"""cache_full_blocks() caches whether or not prefix caching is enabled.

With enable_caching=False (vLLM's --no-enable-prefix-caching, used for benchmarks without reuse
and for requests that need prompt log-probabilities) every request must compute its own KV. Here
the pool keeps caching, and a manager that trusts the pool's lookups serves hits anyway. Symptom:
a pool built with enable_caching=False returns cached blocks.
"""

CAUGHT_BY = ["test_caching_disabled_never_hits"]

EDIT = (
    "        if not self.enable_caching:\n            return\n",
    "",
)
