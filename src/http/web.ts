import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import fastifyStatic from '@fastify/static';

/** web/dist of the repository: src/http/web.ts and dist/http/web.js are both two levels down. */
export const DEFAULT_WEB_ROOT = fileURLToPath(new URL('../../web/dist', import.meta.url));

/** Paths that never fall back to the single-page app (they have owners of their own). */
const NOT_SPA = /^\/(api|imgs|metrics|docs)(\/|$|\?)/;

/**
 * Serves the built web front end (web/, `npm run build:web`) at `/`: its files as they are
 * (hashed assets cached for a year, index.html never), and index.html for any other GET outside
 * /api, /imgs, /metrics and /docs, so the Vue router's history URLs load on refresh. Without a build
 * nothing is registered and those paths stay 404.
 */
export async function serveWeb(app: FastifyInstance, root = DEFAULT_WEB_ROOT): Promise<void> {
  const indexFile = join(root, 'index.html');
  if (!existsSync(indexFile)) {
    app.log.warn({ root }, 'web front end not built (npm run build:web): / is not served');
    return;
  }
  await app.register(fastifyStatic, {
    root,
    prefix: '/',
    decorateReply: false,
    // Routes per file found now, so the catch-all below owns every other path.
    wildcard: false,
    index: false,
    dotfiles: 'deny',
    setHeaders: (reply, path) => {
      reply.header('cache-control', path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  app.get('/*', { config: { public: true } }, async (request, reply) => {
    if (NOT_SPA.test(request.url)) return reply.callNotFound();
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(readFileSync(indexFile));
  });
}
