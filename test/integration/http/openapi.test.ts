import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createTestEnv, type TestEnv } from '../../support/test-env.js';

let env: TestEnv;
let app: FastifyInstance;

beforeAll(async () => {
  env = await createTestEnv();
  // A front end of one page in the env's folder (removed by cleanup), so the single-page app's
  // fallback is there without building web/ (only the system tier builds it).
  const webRoot = join(tmpdir(), env.name, 'web');
  await mkdir(webRoot, { recursive: true });
  await writeFile(join(webRoot, 'index.html'), '<!doctype html><title>spa</title>');
  ({ app } = await buildTestApp(env, undefined, { webRoot }));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

type Operation = {
  summary?: string;
  tags?: string[];
  description?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ in: string; name: string; required?: boolean }>;
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, unknown>;
  'x-admin-only'?: boolean;
};
type Spec = { openapi: string; paths: Record<string, Record<string, Operation>> };

/** `/api/blog/:id` → `/api/blog/{id}`, as OpenAPI writes path parameters. */
const openApiPath = (url: string): string => url.replace(/:(\w+)/g, '{$1}');

async function spec(): Promise<Spec> {
  const response = await app.inject({ url: '/docs/json' });
  expect(response.statusCode).toBe(200);
  return response.json<Spec>();
}

describe('OpenAPI at /docs', () => {
  it('serves a valid OpenAPI 3.1 document', async () => {
    const document = await spec();
    expect(document.openapi).toBe('3.1.0');
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents every registered /api route, and nothing else, with a summary, tag, parameters and responses', async () => {
    const { paths } = await spec();
    const registered = app.routeTable.filter((route) => route.url.startsWith('/api/'));
    expect(registered.length).toBeGreaterThan(30);

    const documented = Object.entries(paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual(registered.map((route) => `${route.method} ${openApiPath(route.url)}`).sort());

    for (const route of registered) {
      const where = `${route.method} ${route.url}`;
      const operation = paths[openApiPath(route.url)]![route.method.toLowerCase()]!;
      expect(operation.summary, `${where} has no summary`).toMatch(/\w{3}/);
      expect(operation.tags, where).toHaveLength(1);
      expect(operation.responses, where).toHaveProperty('200');
      expect(operation.responses, where).toHaveProperty('400');
      // Every path parameter is declared, with its schema.
      const pathParams = [...route.url.matchAll(/:(\w+)/g)].map((match) => match[1]);
      const declared = (operation.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
      expect(declared.sort(), where).toEqual(pathParams.sort());
      // Query and body schemas appear as parameters / request body.
      const schema = route.schema as { querystring?: { properties: object }; body?: unknown } | undefined;
      if (schema?.querystring) {
        const query = (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
        expect(query.sort(), where).toEqual(Object.keys(schema.querystring.properties).sort());
      }
      if (schema?.body) expect(Object.keys(operation.requestBody?.content ?? {}), where).toEqual(['application/json']);
    }
  });

  it("marks the routes that need a login with the session scheme, and the administrators' routes", async () => {
    const { paths } = await spec();
    for (const route of app.routeTable.filter((entry) => entry.url.startsWith('/api/'))) {
      const operation = paths[openApiPath(route.url)]![route.method.toLowerCase()]!;
      if (route.isPublic) {
        expect(operation.security, route.url).toBeUndefined();
        expect(operation.responses).not.toHaveProperty('401');
      } else {
        expect(operation.security, route.url).toEqual([{ session: [] }]);
        expect(operation.responses).toHaveProperty('401');
      }
    }
    const adminOnly = Object.entries(paths)
      .flatMap(([path, operations]) =>
        Object.entries(operations)
          .filter(([, op]) => op['x-admin-only'])
          .map(([method]) => `${method.toUpperCase()} ${path}`),
      )
      .sort();
    // The routes whose schema carries ADMIN_ONLY (the abuse test checks that every route refusing
    // normal users with 403 carries it).
    const marked = app.routeTable
      .filter((route) => (route.schema as Record<string, unknown> | undefined)?.['x-admin-only'] === true)
      .map((route) => `${route.method} ${openApiPath(route.url)}`)
      .sort();
    expect(adminOnly).toEqual(marked);
    expect(adminOnly).toEqual(
      expect.arrayContaining(['POST /api/shop', 'PUT /api/shop', 'POST /api/voucher', 'POST /api/voucher/seckill', 'GET /api/stats/uv']),
    );
    expect(paths['/api/shop']!.post!.description).toContain('Administrators only');
    expect(paths['/api/upload/blog']!.post!.requestBody!.content).toHaveProperty('multipart/form-data');
  });

  it('serves Swagger UI at /docs with its assets from the app itself (no internet), without a login', async () => {
    const page = await app.inject({ url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('swagger-ui');
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(assets.length).toBeGreaterThan(2);
    for (const asset of assets) {
      expect(asset, 'an asset from another host').not.toMatch(/^(https?:)?\/\//);
      const url = new URL(asset, 'http://app/docs/').pathname;
      const response = await app.inject({ url });
      expect(response.statusCode, url).toBe(200);
    }
    const initializer = await app.inject({ url: '/docs/static/swagger-initializer.js' });
    expect(initializer.body).toContain("url: resolveUrl('./json')"); // /docs/ + json
  });

  it("keeps /docs out of the web front end's history fallback", async () => {
    expect((await app.inject({ url: '/docs/json' })).headers['content-type']).toMatch(/^application\/json/);
    const unknown = await app.inject({ url: '/docs/no-such-page' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ success: false });
    // Other unknown GETs still get the single-page app.
    const spa = await app.inject({ url: '/shops/1' });
    expect(spa.headers['content-type']).toMatch(/^text\/html/);
    expect(spa.body).toContain('<title>spa</title>');
  });
});
