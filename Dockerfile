# syntax=docker/dockerfile:1
# webhook-inbox as a container: the compiled service on Node 20, as a user without privileges.
#   docker build -t webhook-inbox .
#   docker run -p 3000:3000 -e STRIPE_WEBHOOK_SECRET=whsec_... -v inbox-data:/app/data webhook-inbox
# compose.yaml runs it with MariaDB and Redis; docs/operations.md#containers says more.

# Build: every dependency (TypeScript too), the sources compiled to dist/, then only what runs kept.
FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 compiles its native module where no prebuilt one fits.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
# `npm ci` runs `prepare`, which compiles src/ to dist/.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

# Run: Node, the production dependencies, the compiled service. No compiler, no sources.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    DATABASE_URL=sqlite:/app/data/webhook-inbox.db
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json LICENSE ./
COPY bin ./bin
# The embedded store's directory is the only place the service writes; everything else stays root's.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME /app/data
USER node
EXPOSE 3000
# /healthz answers 200 while the process serves; /readyz also asks the database (docs/operations.md).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT || 3000}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM from `docker stop` is a graceful shutdown: give it SHUTDOWN_TIMEOUT_MS (10 s) and more, `docker stop -t 20`.
CMD ["node", "bin/webhook-inbox.js", "serve"]
