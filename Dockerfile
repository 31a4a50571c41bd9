# syntax=docker/dockerfile:1
#
# bootwright: build with `docker build -t bootwright .`, run with
#   docker run --rm -p 8080:8080 -e BOOTWRIGHT_TOKENS='[{"name":"ops","sha256":"<hex>","scopes":["admin"]}]' bootwright
# The same image is the Cluster API bootstrap provider: `node dist/cli.js controller …`
# (deploy/cluster-api/bootstrap-components.yaml sets the command; BOOTWRIGHT_IMAGE names
# the image you pushed).
# Two stages on the same base, Node.js 24 LTS: `build` installs everything (compiling the
# native better-sqlite3 addon once, against the runtime's own Node), compiles TypeScript,
# then prunes the devDependencies; the final stage holds dist/, those node_modules and
# package.json.

# ---- build: full install, compile src/ to dist/, keep only the runtime dependencies --
FROM node:24-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 is a native addon: give node-gyp what it needs to build it from source
# rather than depend on downloading a prebuilt binary.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund && npm cache clean --force

# ---- runtime ----------------------------------------------------------------------
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production BOOTWRIGHT_HOST=0.0.0.0 BOOTWRIGHT_DATA_DIR=/var/lib/bootwright
WORKDIR /app
# A numeric, non-root user (Kubernetes `runAsNonRoot` can only verify a numeric USER).
# The data directory holds the generated admin token (mode 0600) and the SQLite store
# (bootwright.db, mode 0600, WAL mode: mount a volume here to keep the inventory).
RUN groupadd --system --gid 10001 bootwright \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin bootwright \
 && mkdir -p /var/lib/bootwright \
 && chown 10001:10001 /var/lib/bootwright \
 && chmod 0700 /var/lib/bootwright
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
USER 10001:10001
EXPOSE 8080
# No curl or wget in the image: node itself asks /healthz and exits non-zero unless 200.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "require('node:http').get('http://127.0.0.1:' + (process.env.BOOTWRIGHT_PORT || 8080) + '/healthz', (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"]
# The service finishes in-flight requests on SIGTERM (within 10 s) and exits 0. The exec
# form makes node PID 1, so the signal reaches it directly.
STOPSIGNAL SIGTERM
CMD ["node", "dist/cli.js", "serve"]
