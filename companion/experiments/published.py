"""Published numbers that the language-model and pretraining chapters plot (sec-language-models,
sec-pretraining), each quoted from its paper with the table or equation it comes from. Nothing
here is measured by the book.

- **T5** (Raffel et al., 2020, JMLR 21(140)): GLUE average scores of pre-training objectives,
  all with the same encoder-decoder baseline and the same compute. Table 4 compares the three
  families (prefix language modelling, BERT-style denoising, deshuffling), Table 5 variants of
  the BERT-style objective, Table 6 corruption rates of the i.i.d. span objective; Table 1
  gives the baseline with and without pre-training, and the standard deviation of the
  baseline's GLUE average over ten runs.
- **Kaplan et al. (2020)**, "Scaling laws for neural language models", Section 1.2, equations
  (1.1) and (1.2): the test loss (nats per token) as a power law of the number of
  non-embedding parameters ``N`` (trained to convergence on enough data) and of the number of
  tokens ``D`` (a large model, early-stopped). The fits were made for ``N`` from 768 to 1.5
  billion and ``D`` from 22 million to 23 billion tokens; :data:`KAPLAN_RANGES` holds those.
- **Hoffmann et al. (2022)**, "Training compute-optimal large language models", Table 2: the
  exponents ``a`` and ``b`` of the compute-optimal model size ``N_opt ~ C^a`` and number of
  tokens ``D_opt ~ C^b`` for a compute budget ``C``, by each of their three approaches and as
  Kaplan et al. had them; Table 3: the compute-optimal number of training tokens for each model
  size (their Approach 1).
"""

from __future__ import annotations

# Raffel et al. (2020), GLUE average, Tables 4, 5 and 6 (the baseline objective: i.i.d.
# corruption of 15% of the tokens, spans replaced by sentinels, 83.28).
T5_OBJECTIVES_GLUE = {
    "prefix LM": 80.69,  # Table 4
    "deshuffling": 73.17,  # Table 4
    "BERT-style": 82.96,  # Tables 4 and 5
    "MASS-style": 82.32,  # Table 5
    "replace spans": 83.28,  # Table 5 (the T5 baseline)
    "drop tokens": 84.44,  # Table 5
}
T5_CORRUPTION_RATE_GLUE = {0.10: 82.82, 0.15: 83.28, 0.25: 83.00, 0.50: 81.27}  # Table 6
T5_NO_PRETRAINING_GLUE = 66.22  # Table 1: the baseline trained on each task from scratch
T5_BASELINE_GLUE_SD = 0.235  # Table 1: standard deviation of the baseline over ten runs

# Kaplan et al. (2020), equations (1.1) and (1.2): L(N) = (N_c / N)^alpha_N,
# L(D) = (D_c / D)^alpha_D, in nats per token.
KAPLAN_N = {"alpha": 0.076, "critical": 8.8e13}  # N: non-embedding parameters
KAPLAN_D = {"alpha": 0.095, "critical": 5.4e13}  # D: tokens
KAPLAN_RANGES = {"N": (768, 1.5e9), "D": (22e6, 23e9)}  # the ranges the laws were fitted on

# Hoffmann et al. (2022), Table 2: (a, b) with N_opt ~ C^a and D_opt ~ C^b.
CHINCHILLA_EXPONENTS = {
    "Approach 1 (minimum over training curves)": (0.50, 0.50),
    "Approach 2 (IsoFLOP profiles)": (0.49, 0.51),
    "Approach 3 (parametric fit of the loss)": (0.46, 0.54),
    "Kaplan et al. (2020)": (0.73, 0.27),
}

# Hoffmann et al. (2022), Table 3: (parameters, FLOPs, tokens) of compute-optimal training.
CHINCHILLA_OPTIMAL = [
    (400e6, 1.92e19, 8.0e9),
    (1e9, 1.21e20, 20.2e9),
    (10e9, 1.23e22, 205.1e9),
    (67e9, 5.76e23, 1.5e12),
    (175e9, 3.85e24, 3.7e12),
    (280e9, 9.90e24, 5.9e12),
    (520e9, 3.43e25, 11.0e12),
    (1e12, 1.27e26, 21.2e12),
    (10e12, 1.30e28, 216.2e12),
]


def kaplan_loss(size: float, law: dict[str, float]) -> float:
    """``(critical / size) ** alpha``: :data:`KAPLAN_N` for parameters, :data:`KAPLAN_D` for
    tokens (nats per token, on Kaplan et al.'s data and tokenizer)."""
    if size <= 0:
        raise ValueError(f"size must be positive; got {size}")
    return (law["critical"] / size) ** law["alpha"]
