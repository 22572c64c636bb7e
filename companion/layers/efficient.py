"""Linear attention (sec-efficient-attention).

**Linear attention** (Katharopoulos et al., 2020, "Transformers are RNNs") replaces the
softmax's similarity ``exp(q . k / sqrt(d))`` by a kernel ``phi(q) . phi(k)`` with positive
features ``phi(x) = elu(x) + 1``. Output ``i`` is then

    V'_i = sum_j phi(q_i)^T phi(k_j) v_j / sum_j phi(q_i)^T phi(k_j)
         = phi(q_i)^T S / phi(q_i)^T z,   S = sum_j phi(k_j) v_j^T  (d_k, d_v),
                                           z = sum_j phi(k_j)        (d_k,)

In matrix form, ``(phi(Q) phi(K)^T) V`` (an ``n x n`` matrix first: O(n^2 d) time and O(n^2)
memory) is reordered into ``phi(Q) (phi(K)^T V)`` (a ``d_k x d_v`` matrix first: O(n d_k d_v)
time, no ``n x n`` matrix at all). With a causal mask each query sums over a prefix of the keys,
and the sums become a recurrence, an RNN whose hidden state is ``(S_i, z_i)``:

    S_i = S_{i-1} + phi(k_i) v_i^T,   z_i = z_{i-1} + phi(k_i),
    V'_i = phi(q_i)^T S_i / phi(q_i)^T z_i.

:class:`LinearAttention` follows the conventions of ``companion.layers.attention``'s dot-product
layers: inputs ``(batch, steps, features)`` or ``(batch, heads, steps, features)``, optional
``valid_lens`` that mask keys, a keyword-only ``causal``, and ``need_weights=True`` for an
explicit path that builds and keeps the ``(queries, keys)`` weights for heatmaps.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from companion._validate import (
    check_attention_inputs,
    check_float_tensor,
    check_type,
    describe,
    describe_shapes,
)
from companion.layers.attention import KeepsWeights, lined_up_mask


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """``phi(x) = elu(x) + 1``: positive everywhere, so no normaliser can be zero or negative.

    Computed as ``exp(min(x, 0)) + max(x, 0)``, the same function (``x + 1`` for ``x > 0``,
    ``exp(x)`` otherwise): written as ``elu(x) + 1`` it rounds to exactly 0 in float32 once
    ``exp(x)`` drops below the float's resolution near -1 (``x < -17`` or so), and a query or
    key made of such features would be ignored. The clamp keeps ``exp`` finite for large ``x``.
    """
    check_float_tensor(x, "x")
    return torch.exp(x.clamp(max=0)) + F.relu(x)


class RecurrentState(NamedTuple):
    """The hidden state of causal linear attention after ``i`` steps."""

    S: torch.Tensor  # (batch, [heads,] d_k, d_v): sum of phi(k_j) v_j^T over j <= i
    z: torch.Tensor  # (batch, [heads,] d_k): sum of phi(k_j) over j <= i


def _share_kv_heads(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys and values with as many heads as the queries: each key-value head repeated for the
    ``heads / kv_heads`` query heads that share it (grouped- and multi-query attention). 3-D
    inputs, and 4-D ones with a head per query head, pass unchanged."""
    if queries.dim() == 3 or keys.shape[1] == queries.shape[1]:
        return keys, values
    group = queries.shape[1] // keys.shape[1]  # query heads per key-value head
    return keys.repeat_interleave(group, dim=1), values.repeat_interleave(group, dim=1)


def _check_one_dtype_and_device(**tensors: torch.Tensor) -> None:
    """The tensors must share one dtype and one device."""
    if len({(t.dtype, t.device) for t in tensors.values()}) > 1:
        *others, last = tensors
        raise ValueError(
            f"{', '.join(others)} and {last} must have one dtype and one device; got "
            + ", ".join(f"{name} {t.dtype} on {t.device}" for name, t in tensors.items())
        )


