# The headless service in a container: `docker build -t remote-assistant .` then
# `docker run -p 5000:5000 -v ra-data:/data -v "$PWD":/workspace remote-assistant`.
# The access token is in /data/service.json (generated at first start).

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build -- --production

# esbuild inlines every dependency: the runtime needs only the bundles, the WASM and the web page.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
COPY --from=build /src/dist /app/dist
COPY --from=build /src/media /app/media
# /data holds the access token, conversations and memory: the service's user alone may enter it.
RUN mkdir -p /data /workspace && chown node:node /data /workspace && chmod 700 /data
USER node
# Tools (files, run_command) work in the current directory: mount the project to work on here.
WORKDIR /workspace
VOLUME ["/data"]
EXPOSE 5000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s CMD ["node", "-e", "fetch('http://127.0.0.1:5000/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/dist/cli.js"]
# Published ports arrive from the container network's gateway: private ranges are allowed, the rest
# refused (HTTP 403 / WebSocket 4403). Override with `serve --data-dir /data --allow-from ...`.
CMD ["serve", "--data-dir", "/data", "--allow-from", "127.0.0.1,::1,10.*.*.*,172.*.*.*,192.168.*.*"]
