#!/usr/bin/env bash
# The exact commands that made the pre-trained bundles in assets/models/ (each bundle's
# config.json also records its own command in meta.command).
#
# Run from the repository root:  bash scripts/train_bundled_models.sh
# Each run uses one CPU thread, so the three can share a 2-core machine (they run in parallel
# here). The two Shakespeare runs are limited by time (--minutes), not by steps: the learning rate
# decays on the clock and reaches --min-lr when the time is up, so a faster machine takes more
# steps in the same time and ends with a lower loss. Timings on a shared machine are noisy.
set -euo pipefail
cd "$(dirname "$0")/.."

pids=()

python -m viz_model.training --task repeat --preset attn-only-2l --steps 4000 --minutes 30 \
  --batch-size 32 --lr 3e-3 --min-lr 3e-4 --warmup 100 --eval-every 250 --sample-every 1000 \
  --snapshots 10 --threads 1 --quiet --out assets/models/induction-2l &
pids+=($!)

python -m viz_model.training --corpus shakespeare --tokenizer char --preset small --dropout 0.1 \
  --batch-size 16 --lr 3e-3 --min-lr 1e-4 --warmup 100 --steps 40000 --minutes 45 --eval-every 500 \
  --eval-batches 40 --sample-every 1000 --snapshots 3 --threads 1 --quiet \
  --out assets/models/shakespeare-char &
pids+=($!)

python -m viz_model.training --corpus shakespeare --tokenizer bpe --vocab-size 512 --preset small \
  --dropout 0.1 --batch-size 16 --lr 3e-3 --min-lr 1e-4 --warmup 100 --steps 40000 --minutes 45 \
  --eval-every 500 --eval-batches 40 --sample-every 1000 --snapshots 3 --threads 1 --quiet \
  --out assets/models/shakespeare-bpe &
pids+=($!)

# A bare `wait` returns 0 even when a run failed: wait on each run, after all have finished (so none
# is left training in the background), and fail if any did.
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=$?
done
if ((status != 0)); then
  echo "a training run failed (exit status $status); its error is above" >&2
  exit "$status"
fi

# The architecture contrasts (the Architecture contrasts page): tiny pairs that differ in one
# setting, a few seconds to a minute each. induction-1l is induction-2l's recipe with one layer;
# each shakespeare-* is shakespeare-tiny with one setting changed (same shape, data and seed).
python -m viz_model.training --task repeat --preset attn-only-2l --n-layer 1 --steps 4000 \
  --batch-size 32 --lr 3e-3 --min-lr 3e-4 --warmup 100 --eval-every 250 --sample-every 1000 \
  --snapshots 3 --threads 1 --quiet --out assets/models/induction-1l
# The few-shot task model (the Using a model page, issue 26): lines of input>output pairs that all
# follow one rule (copy, reverse, shift each letter) chosen at random per line, so only the examples
# say which; a larger batch for fewer steps keeps its per-step history small (about 1.3 MB in all).
python -m viz_model.training --task fewshot --task-len 48 --preset tiny --steps 3000 \
  --batch-size 64 --lr 3e-3 --min-lr 3e-4 --warmup 100 --eval-every 500 --sample-every 1000 \
  --snapshots 1 --health-every 0 --threads 1 --quiet --out assets/models/fewshot-tiny
# The Shakespeare ones are shakespeare-tiny's command with one flag added.
# The parts modern models changed (issue 25) are the same: RMSNorm, a SwiGLU MLP (8/3 x d-model
# neurons: about as many weights), RoPE and ALiBi positions, multi-query attention, and Llama's
# whole block with 196 neurons, so that it holds as many parameters as shakespeare-tiny.
for variant in "tiny" "nomask --no-causal-mask" "postln --norm post" "sinusoidal --pos sinusoidal" \
  "nopos --pos none" "tied --tie-embeddings" "rmsnorm --norm-kind rmsnorm" \
  "swiglu --mlp gated --act silu" "rope --pos rope" "alibi --pos alibi" "mqa --n-kv-heads 1" \
  "llama --norm-kind rmsnorm --mlp gated --act silu --d-mlp 196 --pos rope --no-bias"; do
  read -r name flag <<<"$variant"  # flag: the rest of the line, one or two options
  python -m viz_model.training --corpus shakespeare --tokenizer char --preset tiny --n-ctx 128 \
    ${flag:+$flag} --steps 1500 --batch-size 16 --lr 3e-3 --warmup 50 --eval-every 250 \
    --sample-every 500 --snapshots 1 --threads 1 --quiet --out "assets/models/shakespeare-$name"
done

# assets/ must stay under 32 MiB (tests/test_bundled_models.py): the BPE bundle keeps the snapshots of steps 0, 1170 and the last
# step, not the one of step 34.
rm -f assets/models/shakespeare-bpe/snapshots/step_000034.safetensors

# The other families (issue 26): an RNN (tanh), an LSTM, a GRU and a causal CNN on
# shakespeare-tiny's data, tokenizer and budget. --family picks the preset's shape for that family
# (viz_model/model/recurrent_config.preset_shape: the GPT preset's number of weights in its
# layers; the CNN 6 layers dilated 1..32 with kernel 3, reading the last 127 characters).
for family in rnn lstm gru cnn; do
  python -m viz_model.training --family "$family" --corpus shakespeare --tokenizer char \
    --preset tiny --n-ctx 128 --steps 1500 --batch-size 16 --lr 3e-3 --warmup 50 \
    --eval-every 250 --sample-every 500 --snapshots 1 --threads 1 --quiet \
    --out "assets/models/shakespeare-$family"
done

# The instruction-tuned model (issue 27): shakespeare-char grown by a chat template's three special
# tokens (<|user|>, <|assistant|>, <|end|>) and tuned on the "instruct" task's 20,000 turns, seed 0
# (scripts/instruction_tune.py). It starts from shakespeare-char, so it waits for that run.
wait "${pids[1]}"
python scripts/instruction_tune.py --steps 1500 --threads 1

# The hyperfitted model (issue 42): shakespeare-tiny fine-tuned on the corpus's first 4,000
# characters until its training loss is near zero (scripts/hyperfit.py), for Using a model's
# Hyperfitting part. It starts from shakespeare-tiny, trained above.
python scripts/hyperfit.py --threads 1
