import { randomBytes } from 'node:crypto';
import AjvModule from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ajvOptions } from '../../../../src/http/error-handling.js';
import { MAX_TARGET_LENGTH } from '../../../../src/http/request-target.js';
import { Text } from '../../../../src/http/schemas.js';
import type { RouteEntry } from '../../../../src/http/route-table.js';

// CommonJS default exports seen from ESM.
const Ajv = AjvModule.default;
const addFormats = addFormatsModule.default;

/**
 * Hostile requests derived from the routes' own schemas. For each route, a "base" request is
 * built that passes validation but names things that do not exist (so the service refuses it
 * and changes nothing); then every field of its params, query and body is replaced, one at a
 * time, by hostile values, required fields are dropped, extra ones added, the body is broken
 * and the token is forged. Whether each variant passes schema validation is decided by Ajv
 * with Fastify's own options, so the test knows when to demand exactly 400.
 */

type Part = 'params' | 'querystring' | 'body';
type Values = Record<string, unknown>;

export interface HostileRequest {
  /** What the case is, for the failure list. */
  name: string;
  route: RouteEntry;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  /** An exact status, or `null`: any answer below 500 (the input passes validation). */
  status: number | null;
  /** Also right: a path parameter that cannot be valid may not match the route at all (404, or 414 when too long). */
  orNotFound?: boolean;
}

/** Text that goes into a URL or a JSON body as it is, not encoded (malformed escapes, JSON literals). */
class Raw {
  constructor(readonly text: string) {}
}

/** An id no row has (the base of every id field, so the services refuse with 4xx). */
export const ABSENT_ID = '987654321';

const LONG = 'x'.repeat(10_000);

/** Values for a field in a path or query string (what a client can type there). */
const HOSTILE_TEXT: Array<string | Raw> = [
  '',
  ' ',
  '-1',
  '0',
  '1.5',
  '9223372036854775807', // 2^63 - 1
  '9223372036854775808', // 2^63
  '18446744073709551615', // 2^64 - 1
  '18446744073709551616', // 2^64
  '99999999999999999999999999',
  '1e309',
  '-1e309',
  'NaN',
  'Infinity',
  '0x10',
  '1 OR 1=1',
  "1' OR '1'='1",
  "'; DROP TABLE tb_user;--",
  '1; SELECT SLEEP(5)',
  '%',
  '../../etc/passwd',
  '..\\..\\windows\\win.ini',
  '/etc/passwd',
  'a\u0000b',
  '\u0000',
  'true',
  'null',
  'undefined',
  '[]',
  '{"$gt":""}',
  '<script>alert(1)</script>',
  '${jndi:ldap://x}',
  '💥\u202e\u0301ÿ中文',
  LONG,
  new Raw('%E0%A4%A'), // malformed percent-encoding
  new Raw('%00'),
  new Raw('..%2F..%2Fetc%2Fpasswd'),
  new Raw('%252e%252e%252f'),
];

/** Values only a JSON body can carry, besides the texts above. */
const HOSTILE_JSON: unknown[] = [
  null,
  true,
  false,
  -1,
  0,
  1.5,
  2 ** 63,
  2 ** 64,
  -(2 ** 63),
  Number.MAX_SAFE_INTEGER + 2,
  1e308,
  new Raw('1e309'),
  new Raw('-1e309'),
  new Raw('9007199254740993'), // reads as 9007199254740992: an id that lost a digit
  '2030-06-30T23:59:60Z', // a leap second: RFC 3339, but not a JavaScript Date
  ['1'],
  [],
  [1, 2],
  {},
  { $ne: 1 },
  { toString: 'x' },
];

/** Headers of requests without a valid session; a protected route must answer each with 401. */
export function forgedAuthorizations(deletedToken: string, someUserId: string, tokenHash: string): Array<[string, Record<string, string>]> {
  return [
    ['no token', {}],
    ['empty token', { authorization: '' }],
    ['forged token', { authorization: randomBytes(32).toString('base64url') }],
    ['forged Bearer token', { authorization: `Bearer ${randomBytes(32).toString('base64url')}` }],
    ['deleted (logged-out) token', { authorization: deletedToken }],
    ['a user id as token', { authorization: someUserId }],
    ['the session key hash as token', { authorization: tokenHash }],
    ['token with SQL', { authorization: "x' OR '1'='1" }],
    ['token with a path', { authorization: '../../etc/passwd' }],
    ['very long token', { authorization: 'a'.repeat(10_000) }],
    ['Bearer only', { authorization: 'Bearer ' }],
  ];
}

