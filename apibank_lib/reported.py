"""Figures reported by the API-Bank paper (EMNLP 2023 version, arXiv 2304.08244).

These fill the "reported" rows and columns beside our measurements; every table
that shows them labels them as the paper's. Counts computed from the official
release (for comparison with ``apibank stats --data <release>``) are in
:data:`OFFICIAL_RELEASE_COUNTS`.
"""

from __future__ import annotations

__all__ = ["PAPER_CORPUS", "PAPER_MAIN_RESULTS", "PAPER_ERROR_DISTRIBUTION", "PAPER_TOOLALPACA", "OFFICIAL_RELEASE_COUNTS", "SOURCE"]

SOURCE = "API-Bank paper (Li et al., EMNLP 2023, arXiv 2304.08244)"

PAPER_CORPUS: dict[str, dict[str, float | int | str]] = {
    "evaluation": {
        "domains": 8,
        "apis": 73,
        "dialogues": 314,
        "turns": 914,
        "avg_turns_per_dialogue": 2.91,
        "call_dialogues": 214,
        "retrieve_call_dialogues": 50,
        "plan_retrieve_call_dialogues": 50,
        "single_call_instances": 363,
        "multi_call_instances": 122,
        "api_calls": 753,
    },
    "training": {
        "domains": 1000,
        "apis": 2138,
        "dialogues": 1888,
        "turns": 5221,
        "avg_turns_per_dialogue": 2.76,
        "call_dialogues": 720,
        "retrieve_call_dialogues": 719,
        "plan_retrieve_call_dialogues": 449,
        "single_call_instances": 3147,
        "multi_call_instances": 493,
    },
}
"""The paper's corpus statistics table."""

PAPER_MAIN_RESULTS: dict[str, dict[str, float]] = {
    # model: Call acc, Call ROUGE-L, Ret+Call acc, Ret+Call ROUGE-L, Plan+Ret+Call acc, Plan ROUGE-L, Total acc, Total ROUGE-L
    "Alpaca-7B": {"l1_acc": 24.06, "l1_rouge": 0.0204, "l2_acc": 5.19, "l2_rouge": 0.0019, "l3_acc": 0.00, "l3_rouge": 0.086, "total_acc": 15.19, "total_rouge": 0.0318},
    "ChatGLM-6B": {"l1_acc": 23.62, "l1_rouge": 0.2451, "l2_acc": 13.33, "l2_rouge": 0.2173, "l3_acc": 0.00, "l3_rouge": 0.1522, "total_acc": 16.42, "total_rouge": 0.2191},
    "GPT-3 Davinci": {"l1_acc": 0.50, "l1_rouge": 0.1035, "l2_acc": 1.48, "l2_rouge": 0.091, "l3_acc": 0.00, "l3_rouge": 0.0156, "total_acc": 0.57, "total_rouge": 0.0814},
    "GPT-3.5-turbo": {"l1_acc": 59.40, "l1_rouge": 0.4598, "l2_acc": 38.52, "l2_rouge": 0.3758, "l3_acc": 22.00, "l3_rouge": 0.3809, "total_acc": 47.16, "total_rouge": 0.4267},
    "GPT-4": {"l1_acc": 63.66, "l1_rouge": 0.3691, "l2_acc": 37.04, "l2_rouge": 0.351, "l3_acc": 70.00, "l3_rouge": 0.4808, "total_acc": 60.24, "total_rouge": 0.3910},
    "Lynx-7B": {"l1_acc": 49.87, "l1_rouge": 0.4332, "l2_acc": 30.37, "l2_rouge": 0.2503, "l3_acc": 20.00, "l3_rouge": 0.3425, "total_acc": 39.58, "total_rouge": 0.3794},
}
"""The paper's main table: API-call accuracy (%) and ROUGE-L per ability."""

PAPER_ERROR_DISTRIBUTION: dict[str, dict[str, float | None]] = {
    "No API Call": {"Alpaca-7B": 36.77, "Lynx-7B": 5.29, "GPT-4": None},
    "API Hallucination": {"Alpaca-7B": 15.93, "Lynx-7B": 61.38, "GPT-4": None},
    "Invalid Input Parameters": {"Alpaca-7B": 7.96, "Lynx-7B": 8.47, "GPT-4": 7.14},
    "False API Call Format": {"Alpaca-7B": 23.65, "Lynx-7B": 6.88, "GPT-4": 17.86},
    "Missing Input Parameters": {"Alpaca-7B": 1.17, "Lynx-7B": 1.59, "GPT-4": 7.14},
    "Has Exception": {"Alpaca-7B": None, "Lynx-7B": 16.40, "GPT-4": None},
    "Failed API Retrieval": {"Alpaca-7B": None, "Lynx-7B": None, "GPT-4": 67.86},
}
"""Share (%) of each model's errors per category; None = not listed by the paper."""

PAPER_TOOLALPACA: dict[str, dict[str, float | int]] = {
    "Alpaca fine-tuned on ToolAlpaca (converted)": {"training_samples": 10366, "accuracy": 53.88, "rouge_l": 39.75},
    "Lynx": {"training_samples": 6184, "accuracy": 54.64, "rouge_l": 39.80},
}
"""The paper's ToolAlpaca comparison (Call ability only)."""

OFFICIAL_RELEASE_COUNTS: dict[str, dict[str, int]] = {
    "1": {"dialogues": 214, "gold_calls": 389, "api_call_samples": 399, "duplicate_api_samples": 10, "response_samples": 375, "user_turns": 748},
    "2": {"dialogues": 50, "gold_calls": 119, "api_call_samples": 135, "duplicate_api_samples": 16, "response_samples": 103, "user_turns": 116},
    "3": {"dialogues": 50, "gold_calls": 245, "api_call_samples": 245, "duplicate_api_samples": 0, "response_samples": 50, "user_turns": 50},
}
"""Counts of the official release computed with the original cutter (duplicate samples included; "user_turns" counts user utterances)."""
