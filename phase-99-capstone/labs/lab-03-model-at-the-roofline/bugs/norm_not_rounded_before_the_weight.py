"""The normalized row multiplied by the weight in float32, not rounded to the input's dtype first.

transformers' ``LlamaRMSNorm`` rounds ``x / rms`` to the model's dtype and only then multiplies by the
weight. Right in float32; in float16 or bfloat16 about a quarter of the outputs come out one step away
from the model's: too little for a tolerance to see, enough to turn a near tie between two tokens the
other way from ``generate``.
"""

CAUGHT_BY = ["test_float16_rounds_where_the_model_rounds"]

EDIT = (
    "    normed = (xf * tl.rsqrt(variance + eps)[:, None]).to(x.dtype).to(tl.float32)\n",
    "    normed = xf * tl.rsqrt(variance + eps)[:, None]\n",
)
