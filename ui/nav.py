"""The lesson's page registry, and the app's navigation built from it with `st.navigation`.

Each entry names a page script in `pages/`, the URL it is served at, its section, label, icon and
one-line description, and whether it needs a prompt. `app.py` routes with `navigation()`, draws
the frame for `find(page.url_path)`, then runs the page. The navigation lists exactly these pages: a page
is added here when its file lands (tests check every file exists), never as a placeholder.

Why file names and URLs differ: with a folder named `pages/`, a fresh server hands its first
request to Streamlit's legacy `pages/` router when the path equals a file-derived one
(`pages/3_Attention.py` -> `/Attention`), and that page is drawn without the app's navigation or
sidebar. So files are lower case (`pages/03_attention.py` -> `/attention`, a path nobody links
to) and each page's url_path keeps the links the app has always had (`/Attention?layer=1`).
Streamlit matches paths case-sensitively, so the two never meet. What stays: that legacy router
still answers a process's very first request, and for a deep link it sends "Page not found", a
notice over the right page that left it inert until closed: `navigation()` closes it on that run.

Not here: drawing the sidebar and the page's context (ui/frame.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import streamlit as st

from ui import streamlit_internals as internals
from viz_model.model.recurrent_config import FAMILIES

if TYPE_CHECKING:
    from ui.streamlit_internals import StreamlitPage

_DECLARED = "_nav_pages"  # session-state key of this session's st.Page objects (_declared_pages)
ANY_FAMILY = FAMILIES  # pages that need only logits, a tokenizer or a training history


@dataclass(frozen=True)
class Page:
    file: str  # relative to the repo root, e.g. "pages/03_attention.py"
    url_path: str  # where it is served: "Attention" -> /Attention; "" for Home (/)
    label: str  # in the navigation, the heading and the browser tab
    icon: str  # a Material icon (":material/home:"): emoji fonts are missing on some machines
    description: str
    needs_prompt: bool = True  # without a prompt the frame says so and the page is not run
    heading: str = ""  # the page's title when it is not the label
    section: str = ""
    # The page's own URL keys (ui/state.py), besides the frame's model, prompt, train_step and quant:
    # what a lesson stop's view may set. tests/test_page_view_keys.py checks them against the page.
    view_keys: tuple[str, ...] = ()
    # The model families the page can show (viz_model/model/recurrent_config.FAMILIES). On a model
    # of another family the frame refuses the page in words, saying what of a transformer it
    # looks at (`needs`, e.g. "attention heads"), and links to the pages that can show it.
    families: tuple[str, ...] = ("gpt",)
    needs: str = ""
    # Why another family cannot be shown, when it has some of what `needs` names (an LSTM has
    # weight matrices and an embedding): a clause true of every family, "{model}" standing for
    # "an LSTM" and "{layers}" for "LSTM cells". Empty: the model has none of `needs`.
    why_not: str = ""
    # False for a page that draws other models than the sidebar's (Architecture contrasts): a
    # refusal does not offer it as "a page that shows this" model.
    shows_sidebar_model: bool = True

    @property
    def title(self) -> str:
        return self.heading or self.label

    @property
    def route(self) -> str:
        """The url_path st.Page gets. Home is served at / but still has one, and Streamlit knows
        a page by its hash: it must not be the file's own "home" either (see above)."""
        return self.url_path or self.label


HOME = Page(
    "pages/00_home.py",
    "",
    "Home",
    ":material/home:",
    "What the app is for, and the model at a glance.",
    needs_prompt=False,
    heading="Inside a GPT",
    families=ANY_FAMILY,
)

