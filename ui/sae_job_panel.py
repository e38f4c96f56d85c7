"""The Sparse autoencoder page's jobs: open a finished one, start a bigger one, watch it train.

    job = sae_job_panel.choose(bundle_id)        # the finished job picked (URL: sae_job), or None
    auth = sae_job_panel.password()              # a field only when the server has a password
    sae_job_panel.watch(bundle_id, auth)         # live jobs of this model, refreshed every second
    sae_job_panel.deleter(bundle_id, auth)       # "Delete an SAE job": one that is not running
    sae_job_panel.launcher(bundle_id, name, layer, site, k, l1, seed, auth)   # "Train as a job"

The jobs are serving/sae_jobs.py's: a child process each, under the server's caps, lock and
teacher password, read only from their folders, so closing the browser changes nothing and every
server process sees them. A job is listed for the model whose exact id (folder, weights' mtime,
step) it trained on.

Not here: reading a saved lab (viz_model/analysis/labs/sae_files.py), the page's measurements.
"""

from __future__ import annotations

import re
import time

import streamlit as st

from serving import jobs, models, sae_jobs
from ui import state, teacher
from viz_model.analysis.labs.sae.activations import SITES

JOB_KEY = "sae_job"
IN_PAGE = "here"  # the URL value for "the SAE trained in the page run"
JOB_FEATURES = (1024, 2048, 4096)
JOB_TOKENS = (250_000, 500_000, 1_000_000, 2_000_000)
REFRESH_S = 1.0
_PASSWORD = "sae_password"
_STARTED = "_sae_started"  # the job this session started last (opened when it finishes)
_REFUSED = "_sae_refused"  # (message, time.monotonic()) of this session's last refused Stop
REFUSAL_S = 10.0  # how long a refusal stays on screen through the live refreshes


def _finished(bundle_id: str) -> dict[str, jobs.RunView]:
    """This model's finished jobs whose settings can be read (a hand-edited one is left out)."""
    found = {}
    for view in sae_jobs.list_jobs(bundle_id=bundle_id):
        if view.state == "finished":
            try:
                settings_of(view)
            except jobs.JobError:
                continue
            found[view.name] = view
    return found


def settings_of(view: jobs.RunView) -> sae_jobs.SAEJob:
    """The job a view's settings.json describes (checked when the job was listed)."""
    return sae_jobs.SAEJob.from_dict(view.settings)


def describe(view: jobs.RunView) -> str:
    """A job's settings in a few words: 'the residual stream after block 1, 4,096 features, ...'."""
    job = settings_of(view)
    return (
        f"{SITES[job.site]} {job.layer}, {job.n_features:,} features, {job.sparsity()}, "
        f"{job.tokens // 1000:,}k tokens, seed {job.seed}"
    )


def choose(bundle_id: str) -> jobs.RunView | None:
    """The selector between the SAE trained here and this model's finished jobs; the job's view
    when one is chosen. A URL naming a job this server does not have gets a note."""
    try:
        finished = _finished(bundle_id)
    except jobs.JobError as exc:
        st.warning(f"The SAE jobs cannot be listed: {exc}.")
        return None
    asked = st.query_params.get(JOB_KEY, IN_PAGE)
    if not finished:
        if asked != IN_PAGE:  # the name from the URL is shown only when it is a plain slug
            named = f" named “{asked}”" if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", asked) else ""
            st.info(f"There is no finished SAE job{named} for this model here.")
        return None
    if (started := st.session_state.get(_STARTED)) in finished:  # this session's job is done:
        state.set_value(JOB_KEY, started)  # show it (once; the select changes it back at will)
        del st.session_state[_STARTED]
    labels = {IN_PAGE: "Trained here, in the page"}
    for n, view in finished.items():
        job = settings_of(view)
        size = f"{job.n_features:,} features, {job.sparsity()}, {job.tokens // 1000:,}k tokens"
        labels[n] = f"Job {n} · block {job.layer}, {size}"
    name = state.selectbox(
        "Which SAE",
        JOB_KEY,
        list(labels),
        IN_PAGE,
        format_func=labels.get,
        help="A job's SAE was trained in the background on more tokens; the page reads it from "
        "its folder instead of training one.",
    )
    if name == IN_PAGE:
        return None
    view = finished[name]
    st.caption(f"Job {name}: {describe(view)}.")
    return view


def password() -> jobs.Auth:
    """The teacher password for starting and stopping SAE jobs: a field only when the server
    has one (never in the URL); watching needs none."""
    return teacher.password_field(_PASSWORD)


