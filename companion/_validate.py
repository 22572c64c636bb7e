"""Argument checks shared by the layers, each gathered into one call per layer.

Each failure is a ``ValueError`` naming the argument and the value or shape it saw, raised
before any matmul can fail cryptically.

**Shapes everywhere, values on the CPU.** A check of a shape or a dtype costs nothing. A check
of a tensor's *values* (negative token ids, a ``valid_lens`` longer than the sequence) has to
read them, and on a GPU reading a value makes the host wait for the device: a sync per check,
several per decoding step. So value checks run on CPU tensors only, unless
``COMPANION_CHECK_VALUES=1`` is set (a debug switch, read at import), which runs them on every
device.
"""

from __future__ import annotations

import numbers
import os

import torch
from torch import nn
from torch.nn.parameter import UninitializedParameter

CHECK_VALUES_VARIABLE = "COMPANION_CHECK_VALUES"
CHECK_VALUES_EVERYWHERE = os.environ.get(CHECK_VALUES_VARIABLE, "0") == "1"


def values_checked(X: torch.Tensor) -> bool:
    """Whether the checks that read the values of ``X`` run: on the CPU, or when debugging."""
    return X.device.type == "cpu" or CHECK_VALUES_EVERYWHERE


def check_dropout(dropout: float) -> float:
    """Return ``dropout`` if it is a probability in [0, 1); raise a ``ValueError`` otherwise (a
    str or a bool too)."""
    is_number = isinstance(dropout, numbers.Real) and not isinstance(dropout, bool)
    if not is_number or not 0 <= dropout < 1:
        raise ValueError(f"dropout must be in [0, 1); got {dropout!r}")
    return dropout


def check_positive(**sizes: int) -> None:
    """Each keyword must be a positive integer, e.g. ``check_positive(num_layers=2)``."""
    for name, size in sizes.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"{name} must be a positive integer; got {size!r}")


def check_token_ids(
    X: object,
    vocab_size: int,
    name: str = "X",
    *,
    what: str = "token ids",
    within: str = "the vocabulary",
) -> torch.Tensor:
    """``X`` must be a ``(batch, num_steps)`` tensor or numpy array of integer ids in ``[0,
    vocab_size)``; returned as a ``torch.long`` tensor, whatever its integer dtype (``uint8``
    bytes, ``int32``). Floats and bools are refused: an id is not a measurement.

    ``what`` and ``within`` name the ids and their range in the message, e.g.
    ``check_token_ids(pred_positions, steps, "pred_positions", what="positions",
    within="the sequence")``."""
    if type(X).__module__ == "numpy" and hasattr(X, "dtype"):
        X = torch.as_tensor(X)  # a numpy array: a tensor on the CPU
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a tensor of {what}; got {type(X).__name__}")
    if X.dim() != 2:
        raise ValueError(f"{name} must be 2-D (batch, num_steps); got shape {tuple(X.shape)}")
    if X.dtype.is_floating_point or X.dtype.is_complex or X.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer {what} (torch.long); got {X.dtype}")
    X = X.long()  # uint8, int32, ...: an embedding takes long (or int) ids
    if X.numel() and values_checked(X):
        low, high = X.min().item(), X.max().item()
        if low < 0 or high >= vocab_size:
            raise ValueError(
                f"{name} holds {what} from {low} to {high}, outside {within} [0, {vocab_size})"
            )
    return X


def check_steps(X: torch.Tensor, name: str = "X") -> None:
    """``X`` must hold at least one step on axis 1: an empty sequence has nothing to attend to
    or to continue."""
    if X.shape[1] < 1:
        raise ValueError(f"{name} must hold at least one step; got shape {tuple(X.shape)}")


def check_same_device(X: torch.Tensor, parameter: torch.Tensor, name: str = "X") -> None:
    """``X`` must be on the device of the layer's ``parameter``; say how to move one of them."""
    if X.device != parameter.device:
        raise ValueError(
            f"{name} is on {X.device} but the layer's weights are on {parameter.device}: move "
            f"the input with .to('{parameter.device}') or the model with .to('{X.device}')"
        )


