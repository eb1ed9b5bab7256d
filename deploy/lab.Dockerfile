# The dashboard image: the runtime set only (requirements.txt, every pin hashed; no test tools), on a base
# pinned by digest: python:3.11-slim as docker-library/repo-info recorded it (Python 3.11.15, Debian trixie,
# the multi-platform index). To move it: `docker pull python:3.11-slim` and put the digest that
# `docker inspect --format '{{index .RepoDigests 0}}' python:3.11-slim` prints here.
FROM python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff
WORKDIR /lab
COPY requirements.txt .
# The pip that requirements.txt pins first, by its hash (as scripts/lab.sh does), then the rest with it.
RUN awk '/^pip==/ {p = 1; print; next} p && /^ +--hash=/ {print; next} {p = 0}' requirements.txt > /tmp/pip.txt \
    && grep -q '^pip==' /tmp/pip.txt \
    && python -m pip install --no-cache-dir --disable-pip-version-check --require-hashes -r /tmp/pip.txt \
    && python -m pip install --no-cache-dir --disable-pip-version-check --require-hashes -r requirements.txt \
    && rm /tmp/pip.txt
COPY . .
EXPOSE 8501
# Inside the container the dashboard must listen on all interfaces; compose publishes it on 127.0.0.1 only.
CMD ["python", "-m", "streamlit", "run", "streamlit_app.py", "--server.address", "0.0.0.0", "--server.port", "8501"]
