"""The chapters' data, all generated in code or shipped with companion, nothing downloaded: the
synthetic tasks (``tasks``: dates, the invented language, symbol tasks, digits, pretraining
data, and their splits), vocabularies and batches (``text``), the tokenization chapter's texts
(``corpus``) and the attention-pooling chapter's regression data (``regression``).

Data may use a model's constants (BERT's special tokens) but never the training loop: a task
hands the loop its batches and its loss, and the loop knows no task.
"""
