"""The teacher password, for every page that starts or changes a training job.

    auth = teacher.password_field("t_password")        # a jobs.Auth: the server's and the typed
    jobs.start(name, settings, auth=auth)              # the engine checks it, every time

One resolver: `expected()` is jobs.server_password (VIZ_TEACHER_PASSWORD, else
`teacher_password` in Streamlit's secrets), with the secrets read once per server process, so the
password holds on every page in any order, and nothing writes os.environ. The field appears only
when the server has a password; it is never carried in the URL.

Not here: the check itself (jobs.Auth.check), the caps (jobs.Limits).
"""

from __future__ import annotations

import os

import streamlit as st

from serving import jobs
from ui import cache
from ui import streamlit_internals as internals

SECRET_KEY = "teacher_password"
TRUSTED_PROXIES_ENV = "VIZ_TRUSTED_PROXIES"  # proxies (addresses, comma-separated) whose
# X-Forwarded-For names the browser; one on this machine is always trusted


@cache.per_model
def _secret() -> str:
    """`teacher_password` from Streamlit's secrets ("" when there is none), read once."""
    try:
        return str(st.secrets.get(SECRET_KEY) or "")
    except internals.no_secrets_errors():  # no secrets file
        return ""


def expected() -> str:
    """The password this server expects ("" for none): jobs.server_password over the secrets."""
    return jobs.server_password(_secret())


def auth(given: str | None) -> jobs.Auth:
    """The jobs.Auth for a password the user gave (None: none)."""
    return jobs.Auth(expected(), given, client=client_key())


def client_key() -> str:
    """What identifies a browser for the wrong-password and wrong-code limits (browser_key): its
    connection's address, or the one a trusted proxy in front of the app names."""
    headers, peer = st.context.headers, st.context.ip_address
    forwarded = headers.get("X-Forwarded-For", "") if headers else ""
    trusted = os.environ.get(TRUSTED_PROXIES_ENV, "")
    return browser_key(peer if isinstance(peer, str) else None, forwarded, trusted)


def browser_key(peer: str | None, forwarded: object, trusted: str) -> str:
    """A browser's address. The X-Forwarded-For header counts only when the connection comes
    from a proxy the app trusts: one on this machine (Streamlit gives no address for a loopback
    peer: the class server's HAProxy) or one named in VIZ_TRUSTED_PROXIES; its last entry is the
    one that proxy wrote. A browser talking to the app directly cannot name another client.

    >>> browser_key(None, "6.6.6.6, 10.0.0.7", ""), browser_key("10.0.0.9", "6.6.6.6", "")
    ('10.0.0.7', '10.0.0.9')
    """
    proxies = {a.strip() for a in trusted.split(",") if a.strip()}
    if peer is None or peer in proxies:
        last = forwarded.split(",")[-1].strip() if isinstance(forwarded, str) else ""
        if last:
            return last
    return peer or "local"


def password_field(key: str, container=st) -> jobs.Auth:
    """The password field (only when the server has a password), as a jobs.Auth to pass on."""
    if not expected():
        return auth(None)
    # live: the value reaches the server as it is typed. Otherwise it is sent on Enter or when
    # focus leaves the widget, and Tab lands on the field's own "show password" button, so a
    # password typed and left with Tab never arrived and Start stayed disabled (issue 37).
    typed = container.text_input(
        "Teacher password",
        type="password",
        key=key,
        live=True,
        help="This server asks for it to start, stop, change or delete runs; watching is free.",
    )
    return auth(typed or None)
