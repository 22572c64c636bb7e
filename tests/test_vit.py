"""The Vision Transformer (sec-vit): d2l's names and shapes, patch embedding as a per-patch
linear map, errors, mean attention distance, the CNN baseline and the digits splits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from companion.data.tasks.digits import ImageSet, digit_splits, stratified_subset
from companion.experiments.recipes.vit import DigitsRecipe, classification_accuracy
from companion.layers.attention import record_attention
from companion.models.cnn import SmallCNN
from companion.models.vit import PatchEmbedding, ViT, ViTBlock, ViTMLP, mean_attention_distance


def make_vit(seed: int = 0, **options) -> ViT:
    torch.manual_seed(seed)
    settings = dict(
        img_size=8,
        patch_size=2,
        num_hiddens=16,
        mlp_num_hiddens=24,
        num_heads=4,
        num_blks=2,
        emb_dropout=0.1,
        blk_dropout=0.1,
    )
    settings.update(options)
    return ViT(**settings).eval()


def test_patch_embedding_defaults_and_shapes():
    layer = PatchEmbedding()  # d2l's defaults: 96x96 images, 16x16 patches, 512 features
    assert layer.num_patches == 36
    X = torch.zeros(2, 3, 96, 96)
    assert layer(X).shape == (2, 36, 512)
    rect = PatchEmbedding((6, 8), (3, 2), 5, in_channels=2)
    assert rect.grid_size == (2, 4)
    assert rect(torch.randn(3, 2, 6, 8)).shape == (3, 8, 5)


@pytest.mark.parametrize("img, patch, channels", [(8, 2, 1), (12, 4, 3), ((6, 9), (2, 3), 2)])
def test_patch_embedding_is_a_linear_map_of_each_patch(img, patch, channels):
    """Token i = W vec(patch i) + b, patches read row by row (unfold + matmul)."""
    torch.manual_seed(1)
    layer = PatchEmbedding(img, patch, 7, in_channels=channels)
    X = torch.randn(3, channels, *layer.img_size)
    patches = nn.functional.unfold(X, kernel_size=layer.patch_size, stride=layer.patch_size)
    patches = patches.transpose(1, 2)  # (batch, m, c p_h p_w), row-major over the grid
    W = layer.conv.weight.reshape(7, -1)  # (num_hiddens, c p_h p_w)
    expected = patches @ W.T + layer.conv.bias
    torch.testing.assert_close(layer(X), expected, atol=1e-5, rtol=1e-5)
    # Token 1 is the patch right of token 0: the top row of the grid comes first.
    p_h, p_w = layer.patch_size
    first_two = [X[:, :, :p_h, k * p_w : (k + 1) * p_w].reshape(3, -1) for k in (0, 1)]
    torch.testing.assert_close(layer(X)[:, :2], torch.stack(first_two, 1) @ W.T + layer.conv.bias)


def test_patch_embedding_errors():
    with pytest.raises(ValueError, match=r"img_size \(8, 8\) must be divisible by patch_size"):
        PatchEmbedding(8, 3, 4)
    layer = PatchEmbedding(8, 2, 4, in_channels=1)
    with pytest.raises(ValueError, match=r"X must be images of shape \(batch, 1, 8, 8\); got "):
        layer(torch.zeros(2, 1, 8, 6))
    with pytest.raises(ValueError, match=r"\(batch, 1, 8, 8\); got shape \(2, 3, 8, 8\)"):
        layer(torch.zeros(2, 3, 8, 8))
    with pytest.raises(ValueError, match=r"got shape \(1, 8, 8\)"):
        layer(torch.zeros(1, 8, 8))
    lazy = PatchEmbedding(8, 2, 4)
    with pytest.raises(ValueError, match=r"\(batch, channels, 8, 8\); got shape \(2, 3, 8, 9\)"):
        lazy(torch.zeros(2, 3, 8, 9))


def test_vit_parameter_names_follow_d2l():
    model = make_vit(use_bias=True)
    names = set(model.state_dict())
    for name in [
        "cls_token",
        "pos_embedding",
        "patch_embedding.conv.weight",
        "patch_embedding.conv.bias",
        "blks.0.ln1.weight",
        "blks.0.attention.W_q.weight",
        "blks.0.attention.W_q.bias",
        "blks.0.attention.W_o.weight",
        "blks.0.ln2.bias",
        "blks.0.mlp.dense1.weight",
        "blks.1.mlp.dense2.bias",
        "head.0.weight",
        "head.1.weight",
        "head.1.bias",
    ]:
        assert name in names, name
    assert model.cls_token.shape == (1, 1, 16)
    assert model.pos_embedding.shape == (1, 17, 16)  # 16 patches and <cls>
    assert isinstance(model.dropout, nn.Dropout) and len(model.blks) == 2
    assert model.lr == 0.1  # d2l's default, kept


def test_vit_output_shape_and_lazy_channels():
    model = make_vit(num_classes=7)
    assert model(torch.randn(5, 3, 8, 8)).shape == (5, 7)
    fixed = make_vit(in_channels=1)
    assert fixed(torch.randn(4, 1, 8, 8)).shape == (4, 10)
    with pytest.raises(ValueError, match=r"got shape \(4, 1, 6, 6\)"):
        fixed(torch.randn(4, 1, 6, 6))


def test_vit_classifies_from_the_cls_token_only():
    """Changing no pixel changes nothing; the head reads position 0 after the blocks."""
    model = make_vit(in_channels=1)
    X = torch.randn(3, 1, 8, 8)
    captured = {}
    model.head.register_forward_hook(lambda m, args, out: captured.update(x=args[0]))
    logits = model(X)
    H = model.dropout(
        torch.cat((model.cls_token.expand(3, -1, -1), model.patch_embedding(X)), 1)
        + model.pos_embedding
    )
    H = model.blks(H)
    torch.testing.assert_close(captured["x"], H[:, 0])
    torch.testing.assert_close(logits, model.head(H[:, 0]))


def test_vit_positions_matter_and_images_are_not_mixed():
    model = make_vit(in_channels=1)
    X = torch.randn(4, 1, 8, 8)
    full = model(X)
    torch.testing.assert_close(model(X[2:3]), full[2:3], atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        model.pos_embedding.zero_()
    swapped = X.clone()  # the two top-left patches exchanged
    swapped[..., :2, :2], swapped[..., :2, 2:4] = X[..., :2, 2:4], X[..., :2, :2]
    # Without positions, self-attention cannot tell the order of the patches.
    torch.testing.assert_close(model(swapped), model(X), atol=1e-5, rtol=1e-5)


def test_vit_attention_weights_and_block_errors():
    model = make_vit(in_channels=1)
    with record_attention(model):
        model(torch.randn(3, 1, 8, 8))
    weights = model.attention_weights
    assert len(weights) == 2 and weights[0].shape == (3, 4, 17, 17)
    torch.testing.assert_close(weights[1].sum(-1), torch.ones(3, 4, 17))
    with pytest.raises(ValueError):
        make_vit(num_blks=0)
    with pytest.raises(ValueError):
        make_vit(emb_dropout=1.5)
    blk = ViTBlock(16, 16, 24, 4, 0.0)
    with pytest.raises(ValueError, match="16"):
        blk(torch.randn(2, 5, 12))


def test_vit_block_is_pre_norm():
    """X + Attention(LN_1 X) then + MLP(LN_2 X): zeroing both sublayers' outputs is identity."""
    torch.manual_seed(0)
    blk = ViTBlock(8, 8, 12, 2, 0.0).eval()
    X = torch.randn(2, 5, 8) * 10
    Y = blk.ln1(X)
    H = X + blk.attention(Y, Y, Y)  # self-attention, not causal unless told
    torch.testing.assert_close(blk(X), H + blk.mlp(blk.ln2(H)))
    with torch.no_grad():
        blk.attention.W_o.weight.zero_()
        blk.mlp.dense2.weight.zero_()
        blk.mlp.dense2.bias.zero_()
    torch.testing.assert_close(blk(X), X)


