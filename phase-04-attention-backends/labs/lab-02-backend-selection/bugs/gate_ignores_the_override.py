"""The engine's gate forgets the override: an fp8 cache on Hopper passes whatever backend is named.

``is_kv_cache_dtype_supported`` accepts an fp8 cache off SM 10.0 only when FlashAttention will
run it, which an override of another backend rules out. Symptom: an H100 with an fp8 cache and
``VLLM_ATTENTION_BACKEND=FLASHINFER`` (or Triton) is said to run on V1; in v0.10.1 it leaves V1.
"""

CAUGHT_BY = ["test_v1_engine_gate", "test_engine_gate_comes_before_the_override"]

EDIT = (
    "        if override is not None:\n"
    "            return (f\"an fp8 KV cache ({kv_cache_dtype}) with VLLM_ATTENTION_BACKEND={override} is accepted \"\n"
    "                    \"only on SM 10.0\")\n",
    "",
)