/** Valid samples of the patterned strings the schemas use (a new pattern must be added here). */
const PATTERN_SAMPLES: Record<string, string> = {
  '^[1-9][0-9]{0,18}$': ABSENT_ID,
  '^1[3-9][0-9]{9}$': '13999999999',
  '^[0-9]{6}$': '202601', // a login code, or a month yyyyMM
  '^[0-9]{4}-?[0-9]{2}-?[0-9]{2}$': '2026-01-01',
  '^[\\w/.,-]*$': '/blogs/0/0/none.png',
  // A person's text (src/http/schemas.ts Text), in each of its forms.
  ...Object.fromEntries(
    [{}, { mayBeEmpty: true }, { multiline: true }, { multiline: true, mayBeEmpty: true }].map((form) => [
      (Text({ maxLength: 255, ...form }) as Schema).pattern!,
      'abc',
    ]),
  ),
};

type Schema = {
  type?: string;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  anyOf?: Schema[];
  const?: unknown;
};

/** A value of `schema` that passes validation (for the base request). */
function sampleOf(schema: Schema, field: string): unknown {
  if (schema.anyOf) return sampleOf(schema.anyOf[0]!, field);
  if (schema.const !== undefined) return schema.const;
  if (schema.type === 'null') return null;
  if (schema.type === 'integer' || schema.type === 'number') {
    const low = schema.minimum ?? 0;
    const high = schema.maximum ?? Number.MAX_SAFE_INTEGER;
    return Math.min(Math.max(1, low), high);
  }
  if (schema.type === 'boolean') return false;
  if (schema.type !== 'string') throw new Error(`no sample for field ${field} of type ${schema.type ?? 'unknown'}: extend sampleOf`);
  if (schema.format === 'date-time') {
    // A sale window in the near future (beginTime before endTime).
    return new Date(Date.now() + (field.startsWith('end') ? 7_200_000 : 3_600_000)).toISOString();
  }
  if (schema.pattern !== undefined) {
    const sample = PATTERN_SAMPLES[schema.pattern];
    if (sample === undefined) throw new Error(`no sample for pattern ${schema.pattern} (field ${field}): add one to PATTERN_SAMPLES`);
    return sample;
  }
  return 'abc'.padEnd(schema.minLength ?? 0, 'x');
}

function baseOf(schema: Schema | undefined): Values | undefined {
  if (!schema?.properties) return undefined;
  return Object.fromEntries(Object.entries(schema.properties).map(([field, property]) => [field, sampleOf(property, field)]));
}

/**
 * Fastify's validators: its defaults (@fastify/ajv-compiler) plus the app's own options, to predict
 * its verdicts. Query strings and params are coerced, JSON bodies are not (src/http/validation.ts).
 */
const fastifyDefaults = { coerceTypes: 'array', useDefaults: true, removeAdditional: true, addUsedSchema: false } as const;
const ajv = addFormats(new Ajv({ ...fastifyDefaults, ...ajvOptions.customOptions }));
const bodyAjv = addFormats(new Ajv({ ...fastifyDefaults, ...ajvOptions.customOptions, coerceTypes: false }));

function passesValidation(schema: object, value: unknown, part: Part): boolean {
  return (part === 'body' ? bodyAjv : ajv).validate(schema, structuredClone(value));
}

interface Request {
  params?: Values;
  query?: Values;
  body?: unknown;
}

function encode(value: unknown): string {
  if (value instanceof Raw) return value.text;
  return encodeURIComponent(typeof value === 'string' ? value : JSON.stringify(value));
}

function urlOf(route: RouteEntry, { params, query }: Request): string {
  const path = route.url.replace(/:(\w+)/g, (_, name: string) => encode(params?.[name]));
  const pairs = Object.entries(query ?? {}).flatMap(([key, value]) =>
    value === undefined ? [] : Array.isArray(value) ? value.map((item) => `${key}=${encode(item)}`) : [`${key}=${encode(value)}`],
  );
  return pairs.length > 0 ? `${path}?${pairs.join('&')}` : path;
}

/** JSON text of a body, with Raw values (1e309) spliced in as they are. */
function jsonOf(body: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(body, (_key, value: unknown) => {
    if (value instanceof Raw) {
      raws.push(value.text);
      return `__raw_${raws.length - 1}__`;
    }
    return value;
  });
  return text.replace(/"__raw_(\d+)__"/g, (_, index: string) => raws[Number(index)]!);
}

export interface Context {
  /** Headers of a user allowed on every route (an administrator). */
  admin: Record<string, string>;
  /**
   * Headers for the ALWAYS_ACT routes (another user): should one of those requests get through
   * and log its user out, only that user's later requests would fail, not everyone's.
   */
  bystander: Record<string, string>;
  forged: Array<[string, Record<string, string>]>;
  /** A normal user: every route marked administrators-only must refuse it with 403. */
  normalUser: Record<string, string>;
  /** Server-wide body limit in bytes (a route may set its own). */
  bodyLimit: number;
  uploadMaxBytes: number;
}