def check_hiddens(
    X: torch.Tensor, num_hiddens: int, name: str = "X", *, like: nn.Module | None = None
) -> None:
    """``X`` must be ``(batch, steps, num_hiddens)``, as every Transformer block takes it, and
    floating point; with ``like`` (the block's first sublayer), of its parameters' dtype and
    device."""
    check_float_tensor(X, name)
    if X.dim() != 3 or X.shape[-1] != num_hiddens:
        raise ValueError(
            f"{name} must be 3-D (batch, steps, num_hiddens={num_hiddens}); "
            f"got shape {tuple(X.shape)}"
        )
    weight = None if like is None else next(like.parameters(), None)
    if weight is not None:
        check_like_weights(X, weight, name)


def describe_shapes(**tensors: torch.Tensor) -> str:
    """``queries (2, 3, 4), keys (2, 5, 4)``: the shapes an error message names."""
    return ", ".join(f"{name} {tuple(t.shape)}" for name, t in tensors.items())


def check_in_features(**inputs: tuple[nn.Linear, torch.Tensor]) -> None:
    """Each input must have the feature size, the dtype and the device its linear layer takes,
    e.g. ``check_in_features(queries=(self.W_q, queries))``. A lazy layer not yet materialised
    takes any size and floating dtype (its first call fixes them); under autocast any floating
    dtype goes."""
    for name, (layer, X) in inputs.items():
        check_float_tensor(X, name)
        if X.dim() == 0:
            raise ValueError(f"{name} must have a last axis of features; got a 0-D tensor")
        weight = layer.weight
        if isinstance(weight, UninitializedParameter):
            continue
        in_features = weight.shape[-1]  # in_features stays 0 when a lazy layer is loaded
        if X.shape[-1] != in_features:
            raise ValueError(
                f"{name} must have {in_features} features, the input size of this layer; "
                f"got shape {tuple(X.shape)}"
            )
        check_like_weights(X, weight, name)


def check_like_weights(X: torch.Tensor, weight: torch.Tensor, name: str = "X") -> None:
    """``X`` must be floating point, with the dtype of the layer's ``weight`` (any floating
    dtype under autocast, which casts it), and on its device."""
    check_float_tensor(X, name)
    if X.dtype != weight.dtype and not _autocasting(X):
        raise ValueError(
            f"{name} must have the layer's dtype {weight.dtype}; got {X.dtype} (convert "
            f"the input with .to({weight.dtype}), or the model with .to({X.dtype}))"
        )
    check_same_device(X, weight, name)


def _autocasting(X: torch.Tensor) -> bool:
    """Whether autocast is on for the device of ``X`` (then it casts inputs to the weights)."""
    try:
        return torch.is_autocast_enabled(X.device.type)
    except TypeError:  # torch < 2.4 takes no device type
        return torch.is_autocast_enabled()


def check_attention_inputs(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    valid_lens: torch.Tensor | None,
    *,
    ranks: tuple[int, ...],
    same_query_key_size: bool = False,
    earlier_keys: int = 0,
    mask: torch.Tensor | None = None,
) -> None:
    """Everything an attention layer needs its arguments to agree on, checked at once.

    Tensors of floating point; ranks; batch axes (with 4-D inputs, keys and values may have
    fewer heads than the queries, a number that divides theirs: grouped- and multi-query
    attention); step counts of keys and values; the feature size of queries and keys for dot
    products; ``valid_lens``, which may count ``earlier_keys`` cached keys besides these; and a
    boolean ``mask`` ``(batch or 1, queries or 1, keys)`` in place of ``valid_lens``.
    """
    for name, t in (("queries", queries), ("keys", keys), ("values", values)):
        check_float_tensor(t, name)
    problem = None
    if any(t.dim() not in ranks for t in (queries, keys, values)) or not (
        queries.dim() == keys.dim() == values.dim()
    ):
        problem = f"queries, keys and values must all be {' or '.join(f'{r}-D' for r in ranks)}"
    elif keys.shape[:-2] != values.shape[:-2]:
        problem = "keys and values must have the same batch (and heads) axes"
    elif keys.shape[-2] != values.shape[-2]:
        problem = "keys and values must have the same number of steps"
    elif keys.shape[0] != queries.shape[0]:
        problem = "queries, keys and values must have the same batch size"
    elif queries.dim() == 4 and (keys.shape[1] < 1 or queries.shape[1] % keys.shape[1]):
        problem = (
            "keys and values must have as many heads as the queries, or a number of heads that "
            "divides theirs (each key-value head serves as many query heads)"
        )
    elif queries.shape[-2] < 1 or keys.shape[-2] < 1:
        problem = "queries and keys must hold at least one step each"
    if problem:  # the shapes are described only when they are wrong: this runs at every step
        raise ValueError(
            f"{problem}; got {describe_shapes(queries=queries, keys=keys, values=values)}"
        )
    if same_query_key_size and queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            "queries and keys must have the same feature size d_k to take dot products; "
            f"got {describe_shapes(queries=queries, keys=keys)}"
        )
    if not (queries.dtype == keys.dtype == values.dtype) or not (
        queries.device == keys.device == values.device
    ):
        raise ValueError(
            "queries, keys and values must have one dtype and one device; got "
            + ", ".join(
                f"{name} {t.dtype} on {t.device}"
                for name, t in (("queries", queries), ("keys", keys), ("values", values))
            )
        )
    if valid_lens is not None:
        num_keys = earlier_keys + keys.shape[-2]
        check_valid_lens(valid_lens, queries.shape[0], queries.shape[-2], num_keys)
    if mask is not None:
        check_mask(mask, valid_lens, (queries.shape[0], queries.shape[-2], keys.shape[-2]))


