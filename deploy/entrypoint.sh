#!/bin/sh
# The container's command: the app on 0.0.0.0:$PORT as one Streamlit process, or as N processes
# behind HAProxy with sticky sessions (serving/class_server.py) when VIZ_PROCESSES is above 1.
#   PORT                        the port to serve on (default 8501; Hugging Face Spaces: 7860)
#   VIZ_ADDRESS                 the address to listen on (default 0.0.0.0: every interface of the
#                               container; the image test, which shares the host's network, 127.0.0.1)
#   VIZ_PROCESSES               app processes in this container (default 1)
#   VIZ_TEACHER_PASSWORD_FILE   a file holding the teacher password (a Docker or Kubernetes
#                               secret, default /run/secrets/teacher_password when it exists);
#                               VIZ_TEACHER_PASSWORD, when set, wins
#   VIZ_RUNS_DIR                where training runs live (default /data/runs: mount a volume)
#   VIZ_DRY_RUN=1               print the command instead of running it (the tests use it)
set -eu
app_dir="${APP_DIR:-$(cd "$(dirname "$0")/.." && pwd)}"
port="${PORT:-8501}"
address="${VIZ_ADDRESS:-0.0.0.0}"
processes="${VIZ_PROCESSES:-1}"
secret="${VIZ_TEACHER_PASSWORD_FILE:-/run/secrets/teacher_password}"
export VIZ_RUNS_DIR="${VIZ_RUNS_DIR:-/data/runs}"

case "$processes" in
    '' | *[!0-9]* | 0) echo "VIZ_PROCESSES must be a whole number of at least 1, got '$processes'" >&2; exit 2 ;;
esac
if [ -z "${VIZ_TEACHER_PASSWORD:-}" ] && [ -r "$secret" ]; then
    VIZ_TEACHER_PASSWORD="$(cat "$secret")"
    export VIZ_TEACHER_PASSWORD
fi
mkdir -p "$VIZ_RUNS_DIR"
cd "$app_dir"

if [ "$processes" -eq 1 ]; then
    set -- python -m streamlit run app.py --server.address "$address" --server.port "$port" \
        --server.headless true --browser.gatherUsageStats false --server.fileWatcherType none
else
    set -- python -m serving.class_server start --processes "$processes" --port "$port" \
        --address "$address" --state-dir /tmp/class-server
fi
if [ "${VIZ_DRY_RUN:-}" = 1 ]; then
    echo "password: $([ -n "${VIZ_TEACHER_PASSWORD:-}" ] && echo set || echo none)"
    echo "runs: $VIZ_RUNS_DIR"
    echo "$@"
    exit 0
fi
exec "$@"
