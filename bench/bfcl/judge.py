"""BFCL's own data and checker, from the `bfcl-eval` package in bench/.bfcl-venv.

`bfcl_eval.eval_checker.ast_eval.ast_checker` imports `bfcl_eval.constants.model_config`, which imports
every model handler BFCL ships (the SDKs of a dozen vendors). The checker reads that table only to learn
whether a model's function names had their dots replaced (`convert_func_name`); the bench hands it the
original, dotted names, so a stand-in table that says "no" to every model is put in its place before the
import. The checker's code, the question files and the possible answers are BFCL's, unchanged.
"""

from __future__ import annotations

import copy
import os
import sys
import tempfile
import types
from dataclasses import dataclass
from typing import Any

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
MODEL_NAME = "mini-agent-bench"  # only looked up in the stand-in table


@dataclass(frozen=True)
class _NoDotRenaming:
    underscore_to_dot: bool = False


class _AnyModel(dict[str, _NoDotRenaming]):
    def __missing__(self, key: str) -> _NoDotRenaming:
        return _NoDotRenaming()


def _import_bfcl() -> None:
    # BFCL keeps lock files (and would keep results) beside the package unless told otherwise
    os.environ.setdefault("BFCL_PROJECT_ROOT", os.path.join(tempfile.gettempdir(), "mini-agent-bfcl"))
    if "bfcl_eval.constants.model_config" not in sys.modules:
        stand_in = types.ModuleType("bfcl_eval.constants.model_config")
        stand_in.MODEL_CONFIG_MAPPING = _AnyModel()  # type: ignore[attr-defined]
        sys.modules[stand_in.__name__] = stand_in


_import_bfcl()

from bfcl_eval.constants.enums import Language  # noqa: E402
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker  # noqa: E402
from bfcl_eval.utils import (  # noqa: E402
    is_empty_output,
    is_function_calling_format_output,
    load_dataset_entry,
    load_ground_truth_entry,
)

Decoded = list[dict[str, Any]]  # BFCL's decoded model output: [{function name: {param: value}}]


def load(category: str) -> list[dict[str, Any]]:
    """The category's questions, as BFCL prepares them for a run (its Python hint in each description),
    each with its `possible_answer` (none for irrelevance)."""
    entries = load_dataset_entry(category)
    if category == "irrelevance":
        return [dict(entry) for entry in entries]
    answers = {answer["id"]: answer["ground_truth"] for answer in load_ground_truth_entry(category)}
    return [{**entry, "possible_answer": answers[entry["id"]]} for entry in entries]


def judge(entry: dict[str, Any], category: str, decoded: Decoded | None) -> tuple[bool, str]:
    """BFCL's verdict on one first turn. `decoded` None: the calls did not decode (BFCL's decode_ast
    raised), which fails an AST category and counts as "no call" for irrelevance, as BFCL does."""
    if category == "irrelevance":  # eval_runner._evaluate_single_relevance_entry
        if decoded is None or is_empty_output(decoded):
            return True, ""
        return False, "irrelevance_error:decoder_success (a function was called)"
    if decoded is None:
        return False, "ast_decoder:decoder_failed"
    if not is_function_calling_format_output(decoded):
        return False, "ast_decoder:decoder_wrong_output_format"
    try:
        result = ast_checker(copy.deepcopy(entry["function"]), copy.deepcopy(decoded),
                             copy.deepcopy(entry["possible_answer"]), Language.PYTHON, category, MODEL_NAME)
    except Exception as error:  # the checker's own failure is a failed question, said so
        return False, f"checker raised {type(error).__name__}: {error}"
    if result["valid"]:
        return True, ""
    return False, f"{result.get('error_type', '?')}: {'; '.join(map(str, result.get('error', [])))}"
