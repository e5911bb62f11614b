import { readFileSync } from 'node:fs';
import type { FastifyInstance, RouteOptions } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { Type } from 'typebox';
import { ADMIN_ONLY, ResultOf } from './schemas.js';

/** Where the API documentation is served: the UI at /docs, the OpenAPI document at /docs/json. */
export const DOCS_PREFIX = '/docs';

/** The security scheme of routes that need a login: the session token in `authorization`. */
export const SESSION_SCHEME = 'session';

const ErrorResult = {
  type: 'object',
  required: ['success', 'errorMsg'],
  properties: {
    success: { type: 'boolean', const: false },
    errorMsg: { type: 'string', description: 'What was wrong, for a human (names the field for a bad request)' },
  },
};

/** The answer of a route that declares none: hmdp's wrapper, `data` depending on the route. */
const SuccessResult = ResultOf(Type.Unknown({ description: 'the result; absent when there is none. 64-bit ids are decimal strings' }));

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ErrorResult } } });

/**
 * OpenAPI 3.1 generated from the routes' TypeBox schemas (@fastify/swagger), and Swagger UI at
 * /docs (@fastify/swagger-ui: its assets are served by the app, so it works without internet).
 * Must be registered before the routes, whose onRoute events it records. Only /api is
 * documented; whether a route needs a login comes from its `config.public`, tags from its path.
 */
export async function installOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'hmdp-ts API',
        version: packageVersion(),
        description:
          'Every answer is `{success, errorMsg, data, total}` (null fields omitted); 64-bit ids are decimal strings. ' +
          'Routes with a lock need a login: send the token returned by `POST /api/user/login` in the `authorization` header ' +
          '(raw or `Bearer <token>`). Routes marked "Administrators only" answer 403 to other users.',
      },
      components: {
        securitySchemes: {
          [SESSION_SCHEME]: { type: 'apiKey', in: 'header', name: 'authorization', description: 'The token from POST /api/user/login' },
        },
      },
    },
    transform: ({ schema, url, route }) => documentRoute(schema as RouteSchema | undefined, url, route),
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: DOCS_PREFIX,
    uiConfig: { docExpansion: 'list', deepLinking: true, persistAuthorization: true },
  });
}

type RouteSchema = Record<string, unknown> & { response?: Record<string, unknown> };

function documentRoute(schema: RouteSchema | undefined, url: string, route: RouteOptions): { schema: RouteSchema; url: string } {
  if (!url.startsWith('/api/')) return { schema: { ...schema, hide: true }, url };
  const isPublic = route.config?.public === true;
  const adminOnly = schema?.[ADMIN_ONLY_KEY] === true;
  const notes = [isPublic ? 'Public.' : 'Needs a login (401 without a valid session).', adminOnly ? 'Administrators only (403 for other users).' : ''].filter(
    Boolean,
  );
  const documented: RouteSchema = {
    ...schema,
    ...(isMultipart(schema) && !schema?.body ? { body: MultipartFile } : {}),
    tags: schema?.tags ?? [tagOf(url)],
    description: [schema?.description, ...notes].filter(Boolean).join(' '),
    response: {
      200: { description: 'The result in the wrapper', content: { 'application/json': { schema: SuccessResult } } },
      400: errorResponse('Bad input: the message names the field'),
      ...(isPublic ? {} : { 401: errorResponse('No valid session: log in first') }),
      ...(adminOnly ? { 403: errorResponse('Not an administrator') } : {}),
      ...schema?.response,
    },
  };
  if (!isPublic) documented.security = [{ [SESSION_SCHEME]: [] }];
  return { schema: documented, url };
}

/** Multipart routes parse their body in the handler (@fastify/multipart); documented here only. */
const MultipartFile = {
  type: 'object',
  required: ['file'],
  properties: { file: { type: 'string', format: 'binary', description: 'the image' } },
};

const isMultipart = (schema: RouteSchema | undefined): boolean => Array.isArray(schema?.consumes) && schema.consumes.includes('multipart/form-data');

const ADMIN_ONLY_KEY = Object.keys(ADMIN_ONLY)[0]!;

/** `/api/voucher-order/seckill/:id` → `voucher-order`: one group per resource. */
function tagOf(url: string): string {
  return url.split('/')[2] ?? 'api';
}

/** The version in package.json (src/http and dist/http are both two levels down). */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
  return manifest.version ?? '0.0.0';
}