def check_float_tensor(X: object, name: str = "X") -> torch.Tensor:
    """``X`` must be a floating-point tensor: a ``TypeError`` for anything else (a list, a
    numpy array), a ``ValueError`` for integer or boolean values (token ids belong in an
    embedding first)."""
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a floating-point torch.Tensor; got {type(X).__name__}")
    if not X.dtype.is_floating_point:
        raise ValueError(f"{name} must be floating point, like the layer; got {X.dtype}")
    return X


def check_scores(
    X: torch.Tensor, valid_lens: torch.Tensor | None, mask: torch.Tensor | None
) -> None:
    """Scores ``(batch, [heads,] queries, keys)`` of floating point, and at most one mask:
    ``valid_lens`` (checked against them) or a boolean ``mask``."""
    check_float_tensor(X)
    if X.dim() not in (3, 4):
        raise ValueError(
            f"X must be 3-D (batch, queries, keys) or 4-D (batch, heads, queries, keys); "
            f"got shape {tuple(X.shape)}"
        )
    if valid_lens is not None:
        check_valid_lens(valid_lens, X.shape[0], X.shape[-2], X.shape[-1])
    if mask is not None:
        check_mask(mask, valid_lens, X.shape)


def check_mask(
    mask: object, valid_lens: torch.Tensor | None, scores_shape: tuple[int, ...] | torch.Size
) -> None:
    """A boolean mask that broadcasts against scores of ``scores_shape``, given in place of
    ``valid_lens``, not besides it."""
    if valid_lens is not None:
        raise ValueError("give valid_lens or mask, not both: the mask replaces valid_lens")
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise ValueError(f"mask must be a boolean tensor; got {describe(mask)}")
    try:
        torch.broadcast_shapes(mask.shape, tuple(scores_shape))
    except RuntimeError:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast against the scores "
            f"{tuple(scores_shape)}"
        ) from None


def check_attention_shape(
    num_hiddens: int,
    num_heads: int,
    num_kv_heads: int | None,
    window: int | None,
    rotary: nn.Module | None,
) -> int:
    """The shape of multi-head attention, checked at once: ``num_heads`` divides
    ``num_hiddens``; ``num_kv_heads`` (``None``: one per query head) divides ``num_heads``; a
    ``window`` of at least one step; ``rotary`` rotating ``head_dim`` features. Returns the
    number of key-value heads."""
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    check_positive(num_hiddens=num_hiddens, num_heads=num_heads, num_kv_heads=num_kv_heads)
    if num_hiddens % num_heads:
        raise ValueError(
            f"num_hiddens ({num_hiddens}) must be divisible by num_heads ({num_heads})"
        )
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads ({num_heads}) must be divisible by num_kv_heads ({num_kv_heads}): "
            "each key-value head serves the same number of query heads"
        )
    if window is not None:
        check_positive(window=window)
    head_dim = num_hiddens // num_heads
    if rotary is not None and getattr(rotary, "head_dim", None) != head_dim:
        raise ValueError(
            f"rotary must rotate head_dim={head_dim} features (num_hiddens / num_heads); got "
            f"{getattr(rotary, 'head_dim', type(rotary).__name__)}"
        )
    return num_kv_heads


