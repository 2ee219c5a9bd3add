# The webhook server (and, once built, the admission worker) as a slim, non-root image.
# BASE: a Debian-like image with python3.11+ on PATH, named by digest (name@sha256:...), so a moved
# tag cannot change what is built. The default is the multi-arch index digest of
# python:3.11.10-slim-bookworm (README: "Supply chain" says where it comes from). A locally loaded
# stand-in has no registry digest: build it with --build-arg ALLOW_UNPINNED_BASE=1 (`make image
# BASE=... ALLOW_UNPINNED_BASE=1`); anything else unpinned is refused below.
ARG BASE=python:3.11.10-slim-bookworm@sha256:840e180ebcc6e5c8efab209c43f5e40fd2af98cb49db5c7103c90539c56bb30e
FROM ${BASE} AS build
ARG BASE
ARG ALLOW_UNPINNED_BASE=
RUN case "$BASE" in *@sha256:????????????????????????????????????????????????????????????????) ;; \
      *) [ "$ALLOW_UNPINNED_BASE" = 1 ] || { echo "BASE=$BASE has no @sha256:<digest>; pin it, or pass ALLOW_UNPINNED_BASE=1 for a local stand-in" >&2; exit 1; } ;; \
    esac
# Dependencies (and the build backend) from the hashed lock only, wheels only: a layer that is
# rebuilt when requirements/runtime.txt changes, not on every source edit.
COPY requirements/runtime.txt /tmp/runtime.txt
RUN python3 -m venv /opt/pykueue \
 && /opt/pykueue/bin/pip install --no-cache-dir --require-hashes --only-binary :all: -r /tmp/runtime.txt
WORKDIR /src
COPY pyproject.toml README.md ./
COPY webhook ./webhook
COPY certs ./certs
RUN /opt/pykueue/bin/pip install --no-cache-dir --no-deps --no-build-isolation . \
 && /opt/pykueue/bin/pip check

FROM ${BASE}
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin kueue
COPY --from=build /opt/pykueue /opt/pykueue
ENV PATH=/opt/pykueue/bin:$PATH
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["python", "-m", "webhook"]
CMD ["serve", "--in-cluster", "--cert-dir", "/tmp/k8s-webhook-server/serving-certs"]
