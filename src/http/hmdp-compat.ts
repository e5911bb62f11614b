import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * HMDP_COMPAT: the course's own front end (Vue 2 + axios pages) and its nginx config, unchanged.
 * That nginx strips `/api` (`rewrite /api(/.*) $1 break`) and hmdp answered at the root, so:
 *
 * - the API is also served without the prefix: `/user/code` is `/api/user/code` (a browser
 *   navigating, Accept: text/html, still gets the web app's page for its history URLs);
 * - on that surface refusals are answered as hmdp answers them, 200 with `success: false` and the
 *   `errorMsg` (the pages read it only from 200s), except 401, which its axios interceptor turns
 *   into the login page;
 * - the blog editor's `GET /upload/blog/delete?name=/imgs/blogs/…` names the image with the
 *   `/imgs` prefix it was shown under: the prefix is dropped.
 *
 * Off by default; `/api/...` answers exactly as without it.
 */
const API_ROOTS = /^\/(?:user|shop|shop-type|blog|follow|voucher|voucher-order|upload)(?:[/?]|$)/;
const DELETE_ROUTE = '/upload/blog/delete';

/** Fastify's `rewriteUrl`: the URL to route, `/api` + the URL for a call on the unprefixed surface. */
export function compatRewriteUrl(request: IncomingMessage): string {
  const url = request.url ?? '/';
  if (!API_ROOTS.test(url)) return url;
  if (request.method === 'GET' && request.headers.accept?.includes('text/html') === true) return url;
  return `/api${url.startsWith(`${DELETE_ROUTE}?`) ? withoutImgsPrefix(url) : url}`;
}

function withoutImgsPrefix(url: string): string {
  const query = new URLSearchParams(url.slice(DELETE_ROUTE.length + 1));
  const name = query.get('name');
  if (name?.startsWith('/imgs/') !== true) return url;
  query.set('name', name.slice('/imgs'.length));
  return `${DELETE_ROUTE}?${query.toString()}`;
}

/** Whether the request came in on the unprefixed surface (rewritten by compatRewriteUrl). */
const viaCompatSurface = (request: FastifyRequest): boolean => request.url.startsWith('/api') && !request.originalUrl.startsWith('/api');

/** Refusals on the unprefixed surface go out as 200 with the same `{success: false, errorMsg}` body. */
export function installCompatReplies(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (viaCompatSurface(request) && reply.statusCode >= 400 && reply.statusCode < 500 && reply.statusCode !== 401) {
      reply.header('x-hmdp-status', String(reply.statusCode)).code(200);
    }
    return payload;
  });
}
