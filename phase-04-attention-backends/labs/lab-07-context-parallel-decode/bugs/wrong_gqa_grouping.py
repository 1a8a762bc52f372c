"""Query head h reads KV head h % num_kv_heads instead of h // (num_heads // num_kv_heads).

Consecutive query heads share a KV head; the modulo spreads them round robin. Symptom: wrong output
for every head but those where both formulas agree; right with one query head per KV head (MHA) or
one KV head (MQA).
"""

CAUGHT_BY = [
    "test_huge_logits_on_one_rank",
    "test_rank_summaries_match_the_definition",
    "test_rank_summaries_survive_extreme_scores",
    "test_ranks_match_dense_attention_on_ragged_batches",
]

EDIT = (
    "            kv = h // group  # consecutive query heads share a KV head\n",
    "            kv = h % num_kv_heads\n",
)
