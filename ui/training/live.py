"""The live half of the Training page: the runs on this server, one of them watched as it trains.

`draw_runs(auth)` lists the runs (the URL's t_run picks one) and draws the chosen one in a
fragment that reruns about once a second while the run is live. The fragment only reads the
run's files (serving.jobs.read): nothing waits on the job, and every student of every server
process sees the same run. What a run shows: its state and progress, its controls, the loss
curves against the counting baselines, its newest samples, and a probe prompt's next-token
distribution and one head's attention from the weights saved at its last evaluation.
"""

from __future__ import annotations

import time
from pathlib import Path

import streamlit as st

from serving import jobs, models
from ui import cache, families, nav, parts, present, state
from ui.charts.attention import pattern_heatmap
from ui.charts.common import token_labels
from ui.charts.next_token import distribution_bars
from ui.training import finetune_view, run_history
from viz_model.analysis import grad_health as gh
from viz_model.analysis import next_token as nt
from viz_model.analysis import training as tr
from viz_model.analysis.attention import attention_run
from viz_model.analysis.claims import md_escape
from viz_model.bundles.files import CheckpointError
from viz_model.model.sampling import SamplingSettings
from viz_model.training.settings import RunSettings

RUN_KEY = "t_run"
REFRESH_S = 1.0
NOTICE_S = 5.0  # how often a page not following a live run looks for one (a cheap file read)
PROBE_DEFAULT = "ROMEO:\nWhat"
PROBE_BARS = 12
_LIVE_SEEN = "_t_live_seen"  # run name -> was it live when last drawn
_REFUSED = "_t_refused"  # (run name, message, time.monotonic()) of this session's last refusal
REFUSAL_S = 10.0  # how long a refusal stays on screen through the live refreshes
STATE_ICONS = {
    "running": ":material/play_circle:",
    "paused": ":material/pause_circle:",
    "suspended": ":material/hourglass_disabled:",
    "finished": ":material/check_circle:",
    "stopped": ":material/stop_circle:",
    "failed": ":material/error:",
    "interrupted": ":material/warning:",
}
OPEN_ON = ("Attention", "Next_token", "Generation")  # url paths of the pages a new model opens on
OPEN_OTHER_ON = ("Next_token", "Generation", "Compare_models")  # for an RNN, LSTM, GRU or CNN


def draw_runs(auth: jobs.Auth) -> None:
    """Pick a run and watch it (refreshing while it trains); a note when there is none."""
    _orphans(auth)
    runs = {view.name: view for view in jobs.list_runs()}
    from_command_line = _command_line_note(set(runs))
    if not runs:
        where = "started on this page" if from_command_line else "on this server"
        st.info(f"No run {where} yet: set one up above and press Start.")
        st.fragment(_notice_changes, run_every=NOTICE_S)(())
        return
    default = next((name for name, view in runs.items() if view.live), next(iter(runs)))
    name = state.selectbox(
        "Run",
        RUN_KEY,
        list(runs),
        default,
        format_func=lambda n: f"{n} · {runs[n].state}",
        help="Every run on this server, newest first. Closing the browser does not stop a run.",
    )
    if runs[name].live:
        st.fragment(_watch, run_every=REFRESH_S)(name, auth)
    else:
        _watch(name, auth)
        st.fragment(_notice_changes, run_every=NOTICE_S)(_run_states(runs))


def command_line_runs(job_names: set[str]) -> list[str]:
    """Models in the runs folder that no job of this page trained: `python -m viz_model.training
    --out runs/NAME` writes a bundle with no job settings, which the model picker lists but the
    job list cannot follow."""
    root = jobs.runs_root().resolve()
    return [
        name
        for name, path in models.discover().items()
        if path.parent == root and name not in job_names
    ]


def _command_line_note(job_names: set[str]) -> bool:
    """Say where the runs trained from the command line are, so none seems lost; were there any."""
    names = command_line_runs(job_names)
    if names:
        shown = ", ".join(f"“{md_escape(name)}”" for name in names[:6])
        more = f" and {len(names) - 6:,} more" if len(names) > 6 else ""
        st.caption(
            f"Trained from the command line: {shown}{more}. They are finished models, not jobs "
            "of this page: pick them in the sidebar's model picker."
        )
    return bool(names)