def test_vit_mlp_shapes_and_gelu():
    mlp = ViTMLP(12, 5, 0.0, num_inputs=7)
    X = torch.randn(2, 3, 7)
    assert mlp(X).shape == (2, 3, 5)
    expected = mlp.dense2(nn.functional.gelu(mlp.dense1(X)))
    torch.testing.assert_close(mlp(X), expected)
    assert ViTMLP(6, 4)(torch.randn(2, 9)).shape == (2, 4)  # lazy, as in d2l


def test_mean_attention_distance_on_hand_made_maps():
    grid, patch = (2, 3), 4  # 6 patches, centres 4 pixels apart
    m = 6
    weights = torch.zeros(1, 3, 1 + m, 1 + m)
    weights[0, 0, :, 0] = 1.0  # head 0: everything on <cls>, the rest renormalised away
    weights[0, 0, 1:, 1:] += torch.eye(m)  # ... and each patch on itself
    for i in range(m):  # head 1: each patch on its right (or left) neighbour
        row, col = divmod(i, 3)
        j = row * 3 + (col + 1 if col < 2 else col - 1)
        weights[0, 1, 1 + i, 1 + j] = 1.0
    weights[0, 2, 1:, 1:] = 1.0 / m  # head 2: uniform over the patches
    weights[0, 1:, 0, 1:] = 1.0 / m
    got = mean_attention_distance(weights, grid, patch)
    centres = torch.tensor([[r * 4.0, c * 4.0] for r in range(2) for c in range(3)])
    uniform = torch.cdist(centres, centres).mean()
    torch.testing.assert_close(got, torch.stack([torch.tensor(0.0), torch.tensor(4.0), uniform]))
    with pytest.raises(ValueError, match=r"m = 6 patches of a 2x3 grid; got shape \(1, 3, 6, 6\)"):
        mean_attention_distance(weights[..., 1:, 1:], grid, patch)


