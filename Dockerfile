# The webhook server (and, once built, the admission worker) as a slim, non-root image.
# BASE: any Debian-like image with python3.11+ and pip on PATH (`make image BASE=...`), e.g. a
# locally loaded one when no registry is reachable.
ARG BASE=python:3.11.10-slim-bookworm
FROM ${BASE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY webhook ./webhook
COPY certs ./certs
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${BASE}
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin kueue
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["python", "-m", "webhook"]
CMD ["serve", "--in-cluster", "--cert-dir", "/tmp/k8s-webhook-server/serving-certs"]