def check_valid_lens(
    valid_lens: torch.Tensor,
    batch_size: int,
    num_queries: int,
    num_keys: int,
    *,
    axis: str = "keys",
) -> None:
    """``valid_lens``: integers of shape ``(batch,)`` or ``(batch, queries)``, in
    ``[0, num_keys]`` (the values are read on the CPU only; see the module docstring). ``axis``
    names what ``num_keys`` counts in the message."""
    if not isinstance(valid_lens, torch.Tensor):
        raise ValueError(
            f"valid_lens must be a tensor of integers; got {type(valid_lens).__name__}"
        )
    if (
        valid_lens.dtype.is_floating_point
        or valid_lens.dtype.is_complex
        or (valid_lens.dtype == torch.bool)
    ):
        raise ValueError(f"valid_lens must hold integers (torch.long); got {valid_lens.dtype}")
    if valid_lens.shape not in ((batch_size,), (batch_size, num_queries)):
        raise ValueError(
            f"valid_lens must have shape (batch,) = ({batch_size},) or (batch, queries) = "
            f"({batch_size}, {num_queries}); got {tuple(valid_lens.shape)}"
        )
    if valid_lens.numel() and values_checked(valid_lens):
        low, high = valid_lens.min().item(), valid_lens.max().item()
        if low < 0:
            raise ValueError(f"valid_lens must be >= 0; got {low}")
        if high > num_keys:
            raise ValueError(f"valid_lens must be <= the number of {axis} ({num_keys}); got {high}")


# ---------------------------------------------------------------------------------------------
# Plain arguments: the numbers, seeds, sequences and objects that the data, training, metrics
# and figure functions take. A number of the wrong type or out of its range is a ValueError,
# as check_positive makes it; an object of the wrong kind (a str where a list is meant, a
# tensor where a tuple of tensors is) is a TypeError. Each message names the argument and
# describes what it got.

import math  # noqa: E402  (these checks alone need it: kept with them)
from collections.abc import Sequence  # noqa: E402


def describe(value: object) -> str:
    """What a message says a caller passed: ``the str 'cat'``, ``a torch.float32 tensor of
    shape (2, 3)``, ``5 (int)``; a long repr is cut."""
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    shape = getattr(value, "shape", None)
    if type(value).__module__ == "numpy" and shape:
        return f"a {getattr(value, 'dtype', '')} array of shape {tuple(shape)}"
    if isinstance(value, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in value):
        parts = ", ".join(describe(v) for v in value[:3]) + (", ..." if len(value) > 3 else "")
        return f"a {type(value).__name__} of {len(value)}: ({parts})"
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"the str {text}" if isinstance(value, str) else f"{text} ({type(value).__name__})"