def launcher(
    bundle_id: str,
    model_name: str,
    layer: int,
    site: str,
    k: int,
    l1: float,
    seed: int,
    auth: jobs.Auth,
) -> None:
    """'Train as a job': this page's block, activation, sparsity and seed, a bigger dictionary
    and more tokens, started in the background (password and caps checked by sae_jobs.start)."""
    with st.expander("Train a bigger SAE as a job (in the background)"):
        st.caption(
            "A job trains in its own process on the server, so nobody waits for it: this page "
            "and others keep working, and closing the browser does not stop it. When it "
            "finishes it appears under “Which SAE” above, for everyone using this model. It "
            "uses the block, activation, sparsity and seed chosen above. How long: 500k "
            "activations with 1,024 features took about a minute on a busy 2-core test "
            "machine, 1M with 4,096 about 7 minutes (`benchmarks/README.md`)."
        )
        if models.split_precision(bundle_id)[1] is not None:
            st.info("A job trains on the model at full precision: set Precision to float32.")
            return
        c1, c2 = st.columns(2)
        n_features = state.select_slider(
            "Dictionary size F", "sae_job_f", JOB_FEATURES, 4096, container=c1
        )
        n_tokens = state.select_slider(
            "Training tokens",
            "sae_job_tokens",
            JOB_TOKENS,
            500_000,
            container=c2,
            format_func=lambda n: f"{n // 1000:,}k",
        )
        job = sae_jobs.SAEJob(
            bundle_id, layer, site, n_features, k, l1 if not k else 3e-2, n_tokens, seed
        )
        try:
            full = jobs.cap_problems(0, None)
        except jobs.JobError as exc:  # a cap set to something that is not a number
            full = [str(exc)]
        if full:
            st.info("The server is busy: " + "; ".join(full) + ". Start one when a job ends.")
        locked = auth.required and not auth.given
        if locked:
            st.caption("Starting a job needs the teacher password (above).")
        if st.button("Start the job", key="sae_start", disabled=bool(full) or locked):
            name = sae_jobs.free_name(f"{model_name}-b{layer}-{n_features}-{job.sparsity()}")
            try:
                sae_jobs.start(name, job, auth=auth)
            except jobs.JobError as exc:
                st.warning(f"The job was not started: {exc}.")
                return
            st.session_state[_STARTED] = name
            st.rerun()
        _earlier(bundle_id)


def _earlier(bundle_id: str) -> None:
    """The jobs on this model that did not finish, with the reason, newest first."""
    jobs_here = sae_jobs.list_jobs(bundle_id=bundle_id)
    ended = [v for v in jobs_here if not v.live and v.state != "finished"]
    if ended:
        lines = [f"- {v.name} ({v.state}): {v.message}" for v in ended[:5]]
        st.markdown("Jobs that did not finish:\n" + "\n".join(lines))


def deleter(bundle_id: str, auth: jobs.Auth) -> None:
    """Delete one of this model's jobs that is not running, with its saved SAE (a teacher
    clearing up after class); a session showing it elsewhere then says it is gone."""
    try:
        ended = [v for v in sae_jobs.list_jobs(bundle_id=bundle_id) if not v.live]
    except jobs.JobError:
        return  # choose() has said the jobs cannot be listed
    if not ended:
        return
    with st.expander("Delete an SAE job"):
        _delete_one(ended, auth)


def _delete_one(ended: list[jobs.RunView], auth: jobs.Auth) -> None:
    locked = auth.required and not auth.given
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    name = c1.selectbox(
        "Job (one that is not running)",
        [v.name for v in ended],
        index=None,
        placeholder="choose a job",
        key="sae_delete_pick",
    )
    help_ = "Needs the teacher password (above)." if locked else "Its saved SAE goes with it."
    if c2.button("Delete", key="sae_delete", disabled=locked or name is None, help=help_):
        try:
            sae_jobs.delete(name, auth=auth)
        except jobs.JobError as exc:
            st.warning(f"The job was not deleted: {exc}.")
            return
        if st.session_state.get(JOB_KEY) == name:  # the SAE on screen: back to the page's own
            state.set_value(JOB_KEY, IN_PAGE)
        st.session_state.pop("sae_delete_pick", None)
        st.rerun()


def watch(bundle_id: str, auth: jobs.Auth) -> None:
    """The live jobs of this model, with progress and Stop, in a fragment that reruns every
    second while any is live; when one ends, the whole page reruns to list it."""
    live = [v.name for v in sae_jobs.list_jobs(bundle_id=bundle_id) if v.live]
    if live:
        st.fragment(_progress, run_every=REFRESH_S)(bundle_id, tuple(live), auth)


def _progress(bundle_id: str, seen: tuple[str, ...], auth: jobs.Auth) -> None:
    live = [v for v in sae_jobs.list_jobs(bundle_id=bundle_id) if v.live]
    if tuple(v.name for v in live) != seen:
        st.rerun()  # one ended (or started elsewhere): redraw the list and the selector
    locked = auth.required and not auth.given
    for view in live:
        st.progress(min(1.0, max(0.0, view.progress)), text=_line(view))
        stop_help = "Stop needs the teacher password (above)." if locked else "Nothing is saved."
        if st.button("Stop", key=f"sae_stop_{view.name}", disabled=locked, help=stop_help):
            try:
                sae_jobs.stop(view.name, auth=auth)
                st.session_state.pop(_REFUSED, None)
            except jobs.JobError as exc:
                st.session_state[_REFUSED] = (f"Not stopped: {exc}.", time.monotonic())
    # a refusal stays for REFUSAL_S: the timer's redraw would wipe it before it is read
    message, when = st.session_state.get(_REFUSED) or ("", 0.0)
    if message and time.monotonic() - when < REFUSAL_S:
        st.warning(message)


def _line(view: jobs.RunView) -> str:
    """'Job x: training the SAE, 42% trained, 31,000 tokens/s, about 0:40 left'."""
    parts = [f"Job {view.name}: {view.message or view.state}"]
    if view.progress > 0:  # training's share (reading activations says its own in the message)
        parts.append(f"{view.progress:.0%} trained")
    if view.tokens_per_s:
        parts.append(f"{view.tokens_per_s:,.0f} tokens/s")
    if view.time_left:
        minutes, secs = divmod(int(view.time_left), 60)
        parts.append(f"about {minutes}:{secs:02d} left")
    return ", ".join(parts)
