"""The Vision Transformer's checkers (sec-vit) pass correct answers and name typical mistakes.
Every call is seeded."""

from __future__ import annotations

import torch
from torch import nn

from companion.exercises.vit import check_cls_attention_map, check_patchify
from companion.models.vit import PatchEmbedding


def patchify(X, patch_size):
    batch, c, h, w = X.shape
    p = patch_size
    P = X.reshape(batch, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
    return P.reshape(batch, (h // p) * (w // p), c * p * p)


def cls_attention_map(weights, grid_size):
    return weights[:, :, 0, 1:].reshape(*weights.shape[:2], *grid_size)


def test_patchify_pass_and_it_is_patch_embedding(capsys):
    assert check_patchify(patchify, seed=0)
    assert capsys.readouterr().out.startswith("pass: patchify matches the reference")
    layer = PatchEmbedding((6, 9), 3, 5, in_channels=2)
    X = torch.randn(2, 2, 6, 9)
    W = layer.conv.weight.reshape(5, -1)
    torch.testing.assert_close(patchify(X, 3) @ W.T + layer.conv.bias, layer(X))


def test_patchify_another_correct_spelling_passes(capsys):
    def by_loops(X, patch_size):
        p, (h, w) = patch_size, X.shape[-2:]
        rows = [
            X[:, :, i : i + p, j : j + p].flatten(1) for i in range(0, h, p) for j in range(0, w, p)
        ]
        return torch.stack(rows, dim=1)

    assert check_patchify(by_loops, seed=0)
    assert capsys.readouterr().out.startswith("pass")


def test_patchify_refuses_unfold_and_convolutions_though_their_numbers_are_right(capsys):
    def chapter_line(X, patch_size):  # the chapter's own cell
        return nn.functional.unfold(X, kernel_size=patch_size, stride=patch_size).transpose(1, 2)

    def tensor_unfold(X, p):
        b, c = X.shape[:2]
        P = X.unfold(2, p, p).unfold(3, p, p)  # (b, c, gh, gw, p, p)
        return P.permute(0, 2, 3, 1, 4, 5).reshape(b, -1, c * p * p)

    def by_convolution(X, p):  # an identity kernel: a convolution that copies each patch
        c = X.shape[1]
        eye = torch.eye(c * p * p).reshape(c * p * p, c, p, p)
        return nn.functional.conv2d(X, eye, stride=p).flatten(2).transpose(1, 2)

    def by_conv_module(X, p):
        c = X.shape[1]
        conv = nn.Conv2d(c, c * p * p, p, stride=p, bias=False)
        with torch.no_grad():
            conv.weight.copy_(torch.eye(c * p * p).reshape(c * p * p, c, p, p))
            return conv(X).flatten(2).transpose(1, 2)

    cases = [
        (chapter_line, "unfold"),
        (tensor_unfold, "unfold"),
        (by_convolution, "convolution"),
        (by_conv_module, "convolution"),
    ]
    for fn, words in cases:
        torch.testing.assert_close(fn(torch.ones(1, 2, 4, 6).cumsum(-1), 2),
                                   patchify(torch.ones(1, 2, 4, 6).cumsum(-1), 2))  # fmt: skip
        assert not check_patchify(fn, seed=1)
        out = capsys.readouterr().out
        assert out.startswith("hint: ") and words in out, (fn.__name__, out)


def test_patchify_hints(capsys):
    def grid(X, p):
        b, c, h, w = X.shape
        return X.reshape(b, c, h // p, p, w // p, p)

    def flat(P):
        return P.reshape(P.shape[0], P.shape[1] * P.shape[2], -1)

    cases = [
        (lambda X, p: X.reshape(X.shape[0], -1, X.shape[1] * p * p), "reshaped without permuting"),
        (lambda X, p: flat(grid(X, p).permute(0, 4, 2, 1, 3, 5)), "the patches are in column"),
        (lambda X, p: flat(grid(X, p).permute(0, 2, 4, 3, 5, 1)), "channels last"),
        (lambda X, p: flat(grid(X, p).permute(0, 2, 4, 1, 5, 3)), "each patch is transposed"),
        (lambda X, p: patchify(X, p)[:, 1:], "shape: expected"),
        (lambda X, p: patchify(X, p) * 2, "values differ first at position (0, 0, 0)"),
    ]
    for wrong, hint in cases:
        assert not check_patchify(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


def test_cls_attention_map_pass_and_hints(capsys):
    assert check_cls_attention_map(cls_attention_map, seed=0)
    assert capsys.readouterr().out.startswith("pass: cls_attention_map matches")

    def shaped(row, weights, grid_size):
        return row.reshape(*weights.shape[:2], *grid_size)

    cases = [
        (lambda W, g: shaped(W[:, :, 1:, 0], W, g), "that is column 0"),
        (lambda W, g: shaped(W[:, :, 0, :-1], W, g), "off by one: key 0 is <cls>"),
        (
            lambda W, g: W[:, :, 0, 1:].reshape(*W.shape[:2], g[1], g[0]).transpose(-1, -2),
            "the grid is filled in column order",
        ),
        (lambda W, g: W[:, :, 0, 1:].reshape(*W.shape[:2], g[1], g[0]), "shape: expected"),
        (lambda W, g: cls_attention_map(W, g).softmax(-1), "values differ first"),
    ]
    for wrong, hint in cases:
        assert not check_cls_attention_map(wrong, seed=0)
        out = capsys.readouterr().out
        assert hint in out, out


# ----------------------------------------------------------------------------- the chapter's
# variables: 8x8 images of one channel, 2x2 patches, a 4x4 grid of 16 patches, 4 heads.

batch, channels, img_size, p, grid, heads = 5, 1, 8, 2, 4, 4
m = grid * grid


def test_a_patchify_hard_wired_to_the_chapter_fails(capsys):
    def patchify(X, patch_size):
        P = X.reshape(batch, channels, grid, p, grid, p).permute(0, 2, 4, 1, 3, 5)
        return P.reshape(batch, m, channels * p * p)

    for seed in range(3):  # other shapes for every seed: it fails every time
        assert not check_patchify(patchify, seed=seed)
        assert "pass" not in capsys.readouterr().out


def test_a_cls_map_hard_wired_to_the_chapter_fails(capsys):
    def cls_attention_map(weights, grid_size):
        return weights[:, :, 0, 1:].reshape(weights.shape[0], heads, grid, grid)

    for seed in range(3):
        assert not check_cls_attention_map(cls_attention_map, seed=seed)
        assert "pass" not in capsys.readouterr().out


def test_shapes_vary_and_are_never_the_chapters():
    seen = []

    def spy(X, patch_size):
        seen.append((tuple(X.shape), patch_size))
        return patchify(X, patch_size)

    for seed in range(4):
        assert check_patchify(spy, seed=seed)
    assert len(set(seen)) > 1
    assert all(shape[1] > 1 and shape[2] != shape[3] and q != p for shape, q in seen)
