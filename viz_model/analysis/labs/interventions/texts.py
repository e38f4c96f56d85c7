"""The texts the Interventions page starts from: the held-out end of the training text, what a
student typed with the visible whitespace marks turned back, the candidate replacement tokens,
and the default steering sets.
"""

from __future__ import annotations

from viz_model.text.data import load_text

VAL_CHARS = 3000  # the end of the training text: held out from training (data.TokenData)
REPLACEMENTS = (" ", "e", " the", "a", "x")  # candidate replacements for the corrupted token


def validation_text(meta: dict) -> str | None:
    """The last VAL_CHARS characters of the text a bundle was trained on (its meta["data"]):
    the end of the last held-out stretch, never trained on. None when the bundle does not say."""

    source = meta.get("data")
    if not source:
        return None
    try:
        return load_text(source)[-VAL_CHARS:]
    except (OSError, ValueError):
        return None


_VISIBLE = {"␣": " ", "↵": "\n", "⇥": "\t"}


def typed_text(text: str) -> str:
    """What a student typed, with the visible whitespace marks the pages show (␣ ↵ ⇥) turned back
    into the characters they stand for: "␣the" -> " the"."""
    for mark, char in _VISIBLE.items():
        text = text.replace(mark, char)
    return text


def candidate_tokens(encode, decode, prompt: list[int] = (), n_prompt: int = 2) -> list[int]:
    """The REPLACEMENTS that are one token for this tokenizer and read back as themselves (not
    <unk>), then up to n_prompt distinct tokens of the prompt (always in the vocabulary): ids,
    each once."""
    out = []
    for text in REPLACEMENTS:
        ids = encode(text)
        if len(ids) == 1 and ids[0] not in out and decode(ids) == text:
            out.append(ids[0])
    extra = [t for t in dict.fromkeys(prompt) if t not in out]
    return out + extra[:n_prompt]


STEER_DEFAULT_ALPHA = (
    1.5  # the page opens here: with the default sets the push is clear, the text reads
)


def steering_defaults(meta: dict, prompt: str, load_corpus) -> tuple[str, str]:
    """The page's default sets A and B (blocks separated by blank lines): for a model of the
    plays, lines in capitals against the same lines as written (steering_texts); else the
    model's own example prompts split in two; else the prompt in capitals against it in small
    letters. `load_corpus(name)` reads a bundled corpus."""
    if (meta.get("data") or {}).get("corpus") == "shakespeare":
        return steering_texts(load_corpus("shakespeare"))
    examples = list(meta.get("example_prompts") or [])
    if len(examples) >= 2:
        half = len(examples) // 2
        return "\n\n".join(examples[:half]), "\n\n".join(examples[half:])
    return prompt.upper(), prompt.lower()


def steering_texts(corpus: str, n: int = 6) -> tuple[str, str]:
    """The default steering sets for a model of the plays: (A, B) = n of Romeo's lines in
    capitals, and the same lines as written, each set one prompt per blank-line block.

    Why capitals: the plays' speaker names and headings are in capitals, so a model of them
    has a direction for "capitals here" that a small push moves visibly. Romeo's lines against
    Juliet's were tried first; on the bundled models that push was no larger than a random
    direction's (the claims test measures it on every model)."""
    lines = speech_lines(corpus, "Romeo", n)
    return "\n\n".join(s.upper() for s in lines), "\n\n".join(lines)


def speech_lines(text: str, speaker: str, n: int = 6) -> list[str]:
    """The first line of each of the first n speeches of `speaker` in a play text whose speeches
    start with a line "Speaker." (the bundled corpus's layout).

    >>> speech_lines("Romeo.\\nO she doth teach\\nthe torches.\\n\\nJuliet.\\nAy me!\\n", "Romeo")
    ['O she doth teach']
    """
    marker = f"\n{speaker}.\n"
    out, start = [], 0
    while len(out) < n and (i := text.find(marker, start)) >= 0:
        line = text[i + len(marker) :].split("\n", 1)[0].strip()
        if line:
            out.append(line)
        start = i + len(marker)
    return out