def _orphans(auth: jobs.Auth) -> None:
    """Workers whose run folder was deleted outside the app (jobs.orphans): said, with Stop, since
    each holds a job slot; one usually ends itself within a step."""
    try:
        found = jobs.orphans()
    except OSError:  # a process table that cannot be read: nothing to say
        return
    locked = auth.required and not auth.given
    for worker in found:
        how = "suspended (stopped by a signal)" if worker.suspended else "still running"
        cols = st.columns([4, 1], vertical_alignment="center")
        cols[0].warning(
            f"A training worker whose run folder is gone is {how}: {worker.label}. It trains "
            "out of sight and holds one of the server's job slots.",
            icon=":material/warning:",
        )
        if cols[1].button("Stop it", key=f"t_orphan_{worker.pid}", disabled=locked):
            try:
                jobs.stop_orphan(worker.pid, auth=auth)
            except jobs.JobError as exc:
                cols[0].error(f"Refused: {exc}.")
            else:
                st.rerun()


def _run_states(runs: dict[str, jobs.RunView]) -> tuple[tuple[str, str], ...]:
    return tuple((name, view.state) for name, view in runs.items())


def _notice_changes(seen: tuple[tuple[str, str], ...]) -> None:
    """While no live run is watched: every few seconds, compare the runs and their states with
    what the page drew; on a change (a run started anywhere, one ended) redraw the whole page."""
    now = _run_states({view.name: view for view in jobs.list_runs()})
    if now != seen:
        st.rerun()


def _history_version(path: Path) -> tuple[str, int, int]:
    """(folder, mtime, size) of the run's history file: what changes when a step is appended."""
    try:
        stat = (path / jobs.HISTORY_FILE).stat()
    except OSError:
        return (str(path), 0, 0)
    return (str(path), stat.st_mtime_ns, stat.st_size)


@cache.per_model
def _history(version: tuple[str, int, int]) -> list[dict]:
    """The run's step records, parsed once per version for every student watching (read-only)."""
    return jobs.read_history(Path(version[0]) / jobs.HISTORY_FILE)


def _watch(name: str, auth: jobs.Auth) -> None:
    try:
        view = jobs.read(name, history=False)
    except jobs.JobError as exc:
        st.error(f"Cannot read the run: {exc}.")
        return
    version = _history_version(view.path)
    view.history = _history(version)
    seen = st.session_state.setdefault(_LIVE_SEEN, {})
    if seen.get(name) and not view.live:  # it just ended: a full rerun stops the timer and
        seen[name] = False  # lists the new bundle in the model picker
        st.rerun()
    seen[name] = view.live
    _status(view)
    _controls(view, auth)
    bundle = _saved_bundle(view)
    baselines = run_history.baselines_of(bundle_id(view)) if bundle is not None else None
    run_history.draw_curves(view.history, version, baselines, _tokens_per_step(view), key="live")
    causal = bundle.config.causal if bundle is not None else True
    run_history.draw_claims(view.history, baselines, view.estimate, causal)
    if bundle is not None:  # a fine-tune: the old text's loss beside the new (forgetting)
        finetune_view.draw_live(view.history, bundle.meta)
    train_config = _train_config(view, bundle)
    with st.expander("Gradient health: each layer's gradient and update, as it trains"):
        adapters = bundle is not None and gh.is_lora(bundle.meta)
        run_history.draw_grad_health(
            view.history, version, train_config, key="live", adapters=adapters
        )
    run_history.draw_update_rule(train_config, "The update it trains with", key="live_rule")
    _samples(view)
    _probe(view, bundle)
    if not view.live and view.has_bundle:
        _open_links(view, bundle)


# ---- state and progress -----------------------------------------------------------------------


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}:{secs:02d}"


def _on(view: jobs.RunView) -> str:
    """ " on the CPU" / " on the GPU (cuda)": where the run trains, once its worker has said."""
    if not view.device:
        return ""
    return " on the CPU" if view.device == "cpu" else f" on the GPU ({view.device})"


def _status(view: jobs.RunView) -> None:
    message = f": {view.message}" if view.message else ""
    st.markdown(f"{STATE_ICONS.get(view.state, '')} **{view.name}** is **{view.state}**{message}")
    of = f" of {view.max_steps:,}" if view.max_steps else ""
    left = f", {_clock(view.time_left)} left" if view.state in ("running", "paused") else ""
    speed = tr.speed_headline(view.history, _tokens_per_step(view))  # the claims' statistic
    st.progress(
        min(1.0, max(0.0, view.progress)),
        text=f"step {view.step:,}{of} · {speed}{_on(view)} · {_clock(view.elapsed)} trained{left}",
    )
    cols = st.columns(4)
    cols[0].metric("Training loss", f"{view.train_loss:.3f}" if view.train_loss else "–")
    cols[1].metric("Validation loss", f"{view.val_loss:.3f}" if view.val_loss else "–")
    cols[2].metric("Learning rate", f"{view.lr:.2e}" if view.lr else "–")
    cols[3].metric("Parameters", f"{view.params:,}" if view.params else "–")