def _integer(value: object) -> int | None:
    """``value`` as an ``int`` if it is an integer of any integer type (``int``, numpy's, a 0-d
    integer tensor); ``None`` for anything else, bools and floats included."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":  # Python's or numpy's
        return None
    if isinstance(value, torch.Tensor):
        integer_dtype = not (value.dtype.is_floating_point or value.dtype.is_complex)
        is_integer = value.dim() == 0 and integer_dtype and value.dtype != torch.bool
        return int(value) if is_integer else None
    return int(value) if isinstance(value, numbers.Integral) else None


def check_integer(
    name: str, value: object, *, minimum: int | None = 1, maximum: int | None = None
) -> int:
    """``value`` as an ``int``, if it is an integer of any integer type (not a bool, not a
    float) in ``[minimum, maximum]``, ``None`` for no bound; a ValueError naming ``name``
    otherwise. By default: a positive integer."""
    integer = _integer(value)
    if (
        integer is None
        or (minimum is not None and integer < minimum)
        or (maximum is not None and integer > maximum)
    ):
        if maximum is not None:
            wanted = f"an integer in [{minimum}, {maximum}]"
        elif minimum == 1:
            wanted = "a positive integer"
        else:
            wanted = "an integer" + ("" if minimum is None else f" >= {minimum}")
        raise ValueError(f"{name} must be {wanted}; got {value!r}")
    return integer


def check_seed(seed: object, name: str = "seed") -> int:
    """A seed must be an integer: ``None`` would seed ``random.Random`` from the clock and a
    str from its text, and both would draw other data without a word."""
    return check_integer(name, seed, minimum=None)


def check_number(
    name: str,
    value: object,
    *,
    above: float | None = None,
    at_least: float | None = None,
    below: float | None = None,
    at_most: float | None = None,
    what: str = "a number",
    finite: bool = True,
    note: str = "",
) -> float:
    """``value`` as a ``float``, if it is a real number (not a bool, a str or NaN; infinite
    only with ``finite=False``) within the bounds given; a ValueError naming ``name``
    otherwise, e.g. ``warmup must be a fraction in [0, 1); got 1.5``. ``note`` follows the
    bounds in the message, in parentheses."""
    number = None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, torch.Tensor) and value.dim() == 0 and value.dtype.is_floating_point:
        number = float(value)
    if (
        number is None
        or math.isnan(number)
        or (finite and math.isinf(number))
        or (above is not None and not number > above)
        or (at_least is not None and not number >= at_least)
        or (below is not None and not number < below)
        or (at_most is not None and not number <= at_most)
    ):
        low = above if above is not None else at_least
        high = below if below is not None else at_most
        if low is not None and high is not None:
            left, right = "(" if above is not None else "[", ")" if below is not None else "]"
            wanted = f"{what} in {left}{low:g}, {high:g}{right}"
        else:
            signs = ((">", above), (">=", at_least), ("<", below), ("<=", at_most))
            wanted = " ".join([what, *(f"{s} {b:g}" for s, b in signs if b is not None)])
        wanted += f" ({note})" if note else ""
        raise ValueError(f"{name} must be {wanted}; got {value!r}")
    return number


def check_type(name: str, value: object, kind: type | tuple[type, ...], what: str) -> None:
    """``value`` must be an instance of ``kind``, described to the reader as ``what`` (``"a
    Vocab"``, ``"a random.Random such as random.Random(0)"``); a TypeError otherwise."""
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {what}; got {describe(value)}")


def check_callable(name: str, value: object, what: str) -> None:
    """``value`` must be callable; ``what`` says what for. A TypeError otherwise."""
    if not callable(value):
        raise TypeError(f"{name} must be {what}; got {describe(value)}")


def check_sequence(name: str, value: object, what: str) -> None:
    """``value`` must be a list, a tuple or another sequence, but not a str (whose items are
    its characters), bytes or a tensor; a TypeError otherwise."""
    if isinstance(value, (str, bytes, torch.Tensor)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be {what}; got {describe(value)}")


def check_tokens(name: str, tokens: object, *, text: bool = False) -> None:
    """One sentence: a list (or tuple) of str tokens or, with ``text``, a space-separated str.
    A list of sentences in its place would be read as one sentence of odd tokens."""
    if text and isinstance(tokens, str):
        return
    what = "one sentence, a list of str tokens" + (" or a space-separated str" if text else "")
    check_sequence(name, tokens, what)
    items: Sequence[object] = tokens  # type: ignore[assignment]  # checked just above
    for i, token in enumerate(items):
        if not isinstance(token, str):
            raise TypeError(f"{name}[{i}] is {describe(token)}: {name} must be {what}")


def check_sentences(name: str, sentences: object, *, text: bool = False) -> None:
    """A list of sentences, each a list of str tokens or, with ``text``, a space-separated str.
    A str in place of the list, or of one sentence, would be read character by character."""
    each = "a list of str tokens" + (" or a space-separated str" if text else "")
    check_sequence(name, sentences, f"a list of sentences, each {each}")
    items: Sequence[object] = sentences  # type: ignore[assignment]  # checked just above
    for i, sentence in enumerate(items):
        if isinstance(sentence, str) and not text:
            raise TypeError(
                f"{name}[{i}] is {describe(sentence)}: each sentence must be a list of words "
                "(sentence.split()), and one sentence alone goes in a list, [words]"
            )
        check_tokens(f"{name}[{i}]", sentence, text=text)


def check_device(device: object, name: str = "device") -> torch.device | None:
    """``None``, a ``torch.device`` or a device's name such as ``"cpu"``: returned as a
    ``torch.device`` (or ``None``)."""
    if device is None or isinstance(device, torch.device):
        return device
    if not isinstance(device, str):
        raise TypeError(
            f"{name} must be a torch.device, a name such as 'cpu' or 'cuda', or None; "
            f"got {describe(device)}"
        )
    try:
        return torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"{name}={device!r} is not a device: {error}") from None