def _divide(numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
    """``numerator / denominator``, with 0 where the denominator is 0.

    With positive features the denominator is 0 only for a query that sees no key at all, and
    then the numerator is 0 as well: that query gets a zero output, as in
    companion.layers.attention.
    """
    return numerator / denominator.masked_fill(denominator == 0, 1.0)


class LinearAttention(KeepsWeights):
    """Linear attention (sec-efficient-attention; Katharopoulos et al., 2020):

        V' = phi(Q) (phi(K)^T V) / (phi(Q) (phi(K)^T 1)),   phi(x) = elu(x) + 1

    with ``Q`` of shape ``(batch, queries, d_k)``, ``K`` of ``(batch, keys, d_k)`` and ``V`` of
    ``(batch, keys, d_v)``; a heads axis after the batch is allowed, and keys and values may then
    have fewer heads than the queries, a number that divides theirs (grouped- and multi-query
    attention: query head ``i`` reads key-value head ``i // (heads / kv_heads)``, as in
    :func:`~companion.layers.attention.share_kv_heads`). There is no ``1/sqrt(d)``
    scale: the feature map replaces the exponential. There is no dropout either, since the
    linear path never forms the weights it would drop.

    ``valid_lens`` of shape ``(batch,)`` or ``(batch, queries)`` keeps only the first
    ``valid_lens`` keys, as in :func:`companion.layers.attention.lined_up_mask`; ``causal=True``
    lets query ``i`` see keys ``0..i`` only (with fewer queries than keys, the queries are the last
    steps, as in :func:`~companion.layers.attention.lined_up_mask`). A query with no valid key gets
    a zero output.

    Paths: by default the linear path runs, in O(n d_k d_v) time. Without a mask, or with one
    length per batch row, it keeps only the ``(d_k, d_v)`` sums; causal or per-query lengths
    make it keep one prefix sum per key (O(n d_k d_v) memory, still no ``n x n`` matrix). With
    ``need_weights=True`` the explicit path builds the ``(queries, keys)`` weights
    ``phi(q_i)^T phi(k_j) / sum_j' phi(q_i)^T phi(k_j')``, O(n^2), and keeps them in
    ``attention_weights``. :meth:`step` is the recurrent form, one step at a time.
    """

    def __init__(self, *, need_weights: bool = False) -> None:
        super().__init__()
        check_type("need_weights", need_weights, bool, "True or False")
        self.need_weights = need_weights

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
        *,
        causal: bool = False,
    ) -> torch.Tensor:
        check_attention_inputs(
            queries, keys, values, valid_lens, ranks=(3, 4), same_query_key_size=True
        )
        check_type("causal", causal, bool, "True or False")
        keys, values = _share_kv_heads(queries, keys, values)
        if self.need_weights:  # explicit path: the n x n similarities, normalised per query
            scores_shape = (*queries.shape[:-1], keys.shape[-2])  # (batch, [heads,] n_q, n_k)
            mask = lined_up_mask(valid_lens, scores_shape, causal, queries.device)
            similarity = feature_map(queries) @ feature_map(keys).transpose(-2, -1)
            if mask is not None:
                similarity = similarity * mask  # a masked key adds nothing
            weights = _divide(similarity, similarity.sum(dim=-1, keepdim=True))
            self._attention_weights = weights  # (..., n_q, n_k)
            return weights @ values  # (..., n_q, d_v)

        self._attention_weights = None
        num_queries, num_keys = queries.shape[-2], keys.shape[-2]
        if valid_lens is not None:
            valid_lens = valid_lens.to(queries.device)
        phi_q, phi_k = feature_map(queries), feature_map(keys)  # (..., n_q or n_k, d_k)
        if causal or (valid_lens is not None and valid_lens.dim() == 2):
            # Every query sees a prefix of the keys: how long is each one? (batch or 1, n_q)
            limits = torch.full((1, num_queries), num_keys, device=queries.device)
            if valid_lens is not None:
                lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
                limits = torch.minimum(limits, lens)
            if causal:  # query i sits at position num_keys - num_queries + i and sees up to it
                last = torch.arange(num_queries, device=queries.device) + num_keys - num_queries
                limits = torch.minimum(limits, (last + 1).clamp(min=0))
            if queries.dim() == 4:
                limits = limits.unsqueeze(1)  # (batch or 1, 1, n_q): the same for every head
            return self._prefix_form(phi_q, phi_k, values, limits)
        if valid_lens is not None:  # the same keys for every query of a batch row
            keep = torch.arange(num_keys, device=queries.device) < valid_lens[:, None]
            keep = keep.to(phi_k.dtype)[..., None]  # (batch, n_k, 1)
            phi_k = phi_k * (keep.unsqueeze(1) if keys.dim() == 4 else keep)  # masked keys: 0
        S = phi_k.transpose(-2, -1) @ values  # (..., d_k, d_v): sum_j phi(k_j) v_j^T
        z = phi_k.sum(dim=-2, keepdim=True).transpose(-2, -1)  # (..., d_k, 1): sum_j phi(k_j)
        return _divide(phi_q @ S, phi_q @ z)  # (..., n_q, d_v) / (..., n_q, 1)

    @staticmethod
    def _prefix_form(
        phi_q: torch.Tensor, phi_k: torch.Tensor, values: torch.Tensor, limits: torch.Tensor
    ) -> torch.Tensor:
        """Query ``i`` sees the first ``limits[..., i]`` keys: take the running sums S_j, z_j
        over the keys and give each query the ones at the end of its prefix. O(n d_k d_v)
        memory for the n running sums, and no n x n matrix."""
        # Running sums, the empty prefix first: (..., n_k + 1, d_k, d_v) and (..., n_k + 1, d_k)
        S = (phi_k.unsqueeze(-1) * values.unsqueeze(-2)).cumsum(dim=-3)
        S = torch.cat([torch.zeros_like(S[..., :1, :, :]), S], dim=-3)
        z = torch.cat([torch.zeros_like(phi_k[..., :1, :]), phi_k.cumsum(dim=-2)], dim=-2)
        limits = limits.expand(phi_q.shape[:-1])  # (..., n_q)
        S_q = torch.gather(S, -3, limits[..., None, None].expand(*limits.shape, *S.shape[-2:]))
        z_q = torch.gather(z, -2, limits[..., None].expand(*limits.shape, z.shape[-1]))
        numerator = (phi_q.unsqueeze(-2) @ S_q).squeeze(-2)  # (..., n_q, d_v)
        denominator = (phi_q * z_q).sum(dim=-1, keepdim=True)  # (..., n_q, 1)
        return _divide(numerator, denominator)

    def step(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        state: RecurrentState | None = None,
    ) -> tuple[torch.Tensor, RecurrentState]:
        """One step of causal linear attention as an RNN: add ``phi(key) value^T`` to ``S`` and
        ``phi(key)`` to ``z``, then read out ``phi(query)^T S / phi(query)^T z``.

        ``query`` and ``key`` are ``(batch, [heads,] d_k)``, ``value`` is ``(batch, [heads,]
        d_v)``; ``state`` is the previous :class:`RecurrentState`, or ``None`` at the first
        step. Returns the ``(batch, [heads,] d_v)`` output and the new state. The cost of a step
        does not depend on how many came before.
        """
        tensors = {"query": query, "key": key, "value": value}
        for name, t in tensors.items():
            check_float_tensor(t, name)
        if any(t.dim() not in (2, 3) for t in tensors.values()) or not (
            query.shape[:-1] == key.shape[:-1] == value.shape[:-1]
        ):
            raise ValueError(
                "query, key and value must be (batch, features) or (batch, heads, features) "
                f"with the same leading axes; got {describe_shapes(**tensors)}"
            )
        if query.shape[-1] != key.shape[-1]:
            raise ValueError(
                "query and key must have the same feature size d_k; "
                f"got {describe_shapes(**tensors)}"
            )
        _check_one_dtype_and_device(**tensors)
        if state is not None:
            if not isinstance(state, RecurrentState):
                raise TypeError(
                    "state must be the RecurrentState that the last step returned, or None; "
                    f"got {describe(state)}"
                )
            _check_one_dtype_and_device(query=query, **{"state.S": state.S, "state.z": state.z})
        phi_q, phi_k = feature_map(query), feature_map(key)  # (..., d_k)
        S_step = phi_k.unsqueeze(-1) * value.unsqueeze(-2)  # (..., d_k, d_v): phi(k) v^T
        if state is None:
            state = RecurrentState(torch.zeros_like(S_step), torch.zeros_like(phi_k))
        elif state.S.shape != S_step.shape or state.z.shape != phi_k.shape:
            raise ValueError(
                f"state must hold S of shape {tuple(S_step.shape)} and z of shape "
                f"{tuple(phi_k.shape)}; got {describe_shapes(S=state.S, z=state.z)}"
            )
        state = RecurrentState(state.S + S_step, state.z + phi_k)
        numerator = (phi_q.unsqueeze(-2) @ state.S).squeeze(-2)  # (..., d_v)
        denominator = (phi_q * state.z).sum(dim=-1, keepdim=True)  # (..., 1)
        return _divide(numerator, denominator), state

    def recurrent(
        self, queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
    ) -> torch.Tensor:
        """Causal linear attention computed one step at a time with :meth:`step`: the same
        numbers as ``forward(queries, keys, values, causal=True)`` for self-attention, where
        queries and keys have the same number of steps."""
        check_attention_inputs(queries, keys, values, None, ranks=(3, 4))
        if queries.shape[-2] != keys.shape[-2]:
            raise ValueError(
                "the recurrent form needs one query per key (self-attention); got "
                f"{describe_shapes(queries=queries, keys=keys)}"
            )
        keys, values = _share_kv_heads(queries, keys, values)
        outputs, state = [], None
        for t in range(queries.shape[-2]):
            output, state = self.step(queries[..., t, :], keys[..., t, :], values[..., t, :], state)
            outputs.append(output)  # (batch, [heads,] d_v)
        if not outputs:
            return values.new_zeros(*queries.shape[:-1], values.shape[-1])
        return torch.stack(outputs, dim=-2)  # (batch, [heads,] n, d_v)