# ---- controls -----------------------------------------------------------------------------------


def _act(action, name: str, *args, **kwargs) -> None:
    """Run a jobs control on run `name`; keep its refusal to show (_refusal), else redraw the
    page (a whole rerun, so the refresh timer starts or stops with the run's new state)."""
    try:
        action(name, *args, **kwargs)
    except jobs.JobError as exc:
        st.session_state[_REFUSED] = (name, f"Refused: {exc}.", time.monotonic())
        return
    st.session_state.pop(_REFUSED, None)
    st.rerun()


def _refusal(name: str) -> None:
    """This session's last refusal for the run, for REFUSAL_S seconds: a live run redraws every
    second, which would otherwise wipe "wrong teacher password" before it is read."""
    refused, message, when = st.session_state.get(_REFUSED) or ("", "", 0.0)
    if refused == name and time.monotonic() - when < REFUSAL_S:
        st.error(message)


def _controls(view: jobs.RunView, auth: jobs.Auth) -> None:
    locked = auth.required and not auth.given
    if locked:
        st.caption("The teacher password (above) is needed to change a run; anyone can watch it.")
    cols = st.columns(4)
    name = view.name
    if view.state == "running" and cols[0].button("Pause", key="t_pause", disabled=locked):
        _act(jobs.pause, name, auth=auth)
    if view.state == "paused":
        if cols[0].button("Resume", key="t_resume", disabled=locked):
            _act(jobs.resume, name, auth=auth)
        if cols[1].button(
            "Step", key="t_step", disabled=locked, help="One optimisation step, then pause again."
        ):
            _act(jobs.step, name, auth=auth)
    wake = " (a suspended worker is woken to stop)" if view.state == "suspended" else ""
    if view.live and cols[2].button(
        "Stop",
        key="t_stop",
        disabled=locked,
        help=f"Stop after this step and save the model{wake}.",
    ):
        _act(jobs.stop, name, auth=auth)
    if _resumable(view) and cols[0].button(
        "Resume", key="t_relaunch", disabled=locked, help="Continue from the last save."
    ):
        _act(jobs.resume, name, auth=auth)
    if view.state in ("running", "paused"):
        _lr_control(view, auth, locked)
    if view.state == "paused":
        _last_steps(view)
    if view.state in ("finished", "stopped"):
        _train_more(view, auth, locked)
    if not view.live:
        with cols[3].popover("Delete", disabled=locked):
            st.markdown(f"Delete **{name}** and its saved model?")
            if st.button("Delete it", key="t_delete", type="primary"):
                _act(jobs.delete, name, auth=auth)
    _refusal(name)


def _resumable(view: jobs.RunView) -> bool:
    """Interrupted, or failed after a save (a full disk, say): Resume goes on from the save."""
    return view.state == "interrupted" or (
        view.state == "failed" and bool(view.saved_step) and view.has_bundle
    )


def _lr_control(view: jobs.RunView, auth: jobs.Auth, locked: bool) -> None:
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
    lr = c1.number_input(
        "Peak learning rate",
        min_value=1e-5,
        max_value=1.0,
        value=float(view.peak_lr or view.lr or 1e-3),
        format="%.5f",
        step=1e-4,
        key=f"t_lr_{view.name}_{view.peak_lr}",  # a new peak (or the first) redraws the field
        help="The one setting that changes without restarting: the warm-up and cosine keep their "
        "shape around the new peak, from the next step on. Try 10x higher and watch the loss.",
    )
    if c2.button("Set learning rate", key="t_set_lr", disabled=locked):
        _act(jobs.set_lr, view.name, lr, auth=auth)


def _last_steps(view: jobs.RunView) -> None:
    last = [r for r in view.history[-5:] if isinstance(r.get("train_loss"), int | float)]
    if last:
        steps = ", ".join(f"step {r['step']:,}: **{r['train_loss']:.3f}**" for r in last)
        st.markdown(f"Paused. The last steps' training losses: {steps}.")


def _train_more(view: jobs.RunView, auth: jobs.Auth, locked: bool) -> None:
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
    more = c1.number_input(
        "More steps", min_value=1, max_value=100_000, value=500, step=100, key="t_more"
    )
    if c2.button("Train more", key="t_train_more", disabled=locked):
        _act(jobs.train_more, view.name, int(more), auth=auth)


# ---- what the model has learned so far ------------------------------------------------------------