SECTIONS: dict[str, list[Page]] = {
    "Teach": [
        Page(
            "pages/17_lessons.py",
            "Lessons",
            "Lessons",
            ":material/school:",
            "Lecture paths through the app: predict, then reveal; presenter mode; exercise sheets.",
            needs_prompt=False,
            families=ANY_FAMILY,
        ),
        Page(
            "pages/18_class.py",
            "Class",
            "Live class",
            ":material/groups:",
            "Students follow the teacher's screen, answer questions live, and race on one leaderboard.",
            needs_prompt=False,
            families=ANY_FAMILY,
        ),
    ],
    "Text to tokens": [
        Page(
            "pages/01_tokenization.py",
            "Tokenization",
            "Tokenization",
            ":material/text_fields:",
            "How text becomes a list of token ids, and how BPE merges build the vocabulary.",
            view_keys=("vocab", "merge", "only_changes"),
            families=ANY_FAMILY,
        ),
        Page(
            "pages/02_embeddings.py",
            "Embeddings",
            "Embeddings & positions",
            ":material/scatter_plot:",
            "Each token id looks up a vector; a position vector is added to it.",
            view_keys=("token", "swap_i", "swap_j"),
            needs="position vectors added to each token's embedding",
            why_not="{model} looks each token up in an embedding too, but adds no position vector "
            "to it: the order it reads its input in tells it where each token is",
        ),
    ],
    "Inside the model": [
        Page(
            "pages/03_attention.py",
            "Attention",
            "Attention",
            ":material/visibility:",
            "Which earlier tokens each token looks at, head by head, with the arithmetic behind it.",
            view_keys=(
                "layer",
                "head",
                "view",
                "query",
                "softmax_x",
                "grid_layers",
                "rrt",
                "rrt_len",
            ),
            needs="attention heads",
        ),
        Page(
            "pages/04_residual_stream.py",
            "Residual_stream",
            "Residual stream",
            ":material/stacked_line_chart:",
            "What every layer adds to the running sum, and what the model would predict at each layer.",
            view_keys=("token", "pos", "lens_from"),
            needs="attention and MLP blocks, and what each adds to the residual stream",
        ),
        Page(
            "pages/05_layernorm.py",
            "LayerNorm",
            "LayerNorm",
            ":material/straighten:",
            "How each vector is centred and rescaled before attention and the MLP read it.",
            view_keys=("ln", "ln_pos"),
            needs="LayerNorms before each attention and MLP sublayer",
            why_not="{model} has a LayerNorm too, before its unembedding, but no attention or MLP "
            "sublayers for LayerNorms to stand before",
        ),
        Page(
            "pages/06_mlp_neurons.py",
            "MLP_neurons",
            "MLP neurons",
            ":material/hub:",
            "Which neurons fire on which tokens, and what they write back.",
            view_keys=("mlp_layer", "neuron", "n_neurons"),
            needs="MLP neurons",
        ),
    ],
    "Output": [
        Page(
            "pages/07_next_token.py",
            "Next_token",
            "Next token",
            ":material/casino:",
            "The probability of every possible next token, and how temperature, top-k and top-p reshape it.",
            view_keys=("temperature", "top_k", "top_p", "bars", "log", "tt_k"),
            families=ANY_FAMILY,
        ),
        Page(
            "pages/08_generation.py",
            "Generation",
            "Generation",
            ":material/edit_note:",
            "Write text one token at a time, see each choice, and override it.",
            view_keys=(
                "temperature",
                "top_k",
                "top_p",
                "seed",
                "gen",
                "gen_layers",
                "per_head",
                "mem_min",
            ),
            families=ANY_FAMILY,
        ),
        Page(
            "pages/19_using_a_model.py",
            "Using_a_model",
            "Using a model",
            ":material/build:",
            "Teacher forcing, no backtracking, repetition, beam search, scoring answers, few-shot "
            "prompting, the noisy channel, instruction tuning and hyperfitting.",
            heading="How a language model is used",
            view_keys=(
                "use_part",
                "u_bt_n",
                "u_bt_pos",
                "u_bt_tok",
                "u_rep_n",
                "u_rep_t",
                "u_rep_seed",
                "u_theta",
                "u_width",
                "u_steps",
                "u_sc_prompt",
                "u_sc_space",
                "u_sc_cands",
                "u_fs_n",
                "u_fs_seed",
                "u_nc_text",
                "u_nc_word",
                "u_nc_e",
                "u_in_own",
                "u_hf_n",
                "u_hf_prompt",
            ),
            families=ANY_FAMILY,
        ),
    ],
    "Training": [
        Page(
            "pages/09_training.py",
            "Training",
            "Training",
            ":material/model_training:",
            "Train a model on this server and watch it learn; see how any model trained.",
            needs_prompt=False,
            view_keys=(
                "t_run",
                "t_data",
                "t_task",
                "t_family",
                "t_preset",
                "t_custom",
                "t_n_layer",
                "t_n_head",
                "t_d_model",
                "t_n_ctx",
                "t_pos",
                "t_norm",
                "t_attn_only",
                "t_tie_embeddings",
                "t_dropout",
                "t_kernel",
                "t_tok",
                "t_vocab",
                "t_own",
                "t_lr",
                "t_batch",
                "t_budget",
                "t_minutes",
                "t_steps",
                "t_seed",
                "t_opt",
                "t_momentum",
                "t_name",
                "t_probe",
                "t_layer",
                "t_head",
                "hist_x",
                "hist_sample",
                "live_x",
                "live_sample",
                # a fine-tune (ui/training/finetune.py, ui/training/finetune_view.py)
                "t_from",
                "t_base",
                "t_ft",
                "t_rank",
                "t_lora_qkv",
                "t_lora_out",
                "t_lora_mlp_in",
                "t_lora_mlp_out",
                "t_ft_steps",
                "t_ft_lr_lora",
                "t_ft_lr_full",
                "ft_matrix",
            ),
            families=ANY_FAMILY,
        ),
    ],
    "Before transformers": [
        Page(
            "pages/10_ngrams.py",
            "N-grams",
            "N-grams (Shannon)",
            ":material/format_quote:",
            "Language models made by counting: Shannon's approximations, sparsity, perplexity.",
            needs_prompt=False,
            view_keys=("ng_context", "ng_k", "ng_seed"),
            families=ANY_FAMILY,
        ),
        Page(
            "pages/20_sequence_models.py",
            "Sequence_models",
            "RNNs, LSTMs and CNNs",
            ":material/linear_scale:",
            "The GPT beside an RNN, LSTM, GRU and CNN on the same text: bits per character, how "
            "far back each looks, an LSTM's gates, the cost of one more token.",
            heading="Sequence models before the transformer",
            view_keys=("seq_gate", "seq_layer"),
            families=ANY_FAMILY,
        ),
    ],
    "Experiments": [
        Page(
            "pages/11_interventions.py",
            "Interventions",
            "Interventions",
            ":material/content_cut:",
            "Ablate heads, patch activations, steer generation, scramble positions: see what breaks.",
            view_keys=(
                "exp",
                "how",
                "mean_ref",
                "heads",
                "mlps",
                "neurons",
                "sweep",
                "patch_tok",
                "patch_pos",
                "patch_end",
                "steer_a",
                "steer_b",
                "steer_layer",
                "steer_len",
                "steer_seed",
                "strength",
                "pos_mode",
                "pos_seed",
            ),
            needs="attention heads and MLPs, to knock out and patch",
        ),
        Page(
            "pages/22_adversarial.py",
            "Adversarial_suffix",
            "Adversarial suffix",
            ":material/bug_report:",
            "A few tokens, found by gradient search, that make the model say what you choose.",
            view_keys=("adv_target", "adv_len", "adv_steps", "adv_k"),
            needs="embeddings, to follow the gradient to, and attention patterns",
            why_not="{model} has an embedding too, but no attention patterns to show, and this "
            "page's search reaches the embedding through a GPT's hook (`hook_embed`) only",
        ),
        Page(
            "pages/23_sparse_autoencoder.py",
            "Sparse_autoencoder",
            "Sparse autoencoder",
            ":material/grain:",
            "Train a dictionary of sparse features on one layer, read them, and steer with one.",
            view_keys=(
                "sae_layer",
                "sae_site",
                "sae_f",
                "sae_k",
                "sae_tokens",
                "sae_seed",
                "sae_feat",
                "sae_alpha",
                "sae_gen_seed",
                "sae_cmp",
                "sae_snap",
                "sae_sparsity",
                "sae_l1",
                "sae_job",
                "sae_job_f",
                "sae_job_tokens",
            ),
            needs="residual stream and MLP output, to read a dictionary from",
            why_not="{model} has no MLP, and this page reads the stream at a GPT's hook points "
            "(`blocks.L.hook_resid_post`) only",
        ),
        Page(
            "pages/12_training_dynamics.py",
            "Training_dynamics",
            "Training dynamics",
            ":material/timeline:",
            "Each head's role against training step: whether, and when, copying is learned.",
            needs_prompt=False,
            view_keys=("dyn_head", "dyn_x"),
            families=ANY_FAMILY,
        ),
        Page(
            "pages/13_compare_models.py",
            "Compare_models",
            "Compare models",
            ":material/compare_arrows:",
            "Two models on one prompt: tokens, bits per character, next token, attention, training.",
            view_keys=(
                "cmp_model",
                "cmp_unit",
                "cmp_x",
                "cmp_layer_a",
                "cmp_head_a",
                "cmp_layer_b",
                "cmp_head_b",
            ),
            families=ANY_FAMILY,
        ),
        Page(
            "pages/15_architecture_contrasts.py",
            "Architecture_contrasts",
            "Architecture contrasts",
            ":material/difference:",
            "Tiny models that differ in one choice: causal mask, layers, LayerNorm, positions, tying.",
            view_keys=("ctr",),
            families=ANY_FAMILY,
            shows_sidebar_model=False,
        ),
        Page(
            "pages/16_scaling.py",
            "Scaling",
            "Scaling",
            ":material/trending_down:",
            "Loss against parameters and compute, log-log: a power law, 12 L d², GPT-2 and GPT-3.",
            needs_prompt=False,
            view_keys=("scl_x",),
            families=ANY_FAMILY,
        ),
        Page(
            "pages/14_inside_a_block.py",
            "Inside_a_block",
            "Inside a block",
            ":material/biotech:",
            "One token through a block step by step; circuits, probes and one gradient step.",
            view_keys=(
                "part",
                "blk_layer",
                "blk_head",
                "blk_pos",
                "ctx_token",
                "tpl",
                "tpl_fill",
                "gd_eta",
                "gd_pos",
                "lk_query",
            ),
            needs="attention-and-MLP blocks",
        ),
        Page(
            "pages/21_quantization.py",
            "Quantization",
            "Quantization",
            ":material/compress:",
            "The weights in float16, int8, int4: bytes, bits per character, and any page on the copy.",
            needs_prompt=False,
            view_keys=("q_matrix", "q_bits", "q_grid", "q_row", "q_open"),
            needs="weight matrices",
            why_not="{model} has weight matrices too (its embedding, its unembedding and the "
            "weights of its {layers}), but this page rebuilds each rounded copy as a GPT, so it "
            "quantises GPTs only",
        ),
    ],
}


