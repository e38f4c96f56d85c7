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

import streamlit as st
from streamlit.errors import StreamlitSecretNotFoundError

from serving import jobs
from ui import cache

SECRET_KEY = "teacher_password"


@cache.per_model
def _secret() -> str:
    """`teacher_password` from Streamlit's secrets ("" when there is none), read once."""
    try:
        return str(st.secrets.get(SECRET_KEY) or "")
    except (StreamlitSecretNotFoundError, FileNotFoundError):  # no secrets file
        return ""


def expected() -> str:
    """The password this server expects ("" for none): jobs.server_password over the secrets."""
    return jobs.server_password(_secret())


def auth(given: str | None) -> jobs.Auth:
    """The jobs.Auth for a password the user gave (None: none)."""
    return jobs.Auth(expected(), given, client=client_key())


def client_key() -> str:
    """What identifies a browser for the wrong-password and wrong-code limits: its address, as
    the class server's HAProxy sets it (X-Forwarded-For: the last entry is the one our proxy
    wrote), else the connection's own."""
    headers, address = st.context.headers, st.context.ip_address
    forwarded = headers.get("X-Forwarded-For", "") if headers else ""
    found = forwarded.split(",")[-1].strip() if isinstance(forwarded, str) else ""
    # a key is text: AppTest's context, say, has no address (no text) at all
    return found or (address if isinstance(address, str) and address else "unknown")


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
