# The app in one image: one Streamlit process, or N behind HAProxy (VIZ_PROCESSES=N), on $PORT.
# Built from the repository root:   docker build -t inside-gpt .
# Run:  docker run -p 8501:8501 -v inside-gpt-runs:/data/runs -e VIZ_TEACHER_PASSWORD=... inside-gpt
# (or the password as a secret file at /run/secrets/teacher_password). See docs/OPERATING.md, "Deploying".
# BASE_IMAGE and PIP_OPTIONS let a machine without Docker Hub or PyTorch's index build it too
# (tests/test_container.py: a Debian-made base from deploy/local_base.sh, torch's wheel from a
# local folder: --build-arg PIP_OPTIONS="--find-links http://127.0.0.1:PORT/ --retries 0").
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
ARG PIP_OPTIONS=""

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PORT=8501 \
    VIZ_PROCESSES=1 \
    VIZ_RUNS_DIR=/data/runs

# haproxy for VIZ_PROCESSES above 1 (serving/class_server.py); curl for the health check
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends haproxy curl \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# every package at the version and sha256 of requirements.lock, or nothing; torch is its CPU build,
# from PyTorch's CPU index, which the lock names (a plain `pip install torch` on Linux pulls the
# CUDA build, gigabytes)
COPY requirements.lock ./
# PIP_OPTIONS is pip options, split on purpose (hadolint reads its words as unpinned packages)
# hadolint ignore=SC2086,DL3013
RUN pip install --require-hashes --no-deps ${PIP_OPTIONS} -r requirements.lock

# the app with its bundled models (assets/), read-only for the user that runs it
COPY app.py ./
COPY .streamlit ./.streamlit
COPY pages ./pages
COPY assets ./assets
COPY viz_model ./viz_model
COPY serving ./serving
COPY ui ./ui
COPY scripts ./scripts
COPY deploy/entrypoint.sh ./deploy/entrypoint.sh

RUN useradd --create-home --uid 10001 app \
    && mkdir -p /data/runs \
    && chown 10001 /data/runs
USER 10001
VOLUME ["/data/runs"]
EXPOSE 8501

HEALTHCHECK --interval=30s --timeout=5s --start-period=300s --retries=3 \
    CMD ["sh", "-c", "curl -fsS http://127.0.0.1:${PORT}/_stcore/health || exit 1"]

ENTRYPOINT ["/app/deploy/entrypoint.sh"]