def test_small_cnn_shapes_size_and_errors():
    torch.manual_seed(0)
    cnn = SmallCNN((32, 64))
    assert cnn(torch.randn(5, 1, 8, 8)).shape == (5, 10)
    conv_params = (1 * 9 + 1) * 32 + (32 * 9 + 1) * 64 + 64 * 10 + 10
    assert sum(p.numel() for p in cnn.parameters()) == conv_params
    vit = ViT(8, 2, 32, 64, 4, 2, 0.0, 0.0, in_channels=1)
    vit_params = sum(p.numel() for p in vit.parameters())
    assert 0.75 < conv_params / vit_params < 1.33  # the chapter's fair comparison
    with pytest.raises(ValueError, match=r"\(batch, 1, h, w\) with h and w divisible by 4"):
        cnn(torch.randn(2, 1, 6, 6))
    with pytest.raises(ValueError, match=r"got shape \(2, 3, 8, 8\)"):
        cnn(torch.randn(2, 3, 8, 8))


def fake_digits(n_per_class: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(10), n_per_class + np.arange(10))  # unequal classes
    images = rng.integers(0, 17, size=(len(labels), 8, 8))
    return images, labels


def test_digit_splits_sizes_stratification_and_scale():
    images, labels = fake_digits()
    splits = digit_splits(images, labels, seed=3)
    counts = np.bincount(labels)
    for name, fraction in (("val", 0.1), ("test", 0.2)):
        got = np.bincount(getattr(splits, name).labels.numpy(), minlength=10)
        assert (got == np.round(fraction * counts)).all(), name
    sizes = [len(s.labels) for s in splits]
    assert sum(sizes) == len(labels)
    assert splits.train.images.shape == (sizes[0], 1, 8, 8)
    assert 0 <= splits.train.images.min() and splits.train.images.max() <= 1
    # No image in two sets: every row of the input appears exactly once.
    flat = torch.cat([s.images.reshape(len(s.labels), -1) for s in splits]) * 16
    assert torch.equal(flat.round().sum(0), torch.as_tensor(images.reshape(-1, 64).sum(0)).float())
    again = digit_splits(images.reshape(-1, 64), labels, seed=3)
    assert torch.equal(again.test.images, splits.test.images)
    other = digit_splits(images, labels, seed=4)
    assert not torch.equal(other.test.images, splits.test.images)
    with pytest.raises(ValueError, match=r"got images \(5, 7\)"):
        digit_splits(np.zeros((5, 7)), np.zeros(5))
    with pytest.raises(ValueError, match="test_fraction"):
        digit_splits(images, labels, test_fraction=0.6)


def test_stratified_subset_keeps_proportions():
    images, labels = fake_digits()
    train = digit_splits(images, labels).train
    quarter = stratified_subset(train, 0.25)
    counts = np.bincount(train.labels.numpy())
    assert (np.bincount(quarter.labels.numpy()) == np.maximum(1, np.round(counts / 4))).all()
    assert len(stratified_subset(train, 1.0).labels) == len(train.labels)
    with pytest.raises(ValueError, match="fraction"):
        stratified_subset(train, 0.0)


def test_accuracy_counts_correct_answers():
    data = ImageSet(torch.zeros(6, 1, 8, 8), torch.tensor([0, 1, 1, 2, 1, 0]))

    class Always(nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.tensor([0.0, 1.0, 0.0]))

        def forward(self, X):
            return self.bias.expand(len(X), 3)

    assert classification_accuracy(Always(), data, batch_size=4) == 0.5


def test_time_to_quality_stops_on_validation_and_scores_on_test_once(monkeypatch):
    """Three short epochs (the real recipe is a benchmark): training stops on the validation
    split, at the target two epochs in a row; the test split is evaluated once, after
    training, and gives the score."""
    from companion.data.tasks.digits import load_digit_splits
    from companion.experiments.recipes import TimeToQuality, vit

    recipe = DigitsRecipe(num_epochs=3, num_blks=1, target=0.3, epochs_at_target=2)
    monkeypatch.setattr(vit, "DigitsRecipe", lambda: recipe)
    splits = load_digit_splits(0)
    sizes = {len(splits.val.labels): "val", len(splits.test.labels): "test"}
    evaluated, accuracy = [], classification_accuracy

    def recorded(model, data, *args):
        evaluated.append((sizes[len(data.labels)], accuracy(model, data, *args)))
        return evaluated[-1][1]

    monkeypatch.setattr(vit, "classification_accuracy", recorded)
    result = vit.time_to_quality(seed=0, device=torch.device("cpu"))
    assert isinstance(result, TimeToQuality)
    assert 2 <= result.epochs <= 3 and result.seconds > 0
    assert [split for split, _ in evaluated] == ["val"] * result.epochs + ["test"]
    assert result.score == evaluated[-1][1]
    stopped_early = result.epochs == 2
    assert result.reached == (min(a for _, a in evaluated[-3:-1]) >= 0.3)
    assert result.reached or not stopped_early
    assert "1259 training images" in result.task
    assert result.target == "validation accuracy >= 0.3, 2 epochs in a row"