def _train_config(view: jobs.RunView, bundle) -> dict | None:
    """The run's TrainConfig as a dict: its bundle's once saved (a new peak lr or more steps
    included), else its settings'; None when neither can be read."""
    if bundle is not None and bundle.train_config:
        return bundle.train_config
    try:
        return RunSettings.from_dict(view.settings).train_config().to_dict()
    except (TypeError, ValueError):
        return None


def _tokens_per_step(view: jobs.RunView) -> int:
    """batch x context of the run (the x axis 'tokens seen'); 1 when its settings are unreadable."""
    try:
        settings = RunSettings.from_dict(view.settings)
        return settings.train_config().batch_size * settings.model_config(2).n_ctx
    except (TypeError, ValueError):
        return 1


def bundle_id(view: jobs.RunView) -> str:
    """The id of the run's bundle as last saved (it changes with every save)."""
    return models.bundle_id(view.path)


def _saved_bundle(view: jobs.RunView):
    """The run's bundle as saved at its last evaluation (reloaded when rewritten), or None."""
    if not view.has_bundle:
        return None
    try:
        return cache.bundle(bundle_id(view))
    except CheckpointError:
        return None  # being rewritten, or not yet complete: the next refresh reads it


def _samples(view: jobs.RunView) -> None:
    if not view.samples:
        return
    st.markdown("**What it writes** (sampled from the weights at that step, newest first)")
    for sample in reversed(view.samples[-3:]):
        st.caption(f"step {sample['step']:,}")
        st.code(sample["text"], language=None, wrap_lines=True)


@cache.per_prompt
def _probe_numbers(bundle_id: str, ids: tuple[int, ...], layer: int, head: int):
    """(top tokens after the probe, one head's pattern) for the weights of one saved bundle."""
    bundle = cache.bundle(bundle_id)
    logits = nt.prompt_logits(bundle.model, list(ids))[-1]
    top = nt.top_tokens(
        nt.distribution(logits, SamplingSettings()), PROBE_BARS, bundle.tokenizer.id_to_token
    )
    if bundle.family != "gpt":  # an RNN, LSTM, GRU or CNN: no heads
        return top, None
    pattern = attention_run(bundle.model, list(ids)).pattern[layer, head]
    return top, pattern


def _probe(view: jobs.RunView, bundle) -> None:
    if bundle is None:
        st.caption("The probe appears after the run's first evaluation saves its weights.")
        return
    cfg = bundle.config
    st.markdown(
        f"**A probe, as it forms** (the weights saved at step "
        f"{bundle.meta.get('step', 0):,}, refreshed at every evaluation)"
    )
    c1, c2, c3 = st.columns([3, 1, 1])
    probe = state.bind(
        c1.text_area,
        "t_probe",
        state.url_str("t_probe", PROBE_DEFAULT, 200),
        "Probe prompt",
        max_chars=200,
        height=68,
        help="A fixed prompt to watch while the run trains. Press Ctrl+Enter to apply.",
    )
    gpt = bundle.family == "gpt"
    layer, head = 0, 0
    if gpt:
        layer = state.number_input("Layer", "t_layer", 0, cfg.n_layer - 1, 0, container=c2)
        head = state.number_input("Head", "t_head", 0, cfg.n_head - 1, 0, container=c3)
    ids = bundle.tokenizer.encode(probe or PROBE_DEFAULT)[-cfg.n_ctx :] or [0]
    bid, ids = bundle_id(view), tuple(ids)
    top, pattern = _probe_numbers(bid, ids, layer, head)
    if gpt:
        next_tab, attention_tab = parts.followed_tabs(
            ["What comes next", f"Layer {layer}, head {head}: attention"], "live_probe"
        )
    else:
        next_tab, attention_tab = st.container(), None
    present.plot(
        cache.figure(
            distribution_bars, top.labels, top.base_probs, top.scaled_probs, top.probs, top.kept
        ),
        key="t_probe_next",
        container=next_tab,
    )
    if pattern is None:
        st.caption(families.no_attention_note(bundle))
        return
    labels = token_labels([bundle.tokenizer.id_to_token(i) for i in ids])
    present.plot(
        cache.figure(pattern_heatmap, pattern, labels),
        key="t_probe_attn",
        container=attention_tab,
    )


def _open_links(view: jobs.RunView, bundle) -> None:
    st.markdown(f"**{view.name}** is a model bundle now: every page's model picker lists it.")
    gpt = bundle is None or bundle.family == "gpt"  # other families cannot open on Attention
    pages = OPEN_ON if gpt else OPEN_OTHER_ON
    cols = st.columns(len(pages))
    for col, page in zip(cols, map(nav.find, pages), strict=True):
        if col.button(f"Open it on {page.label}", key=f"t_open_{page.label}"):
            state.set_value("model", view.name)
            st.switch_page(page.file)
