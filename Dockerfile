# The FrogNano service image: one image for `frognano serve` (the webhook receiver) and
# `frognano worker` (the job runner). The Helm chart (charts/frognano) runs it as uid/gid 10001
# with a read-only root filesystem and picks the role with `args`. docs/sandbox-image.md
# describes it. Build it from the repository root:
#
#   docker build -t frognano:0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#
# Both stages start from the same base image on purpose: the virtual environment built in the
# first is copied into the second, and its bin/python is a symlink to the base image's
# /usr/local/bin/python3.11. The tag is pinned; for reproducible builds pin the digest as well,
# in both FROM lines (`FROM python:3.11-slim-bookworm@sha256:<digest>`, the digest from
# `docker buildx imagetools inspect python:3.11-slim-bookworm`), and let Renovate or
# Dependabot move it.

FROM python:3.11-slim-bookworm AS builder

# No pip cache in any layer, and no version check: nothing would act on it during a build.
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A C toolchain, for a dependency without a wheel for the target platform (hiredis and
# pydantic-core publish wheels for amd64 and arm64, so usually nothing is compiled). It never
# leaves this stage.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# Only what the wheel is built from; .dockerignore keeps everything else out of the context.
COPY pyproject.toml README.md ./
COPY service ./service

# Build this project's wheel, then install it and its dependencies into a fresh virtual
# environment, the only thing the runtime stage takes from here. pip compiles every module to
# bytecode while installing, so no import needs to write any under a read-only root.
RUN python -m pip wheel --no-deps --wheel-dir /tmp/wheels . \
 && python -m venv /opt/frognano \
 && /opt/frognano/bin/pip install /tmp/wheels/frognano-*.whl


FROM python:3.11-slim-bookworm AS runtime

# VERSION follows frognano.__version__ (a test checks it); pass REVISION, the git commit, when
# building. The creation time is left to CI (`--label org.opencontainers.image.created=...`)
# so the same sources give the same image.
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="frognano" \
      org.opencontainers.image.description="FrogNano GitHub App: webhook receiver (frognano serve) and worker (frognano worker)" \
      org.opencontainers.image.url="https://github.com/frognano/frognano" \
      org.opencontainers.image.source="https://github.com/frognano/frognano" \
      org.opencontainers.image.documentation="https://github.com/frognano/frognano/blob/main/docs/sandbox-image.md" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11-slim-bookworm"

# tini runs as PID 1: the kernel gives PID 1 no default signal handling, and tini forwards
# SIGTERM to frognano, whose graceful stop (serve: finish requests in flight; worker: finish or
# hand back jobs) depends on it, and reaps zombies. Nothing else is installed: the worker
# unpacks each repository's tarball in Python, and every git, tar and test command runs in
# the sandbox pod, never in this container.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*

# The chart runs every pod as uid/gid 10001 (runAsUser, runAsGroup, fsGroup). The same numbers
# here make a plain `docker run` non-root as well. No login shell and no password;
# --no-log-init keeps a high uid from creating a huge sparse /var/log/faillog.
# /var/lib/frognano holds trajectories (the chart mounts an emptyDir there); the policy folder
# belongs to root, so the service cannot change its own policy.
RUN groupadd --gid 10001 frognano \
 && useradd --uid 10001 --gid 10001 --no-log-init --no-create-home \
      --home-dir /var/lib/frognano --shell /usr/sbin/nologin frognano \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/frognano /var/lib/frognano/trajectories \
 && install -d -o root -g root -m 0755 /etc/frognano /etc/frognano/policies

COPY --from=builder /opt/frognano /opt/frognano
# The shipped default policy, where FROGNANO_POLICY_DIR points. The chart mounts its policy
# ConfigMap (the same file as 00-default.yaml, plus yours) over this folder.
COPY --chmod=0644 policies/00-default.yaml /etc/frognano/policies/00-default.yaml

# Every FROGNANO_* variable must be a setting (docs/configuration.md): FrogNano refuses to
# start on an unknown one. The paths are the ones the chart mounts; JSON logs suit a log
# collector (set FROGNANO_LOG_FORMAT=console for a terminal). No secret is set here: pass
# FROGNANO_WEBHOOK_SECRET_FILE and FROGNANO_GITHUB_PRIVATE_KEY_FILE at run time.
ENV PATH=/opt/frognano/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    FROGNANO_POLICY_DIR=/etc/frognano/policies \
    FROGNANO_TRAJECTORY_DIR=/var/lib/frognano/trajectories \
    FROGNANO_LOG_FORMAT=json

WORKDIR /var/lib/frognano
USER 10001:10001
EXPOSE 8080

# For plain `docker run`; Kubernetes ignores HEALTHCHECK and uses the chart's probes. It reads
# the role from PID 1's command line (tini -- frognano ...): `serve` gets GET /healthz on its
# --port, `worker` a TCP connect to its --metrics-port, and a worker without one, or any
# other command, passes, since there is nothing to ask.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import socket, urllib.request; \
a = [p for x in open('/proc/1/cmdline').read().split('\\0') for p in (x.split('=', 1) if x[:2] == '--' else [x])]; \
opt = lambda name, default: int(a[a.index(name) + 1]) if name in a else default; \
port = opt('--port', 8080) if 'serve' in a else opt('--metrics-port', 0) if 'worker' in a else 0; \
port and ('serve' in a and urllib.request.urlopen(f'http://127.0.0.1:{port}/healthz', timeout=4) or socket.create_connection(('127.0.0.1', port), 4))"]

ENTRYPOINT ["tini", "--", "frognano"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
