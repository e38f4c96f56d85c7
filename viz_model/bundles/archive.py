"""A model as one .zip file a student takes home: the model card's "Download this model".

    data = model_zip(bundle)     # bytes of a zip: <name>/ and, for GPT-2's shape, <name>-transformers/

Inside, under one top folder named after the model (and the step, for a snapshot):
- `<name>/`: our bundle (config.json, model.safetensors, tokenizer.json, history.json), which
  `load_bundle(folder)` opens in a notebook and the app shows when put in its runs folder;
- `<name>-transformers/`: the same weights as a GPT-2 folder (hf_export.py) that
  `transformers.AutoModelForCausalLM.from_pretrained(folder)` opens, only when the architecture is
  GPT-2's; README.txt says why not otherwise.

The weights are those of `bundle.model` as given: a snapshot's when the bundle is one (its step in
the folder name), never the snapshots themselves, so the file stays the size of one model.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

from viz_model.bundles.checkpoint import Bundle, save_bundle
from viz_model.bundles.hf_export import export_gpt2, why_not_gpt2


def archive_name(bundle: Bundle) -> str:
    """The zip's folder name: "shakespeare-char", or "shakespeare-char-step-1170" for a snapshot."""
    return bundle.name if bundle.step is None else f"{bundle.name}-step-{bundle.step}"


def readme(bundle: Bundle) -> str:
    """README.txt: what each folder is and how to open it (plain text, no user text but the name)."""
    name = archive_name(bundle)
    why_not = why_not_gpt2(bundle.config)
    lines = [
        f"{name}: a model from the app Inside a GPT (viz-gpt).",
        "",
        f"{name}/ is the model as the app keeps it. In Python, with viz-gpt installed:",
        "    from viz_model import load_bundle",
        f'    bundle = load_bundle("{name}")   # the path of this folder',
        '    print(bundle.generate("ROMEO:", 40))',
        "Put the folder in the app's runs folder and it appears in the model picker.",
        "",
    ]
    if why_not is None:
        lines += [
            f"{name}-transformers/ holds the same weights as a GPT-2 model for Hugging Face",
            "transformers:",
            "    from transformers import AutoModelForCausalLM, AutoTokenizer",
            f'    model = AutoModelForCausalLM.from_pretrained("{name}-transformers")',
            f'    tokenizer = AutoTokenizer.from_pretrained("{name}-transformers")',
        ]
    else:
        lines.append(f"There is no transformers folder: {why_not}.")
    return "\n".join(lines) + "\n"


def model_zip(bundle: Bundle) -> bytes:
    """The zip described above, as bytes (built in a temporary folder, nothing left behind)."""
    name = archive_name(bundle)
    with tempfile.TemporaryDirectory(prefix="viz-gpt-zip-") as tmp:
        root = Path(tmp) / name
        save_bundle(
            root / name,
            bundle.model,
            bundle.tokenizer,
            train_config=bundle.train_config,
            history=bundle.history,
            meta=bundle.meta,
        )
        if why_not_gpt2(bundle.config) is None:
            export_gpt2(bundle, root / f"{name}-transformers")
        (root / "README.txt").write_text(readme(bundle), encoding="utf-8")
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(tmp).as_posix())
    return buffer.getvalue()
