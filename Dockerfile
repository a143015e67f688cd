# syntax=docker/dockerfile:1
# The cluster worker image: `sluice worker` running one job module, bundled at build time.
#
#   docker build --platform linux/amd64 --build-arg JOB=examples/kinesis-to-dynamodb.ts -t sluice-worker .
#   docker run sluice-worker --stream NAME --table NAME      # job flags; worker flags as SLUICE_* variables
#
# linux/amd64 only: @nxtedition/rocksdb ships no arm64 Linux prebuild (it would need a compiler in the image).
# The base image is pinned by exact tag and digest: the multi-platform index digest of node:20.20.2-bookworm-slim
# (node:20-bookworm-slim and node:20-slim point to the same), as public Dockerfiles pin it; Docker Hub itself was not
# reachable where this was written, so check it once with `docker buildx imagetools inspect node:20.20.2-bookworm-slim`.
# Bump tag and digest together, deliberately. Node 20 is past its end of life (April 2026): a newer major needs only
# this line (package.json asks for node >= 20).
# Checked offline by test/infra/dockerfile.test.ts (it also runs this ENTRYPOINT against a bundled job).
ARG NODE_IMAGE=node:20.20.2-bookworm-slim@sha256:2cf067cfed83d5ea958367df9f966191a942351a2df77d6f0193e162b5febfc0

# Production dependencies only: what the worker imports at run time (the RocksDB binding picks its linux-x64 prebuild).
FROM --platform=linux/amd64 ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# The job module and the files it imports, bundled by esbuild into one ES module; the engine stays an import.
# esbuild is a production dependency (through tsx), so the production node_modules serve here too.
FROM --platform=linux/amd64 ${NODE_IMAGE} AS build
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY . .
ARG JOB
RUN test -n "${JOB}" || { echo "the worker image needs the job module: --build-arg JOB=path/to/job.ts" >&2; exit 2; }
RUN node scripts/bundle-job.mjs "${JOB}" /app/out/image/job.mjs

FROM --platform=linux/amd64 ${NODE_IMAGE} AS worker
ENV NODE_ENV=production \
    SLUICE_STATE_DIR=/var/lib/sluice/state
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY bin ./bin
COPY lib ./lib
COPY functions/worker ./functions/worker
COPY --from=build /app/out/image/job.mjs ./job/job.mjs
# `sluice` on the PATH; the state dir (an EFS mount point replaces it) owned by the image's non-root user (uid 1000).
RUN ln -s /app/bin/sluice.js /usr/local/bin/sluice \
 && mkdir -p /var/lib/sluice/state \
 && chown -R node:node /var/lib/sluice
USER node
# SIGTERM goes to node itself (exec form, PID 1): the worker stops its slots and releases their leases first.
ENTRYPOINT ["sluice", "worker", "/app/job/job.mjs"]