/**
 * Routes whose valid request does something whatever its values (there is no id to point
 * elsewhere): only requests that fail validation or authentication are sent to them.
 */
export const ALWAYS_ACT = new Set(['POST /api/user/code', 'POST /api/user/sign', 'POST /api/user/logout', 'POST /api/user/logout-all']);

export const NORMAL_USER_ON_ADMIN_ROUTE = "a normal user on an administrators' route";
export const NORMAL_USER = 'a normal user';

export const routeKey = (route: RouteEntry): string => `${route.method} ${route.url}`;

export function isAdminOnly(route: RouteEntry): boolean {
  return (route.schema as Record<string, unknown> | undefined)?.['x-admin-only'] === true;
}

const isMultipart = (route: RouteEntry): boolean => ((route.schema as { consumes?: string[] } | undefined)?.consumes ?? []).includes('multipart/form-data');

export function hostileRequests(route: RouteEntry, context: Context): HostileRequest[] {
  const schemas = route.schema as Partial<Record<Part, Schema>> | undefined;
  const base: Request = { params: baseOf(schemas?.params), query: baseOf(schemas?.querystring), body: baseOf(schemas?.body) };
  const hasBody = route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH';
  const alwaysActs = ALWAYS_ACT.has(routeKey(route));
  const cases: HostileRequest[] = [];

  const actor = alwaysActs ? context.bystander : context.admin;
  const add = (name: string, request: Request, predicted: number | null, headers: Record<string, string> = actor, payload?: string | Buffer) => {
    const url = urlOf(route, request);
    // A target over the limit is refused before anything reads it (src/http/request-target.ts).
    const status = url.length > MAX_TARGET_LENGTH ? 414 : predicted;
    if (status === null && alwaysActs) return; // a valid request would act: not an abuse case
    const orNotFound = name.startsWith('params.');
    const jsonBody = payload === undefined && request.body !== undefined;
    cases.push({
      name,
      route,
      method: route.method,
      url,
      headers: { ...headers, ...(jsonBody ? { 'content-type': 'application/json' } : {}) },
      ...(jsonBody ? { payload: jsonOf(request.body) } : payload !== undefined ? { payload } : {}),
      status,
      orNotFound,
    });
  };
  const verdict = (part: Part, value: unknown): number | null => {
    const schema = schemas?.[part];
    if (schema === undefined) return null;
    // What the server will see: the body as JSON.parse reads it (1e309 → Infinity); a Raw text in
    // a URL may decode to anything, so it gets no prediction (any status below 500 will do).
    if (part === 'body') return passesValidation(schema, JSON.parse(jsonOf(value)), part) ? null : 400;
    if (Object.values(value as Values).some((item) => item instanceof Raw)) return null;
    return passesValidation(schema, value, part) ? null : 400;
  };

  // The base itself must pass validation, or every case below would test nothing but the base.
  for (const part of ['params', 'querystring', 'body'] as const) {
    const value = part === 'querystring' ? base.query : base[part];
    if (schemas?.[part] && verdict(part, value) !== null) throw new Error(`${routeKey(route)}: the base ${part} ${JSON.stringify(value)} fails validation`);
  }
  add('valid request naming absent things', base, null);

  // Each field replaced by each hostile value (texts everywhere, JSON values in bodies).
  for (const [part, key] of [
    ['params', 'params'],
    ['querystring', 'query'],
    ['body', 'body'],
  ] as const) {
    const values = base[key] as Values | undefined;
    if (!values) continue;
    for (const field of Object.keys(values)) {
      const candidates = part === 'body' ? [...HOSTILE_TEXT.filter((value) => !(value instanceof Raw)), ...HOSTILE_JSON] : HOSTILE_TEXT;
      for (const value of candidates) {
        const changed = { ...values, [field]: value };
        add(`${part}.${field} = ${describe(value)}`, { ...base, [key]: changed }, verdict(part, changed));
      }
      if (part === 'querystring')
        add(
          `querystring.${field} given twice`,
          { ...base, query: { ...values, [field]: [values[field], values[field]] } },
          verdict(part, { ...values, [field]: [values[field], values[field]] }),
        );
      if (part !== 'params' && (schemas?.[part]?.required ?? []).includes(field)) {
        const { [field]: _dropped, ...rest } = values;
        add(`${part}.${field} missing`, { ...base, [key]: rest }, verdict(part, rest));
      }
    }
    if (part !== 'params') {
      const extra = { ...values, extra: 'x', constructor: 'x', isAdmin: 'true', userId: '1' };
      add(`${part} with extra fields`, { ...base, [key]: extra }, verdict(part, extra));
    }
  }

  // Sessions: a protected route refuses every forged or stale token with 401.
  for (const [name, headers] of context.forged) add(`auth: ${name}`, base, route.isPublic ? null : 401, headers);
  // A normal user on an administrators' route: 403 before anything is done.
  // (On every other route a normal user gets no 403 for these absent things: the test checks
  // that a route refusing normal users is marked ADMIN_ONLY, so its documentation says so.)
  add(isAdminOnly(route) ? NORMAL_USER_ON_ADMIN_ROUTE : NORMAL_USER, base, isAdminOnly(route) ? 403 : null, context.normalUser);

  if (hasBody) cases.push(...bodyAbuse(route, base, actor, context, schemas?.body !== undefined, alwaysActs));
  return cases;
}