def all_pages() -> list[Page]:
    """Every page, Home first, in lesson order, each knowing its section."""
    return list(_all_pages())


@functools.cache
def _all_pages() -> tuple[Page, ...]:
    # built once a process: every page run asks for it more than once (the frame, the links)
    return (HOME,) + tuple(
        replace(p, section=section) for section, pages in SECTIONS.items() for p in pages
    )


def lesson_pages() -> list[Page]:
    """Every page but Home, in lesson order."""
    return all_pages()[1:]


def find(url_path: str) -> Page:
    """The entry served at url_path ("" = Home)."""
    return next(p for p in all_pages() if p.url_path == url_path)


def by_route(route: str) -> Page | None:
    """The entry whose route (its url_path, "Home" for Home) is `route`; None for none."""
    return next((p for p in all_pages() if p.route == route), None)


# The browser tab's icon, one for the whole app, drawn inline (a data: URL): a causal attention
# pattern, each token reading itself and the tokens before it. Not the pages' Material icons:
# Streamlit draws those in the page from the font it ships, but fetches a favicon's from
# fonts.gstatic.com, and the app runs offline (tests/test_browser_offline.py).
APP_ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24">'
    '<rect width="24" height="24" rx="5" fill="#1f4e8c"/><g fill="#fff">'
    '<rect x="3" y="3" width="5" height="5" rx="1"/>'
    '<rect x="3" y="9.5" width="5" height="5" rx="1" opacity=".55"/>'
    '<rect x="9.5" y="9.5" width="5" height="5" rx="1" opacity=".9"/>'
    '<rect x="3" y="16" width="5" height="5" rx="1" opacity=".35"/>'
    '<rect x="9.5" y="16" width="5" height="5" rx="1" opacity=".6"/>'
    '<rect x="16" y="16" width="5" height="5" rx="1"/></g></svg>'
)


