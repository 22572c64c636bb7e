"""Checkers for the book's coding exercises, one module per chapter.

A checker runs the student's function on fresh random inputs against the reference and prints
``pass``, or a hint that names the first thing that differs (a shape, a NaN, a known mistake
such as a wrong softmax axis, or the first differing position). It returns ``True`` on a pass.
"""

from companion.exercises.bahdanau import (
    check_bahdanau_context,
    check_length_normalized_scores,
    check_luong_step,
)
from companion.exercises.core import check
from companion.exercises.efficient import check_chunked_linear_attention, check_linear_attention
from companion.exercises.kv_cache import check_cached_attention, check_kv_cache_bytes
from companion.exercises.lm import (
    check_causal_attention,
    check_top_p_filter,
)
from companion.exercises.modern_decoder import check_llama_block, check_repeat_kv, check_rope
from companion.exercises.multihead import (
    check_head_ablation,
    check_merge_heads,
    check_multihead_attention,
    check_split_heads,
)
from companion.exercises.pooling import check_gaussian_weights, check_laplace_pooling
from companion.exercises.positional import (
    check_alibi,
    check_rotation_matrix,
    check_sinusoidal_encoding,
)
from companion.exercises.pretraining import (
    check_bert_input,
    check_gather_positions,
    check_lora_forward,
    check_mask_sentence,
    check_mlm_loss,
)
from companion.exercises.scoring import check_masked_softmax, check_scaled_dot_product
from companion.exercises.self_attention import check_graph_attention_mask, check_self_attention
from companion.exercises.tokenization import check_encode, check_train
from companion.exercises.transformer import (
    check_causal_mask,
    check_decoder_block,
    check_layer_norm,
    check_shift_right,
)
from companion.exercises.vit import check_cls_attention_map, check_patchify

__all__ = [
    "check",
    "check_alibi",
    "check_bahdanau_context",
    "check_bert_input",
    "check_cached_attention",
    "check_causal_attention",
    "check_causal_mask",
    "check_chunked_linear_attention",
    "check_cls_attention_map",
    "check_decoder_block",
    "check_encode",
    "check_gather_positions",
    "check_gaussian_weights",
    "check_graph_attention_mask",
    "check_head_ablation",
    "check_kv_cache_bytes",
    "check_laplace_pooling",
    "check_layer_norm",
    "check_length_normalized_scores",
    "check_linear_attention",
    "check_llama_block",
    "check_lora_forward",
    "check_luong_step",
    "check_mask_sentence",
    "check_masked_softmax",
    "check_merge_heads",
    "check_multihead_attention",
    "check_mlm_loss",
    "check_patchify",
    "check_repeat_kv",
    "check_rope",
    "check_rotation_matrix",
    "check_scaled_dot_product",
    "check_self_attention",
    "check_shift_right",
    "check_sinusoidal_encoding",
    "check_split_heads",
    "check_top_p_filter",
    "check_train",
]
