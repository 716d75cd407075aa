"""The context budget's token estimate against a real model's tokenizer."""

from __future__ import annotations

import pytest

from ..support.corpus import under
from ..support.llama import model_file


@pytest.mark.real_model
def test_the_estimate_is_never_under_a_real_models_tokenizer() -> None:
    """SmolLM2's byte-level BPE vocabulary (the GGUF of the real-model tests), through llama.cpp."""
    import llama_cpp

    model = llama_cpp.Llama(str(model_file()), n_ctx=64, verbose=False)

    def count(text: str) -> int:
        return len(model.tokenize(text.encode(), add_bos=False, special=False))

    assert under(count) == []
