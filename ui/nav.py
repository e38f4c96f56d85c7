"""The lesson's page registry: which pages exist, in which section, and how the sidebar names them.

Pages are served by Streamlit's own `pages/` routing (`pages/3_Attention.py` -> `/Attention`); this
list only orders and describes them. Only entries whose file exists are shown: no placeholders.
Add a page here when its file lands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Page:
    file: str  # relative to the repo root, e.g. "pages/3_Attention.py"
    label: str
    icon: str  # a Material icon (":material/home:"): emoji fonts are missing on some machines
    description: str
    section: str = ""

    @property
    def url_path(self) -> str:
        """The path Streamlit serves the page at: "pages/4_Residual_stream.py" -> "Residual_stream"."""
        return re.sub(r"^\d+_", "", Path(self.file).stem)

    def exists(self, root: Path = ROOT) -> bool:
        return (root / self.file).is_file()


HOME = Page("app.py", "Home", ":material/home:", "What the app is for, and the model at a glance.")

SECTIONS: dict[str, list[Page]] = {
    "Text to tokens": [
        Page(
            "pages/1_Tokenization.py",
            "Tokenization",
            ":material/text_fields:",
            "How text becomes a list of token ids, and how BPE merges build the vocabulary.",
        ),
        Page(
            "pages/2_Embeddings.py",
            "Embeddings & positions",
            ":material/scatter_plot:",
            "Each token id looks up a vector; a position vector is added to it.",
        ),
    ],
    "Inside the model": [
        Page(
            "pages/3_Attention.py",
            "Attention",
            ":material/visibility:",
            "Which earlier tokens each token looks at, head by head, with the arithmetic behind it.",
        ),
        Page(
            "pages/4_Residual_stream.py",
            "Residual stream",
            ":material/stacked_line_chart:",
            "What every layer adds to the running sum, and what the model would predict at each layer.",
        ),
        Page(
            "pages/5_LayerNorm.py",
            "LayerNorm",
            ":material/straighten:",
            "How each vector is centred and rescaled before attention and the MLP read it.",
        ),
        Page(
            "pages/6_MLP_neurons.py",
            "MLP neurons",
            ":material/hub:",
            "Which neurons fire on which tokens, and what they write back.",
        ),
    ],
    "Output": [
        Page(
            "pages/7_Next_token.py",
            "Next token",
            ":material/casino:",
            "The probability of every possible next token, and how temperature, top-k and top-p reshape it.",
        ),
        Page(
            "pages/8_Generation.py",
            "Generation",
            ":material/edit_note:",
            "Write text one token at a time, see each choice, and override it.",
        ),
    ],
    "Training": [
        Page(
            "pages/9_Training.py",
            "Training",
            ":material/model_training:",
            "Train a model on this server and watch it learn; see how any model trained.",
        ),
    ],
    "Before transformers": [
        Page(
            "pages/10_N-grams.py",
            "N-grams (Shannon)",
            ":material/format_quote:",
            "Language models made by counting: Shannon's approximations, sparsity, perplexity.",
        ),
    ],
    "Experiments": [
        Page(
            "pages/11_Interventions.py",
            "Interventions",
            ":material/content_cut:",
            "Ablate heads, patch activations, steer generation, scramble positions: see what breaks.",
        ),
        Page(
            "pages/12_Training_dynamics.py",
            "Training dynamics",
            ":material/timeline:",
            "Each head's role against training step: whether, and when, copying is learned.",
        ),
        Page(
            "pages/13_Compare_models.py",
            "Compare models",
            ":material/compare_arrows:",
            "Two models on one prompt: tokens, bits per character, next token, attention, training.",
        ),
        Page(
            "pages/15_Architecture_contrasts.py",
            "Architecture contrasts",
            ":material/difference:",
            "Tiny models that differ in one choice: causal mask, layers, LayerNorm, positions, tying.",
        ),
        Page(
            "pages/16_Scaling.py",
            "Scaling",
            ":material/trending_down:",
            "Loss against parameters and compute, log-log: a power law, 12 L d², GPT-2 and GPT-3.",
        ),
        Page(
            "pages/14_Inside_a_block.py",
            "Inside a block",
            ":material/biotech:",
            "One token through a block step by step; circuits, probes and one gradient step.",
        ),
    ],
}


def all_pages() -> list[Page]:
    """Every registered page (existing or not), in lesson order, each knowing its section."""
    return [
        Page(p.file, p.label, p.icon, p.description, section)
        for section, pages in SECTIONS.items()
        for p in pages
    ]


def available_pages(root: Path = ROOT) -> list[Page]:
    """The registered pages whose file exists, in lesson order (Home not included)."""
    return [p for p in all_pages() if p.exists(root)]


def available_sections(root: Path = ROOT) -> dict[str, list[Page]]:
    """Section -> its existing pages; sections with none are left out."""
    out: dict[str, list[Page]] = {}
    for page in available_pages(root):
        out.setdefault(page.section, []).append(page)
    return out
