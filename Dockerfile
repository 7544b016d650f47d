# syntax=docker/dockerfile:1
#
# Stages:
#   build    all dependencies, `npm run build` (dist/: server, migrations, scripts, page bundles)
#   chain    the build stage running the local Hardhat chain with the test token (sandbox only)
#   runtime  production dependencies + dist/, non-root, NODE_ENV=production (API, worker, migrate, seed)
#
# Node 22: every dependency's engine range holds there (nestjs-pino and file-type ask for >= 22).
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# `npm install`, not `npm ci`: the lockfile is made without optional platform entries (see .ci/run).
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund --loglevel=error
COPY . .
RUN npm run build \
 && node -r @swc-node/register -e "require('./scripts/chain/compile-contracts').loadTokenArtifact()" \
 && mkdir -p .tmp \
 && chown -R node:node .tmp artifacts

FROM build AS chain
USER node
EXPOSE 8545
CMD ["node", "-r", "@swc-node/register", "scripts/docker-chain.ts"]

FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund --loglevel=error && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=prod-deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json ./
# /data: where the sandbox seed leaves its key for docker-pay (a named volume takes this ownership).
RUN mkdir -p /data && chown node:node /data
USER node
# PORT (public), ADMIN_PORT (admin), WORKER_ADMIN_PORT (worker-only health and metrics)
EXPOSE 3000 3001 3002
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "dist/scripts/docker-healthcheck.js"]
CMD ["node", "dist/src/main.js", "--api"]
