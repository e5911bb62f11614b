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
 * - the blog editor names each picture by the URL it shows it at, `/imgs` + the upload's name: the
 *   delete, `GET /upload/blog/delete?name=/imgs/blogs/…`, drops the prefix here; `POST /blog`
 *   takes such names too (blog-routes.ts asks `viaCompatSurface`) and stores them as sent, as hmdp does.
 *
 * Off by default; `/api/...` answers exactly as without it.
 */
const API_ROOTS = /^\/(?:user|shop|shop-type|blog|follow|voucher|voucher-order|upload)(?:[/?]|$)/;
const DELETE_ROUTE = '/upload/blog/delete';

/**
 * Where the course's pages show an upload: its nginx serves the upload folder at /imgs, so its
 * editor names the picture `/blogs/1/14/….jpg` as `/imgs/blogs/1/14/….jpg`.
 */
export const HMDP_IMAGES_URL = '/imgs';

/** The upload's name of a picture the course's pages name by its URL; any other name as it is. */
export function uploadNameOfShown(name: string): string {
  return name.startsWith(`${HMDP_IMAGES_URL}/`) ? name.slice(HMDP_IMAGES_URL.length) : name;
}

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
  if (name === null || uploadNameOfShown(name) === name) return url;
  query.set('name', uploadNameOfShown(name));
  return `${DELETE_ROUTE}?${query.toString()}`;
}

/** Whether the request came in on the unprefixed surface (rewritten by compatRewriteUrl): only HMDP_COMPAT has one. */
export const viaCompatSurface = (request: FastifyRequest): boolean => request.url.startsWith('/api') && !request.originalUrl.startsWith('/api');

/** Refusals on the unprefixed surface go out as 200 with the same `{success: false, errorMsg}` body. */
export function installCompatReplies(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (viaCompatSurface(request) && reply.statusCode >= 400 && reply.statusCode < 500 && reply.statusCode !== 401) {
      reply.header('x-hmdp-status', String(reply.statusCode)).code(200);
    }
    return payload;
  });
}