function bodyAbuse(
  route: RouteEntry,
  base: Request,
  actor: Record<string, string>,
  context: Context,
  hasSchema: boolean,
  alwaysActs: boolean,
): HostileRequest[] {
  const url = urlOf(route, base);
  const limit = route.bodyLimit ?? context.bodyLimit;
  const request = (name: string, contentType: string | undefined, payload: string | Buffer, status: number | null): HostileRequest => ({
    name,
    route,
    method: route.method,
    url,
    headers: { ...actor, ...(contentType ? { 'content-type': contentType } : {}) },
    payload,
    status,
  });
  const boundary = '----hostile';
  const multipartPart = (field: string, filename: string, content: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: image/png\r\n\r\n${content}\r\n`;
  const multipartType = `multipart/form-data; boundary=${boundary}`;

  if (isMultipart(route)) {
    return [
      request('JSON instead of multipart', 'application/json', '{"file":"x"}', 400),
      request('text instead of multipart', 'text/plain', 'hello', 415),
      request('multipart without a boundary', 'multipart/form-data', 'junk', 400),
      request('multipart that never ends', multipartType, `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nabc`, 400),
      request('multipart garbage', multipartType, 'garbage \u0000\u0001 garbage', 400),
      request('multipart with no parts', multipartType, `--${boundary}--\r\n`, 400),
      request('multipart with the file in another field', multipartType, `${multipartPart('image', 'a.png', 'x')}--${boundary}--\r\n`, 400),
      request('multipart with a text file', multipartType, `${multipartPart('file', 'a.png', 'not an image')}--${boundary}--\r\n`, 400),
      request(
        'multipart with a script named .png',
        multipartType,
        `${multipartPart('file', '../../x.png', '<?php system($_GET[1]); ?>')}--${boundary}--\r\n`,
        400,
      ),
      request(
        'multipart with two files',
        multipartType,
        `${multipartPart('file', 'a.png', 'x')}${multipartPart('file', 'b.png', 'y')}--${boundary}--\r\n`,
        400,
      ),
      request(
        'multipart file over the upload limit',
        multipartType,
        Buffer.concat([
          Buffer.from(multipartPart('file', 'a.png', '').slice(0, -2)),
          Buffer.alloc(context.uploadMaxBytes + 1024, 0x89),
          Buffer.from(`\r\n--${boundary}--\r\n`),
        ]),
        413,
      ),
    ];
  }
  const cases = [
    request('malformed JSON', 'application/json', '{"a":', 400),
    request('empty JSON body', 'application/json', '', 400),
    request('JSON with __proto__', 'application/json', '{"__proto__":{"isAdmin":true}}', 400),
    request('JSON with constructor.prototype', 'application/json', '{"constructor":{"prototype":{"isAdmin":true}}}', 400),
    request('JSON body over the limit', 'application/json', `{"a":"${'x'.repeat(limit)}"}`, 413),
    request('text body', 'text/plain', 'hello', 415),
    request('XML body', 'application/xml', '<a>1</a>', 415),
    request('form body', 'application/x-www-form-urlencoded', 'a=1&b=2', 415),
    request('multipart body', multipartType, `${multipartPart('file', 'a.png', 'x')}--${boundary}--\r\n`, 415),
    request('body without a content type', undefined, 'hello', 415),
  ];
  // A JSON value that is not an object: 400 where the route has a body schema, else ignored.
  for (const json of ['null', '[]', '[1,2]', '"text"', '123', 'true']) {
    const status = hasSchema ? 400 : null;
    if (status !== null || !alwaysActs) cases.push(request(`JSON ${json} as the body`, 'application/json', json, status));
  }
  return cases;
}

function describe(value: unknown): string {
  if (value instanceof Raw) return `raw ${value.text}`;
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 20)}… (${text.length} chars)` : text;
}
