import type { FastifyInstance, FastifySchema, HTTPMethods } from 'fastify';

/** One registered route as Fastify saw it (HEAD routes Fastify adds for GETs are left out). */
export interface RouteEntry {
  method: HTTPMethods;
  url: string;
  schema: FastifySchema | undefined;
  /** `config: { public: true }` routes are open to anonymous users. */
  isPublic: boolean;
  /** The route's own body limit, if it sets one (else the server's). */
  bodyLimit: number | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered after trackRoutes(), for the API docs' and the abuse tests' checks. */
    routeTable: readonly RouteEntry[];
  }
}

/**
 * Records every route from now on (Fastify has no public route list). The OpenAPI test compares
 * the documentation against it, and the abuse test derives its hostile requests from it, so a
 * route added later is covered without editing either.
 */
export function trackRoutes(app: FastifyInstance): void {
  const routes: RouteEntry[] = [];
  app.decorate('routeTable', routes);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      routes.push({
        method,
        url: route.url,
        schema: route.schema,
        isPublic: route.config?.public === true,
        bodyLimit: route.bodyLimit,
      });
    }
  });
}
