import { AjvCompiler, type ValidatorFactory } from '@fastify/ajv-compiler';
import type { FuncKeywordDefinition, KeywordDefinition, SchemaValidateFunction } from 'ajv';
import { KNOWN_FIELDS } from './schemas.js';

/** What Fastify hands a compiler per schema (its published types describe the Ajv call instead). */
type Compile = (route: { httpPart?: string }) => unknown;
type BuildCompiler = (externalSchemas: unknown, options?: { customOptions?: object }) => Compile;
type DataContext = Parameters<SchemaValidateFunction>[3];

/**
 * Fastify's validator compiler (@fastify/ajv-compiler, the app's Ajv options), in two flavours:
 * query strings, params and headers are text, so their values are coerced to the schema's types
 * (`?current=2` → 2); JSON bodies already carry types, so nothing is coerced there. With
 * coercion, `{"title":123}` became "123" and `{"shopId":["1"]}` became "1": a client's mistake
 * (or probe) passed silently.
 */
export function validatorPerHttpPart(): ValidatorFactory {
  const pool = AjvCompiler() as unknown as BuildCompiler;
  const build: BuildCompiler = (externalSchemas, options) => {
    const coercing = pool(externalSchemas, options);
    const strict = pool(externalSchemas, { ...options, customOptions: { ...options?.customOptions, coerceTypes: false } });
    return (route) => (route.httpPart === 'body' ? strict(route) : coercing(route));
  };
  return build as unknown as ValidatorFactory;
}

/**
 * `x-id-string`: a safe-integer number where an id is expected in a JSON body is replaced by its
 * decimal string, so handlers see ids as strings whichever the client sent (hmdp's front end
 * sends some ids as numbers). Validation itself is the schema's `anyOf` (IdBody).
 */
const idStringKeyword: FuncKeywordDefinition = {
  keyword: 'x-id-string',
  modifying: true,
  schemaType: 'boolean',
  validate: (_schema: boolean, data: unknown, _parentSchema?: unknown, context?: DataContext): boolean => {
    if (typeof data === 'number' && Number.isSafeInteger(data) && data >= 1 && context !== undefined) {
      (context.parentData as Record<string | number, unknown>)[context.parentDataProperty] = String(data);
    }
    return true;
  },
};

/** Instants the database can store: from 1970 to the end of year 9999 (DATETIME's upper bound). */
const EARLIEST_INSTANT = Date.UTC(1970, 0, 1);
const LATEST_INSTANT = Date.UTC(9999, 11, 31);

/**
 * `x-instant`: a `date-time` string JavaScript can parse into a storable instant. RFC 3339 allows
 * leap seconds (`23:59:60Z`), which ajv-formats accepts and `Date` cannot represent: such a value
 * reached the insert as an Invalid Date (a 500).
 */
const instantKeyword: FuncKeywordDefinition = {
  keyword: 'x-instant',
  schemaType: 'boolean',
  validate: (_schema: boolean, data: unknown): boolean => {
    if (typeof data !== 'string') return true; // the type keyword reports it
    const time = Date.parse(data);
    return Number.isFinite(time) && time >= EARLIEST_INSTANT && time <= LATEST_INSTANT;
  },
};

/** The failure of `x-known-fields`: the fields sent that the schema does not name, and those it names. */
export interface UnknownFieldsParams {
  unknown: string[];
  known: string[];
}

/** `x-known-fields`'s validate, with the `errors` Ajv reads from it after a failure. */
type KnownFieldsCheck = SchemaValidateFunction & { errors?: Array<{ keyword: string; params: UnknownFieldsParams; message: string }> };

/**
 * `x-known-fields` (on an object schema): every field sent must be one of its `properties`. Ajv's
 * removeAdditional drops unnamed fields silently, so a misspelt setting (`limitperuser`) became
 * the default; this refuses the body instead, in one error naming every unknown field and listing
 * the known ones, read from the schema itself so the list cannot drift from it.
 */
const knownFields: KnownFieldsCheck = (_schema: boolean, data: unknown, parentSchema?: unknown): boolean => {
  const known = Object.keys((parentSchema as { properties?: object } | undefined)?.properties ?? {});
  const unknown = Object.keys(data as object).filter((name) => !known.includes(name));
  if (unknown.length === 0) return true;
  knownFields.errors = [{ keyword: KNOWN_FIELDS, params: { unknown, known }, message: `has unknown fields ${unknown.join(', ')}` }];
  return false;
};

const knownFieldsKeyword: FuncKeywordDefinition = { keyword: KNOWN_FIELDS, type: 'object', schemaType: 'boolean', errors: true, validate: knownFields };

/** The app's own Ajv keywords (`errorMessage` is an annotation the error formatter reads). */
export const AJV_KEYWORDS: Array<string | KeywordDefinition> = ['errorMessage', idStringKeyword, instantKeyword, knownFieldsKeyword];