def navigation() -> StreamlitPage:
    """Declare every page to Streamlit, in sections (Home above them, with no heading), and
    return the one this run shows. On a process's very first run, which Streamlit's legacy
    `pages/` router has already answered, close the "Page not found" notice it put over a deep
    link's page (the page itself is found here)."""
    legacy = _legacy_router_ran()
    st.set_page_config(page_icon=APP_ICON)  # before st.navigation, which else sets a page's icon
    page = st.navigation(_declared_pages(), expanded=True)
    if legacy:
        st.sidebar.html(CLOSE_NOT_FOUND, unsafe_allow_javascript=True)
    return page


# The legacy router's notice: a dialog titled "Page not found" with a Close button. Looked for
# for a few seconds (it may be drawn after this script), closed once, never anything else.
CLOSE_NOT_FOUND = """<script>
(() => {
  const end = Date.now() + 8000;
  const look = () => {
    for (const dialog of document.querySelectorAll("[role='dialog']")) {
      const title = dialog.querySelector("h2");
      const close = dialog.querySelector("button[aria-label='Close']");
      if (title && title.textContent.trim() === "Page not found" && close) { close.click(); return; }
    }
    if (Date.now() < end) setTimeout(look, 100);
  };
  look();
})();
</script>"""


def _legacy_router_ran() -> bool:
    """True only in a process's first run, before st.navigation: Streamlit ran it through the
    legacy `pages/` router (its flag is still set), which sends "Page not found" for any path
    that is not a file in pages/, a deep link such as /Attention included."""
    return internals.legacy_pages_router_ran()


def _declared_pages() -> dict[str, list[StreamlitPage]]:
    """The st.Page objects of every page, made once a session: making them resolves each file's
    path on disk, a cost every page run would pay again (a class following the teacher runs a
    page per student per move). Not shared between sessions: st.navigation marks the page a
    run may call on the object itself."""
    made = st.session_state.get(_DECLARED)
    if made is None:
        made = st.session_state[_DECLARED] = _make_pages()
    return made


def _make_pages() -> dict[str, list[StreamlitPage]]:
    sections: dict[str, list[StreamlitPage]] = {}
    for page in all_pages():
        sections.setdefault(page.section, []).append(
            st.Page(
                page.file,
                title=page.label,
                icon=page.icon,
                url_path=page.route,
                default=not page.url_path,
                help=page.description,
            )
        )
    return sections
