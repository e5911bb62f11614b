import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { serverOpenApiDocument } from '../../../scripts/api-types.js';
import { isTexts } from '../../../src/http/error-handling.js';
import { negotiateLanguage } from '../../../src/http/language.js';
import { defineMessages, interpolate, registeredMessages, render } from '../../../src/lib/messages/index.js';

/**
 * The message catalogues (src/lib/messages): every message in both languages, and no
 * English sentence on its way to a client without a code. New messages go into a module's
 * messages.ts; this test then checks them with the rest.
 */
const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));
const CJK = /[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]/;

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Imports every file that defines a catalogue, so that all of them are registered. */
async function loadCatalogues(): Promise<string[]> {
  const files = sourceFiles().filter((file) => /\bdefineMessages\(/.test(readFileSync(file, 'utf8')) && !file.endsWith('/lib/messages/messages.ts'));
  for (const file of files) await import(pathToFileURL(file).href);
  return files.map((file) => relative(SRC, file));
}

describe('message catalogues', () => {
  it('give every message a Chinese and an English text', async () => {
    const files = await loadCatalogues();
    expect(files).toEqual(expect.arrayContaining(['http/http-messages.ts', 'modules/seckill/messages.ts', 'modules/users/messages.ts']));
    const catalogue = registeredMessages();
    expect(catalogue.size).toBeGreaterThan(50);
    const problems: string[] = [];
    for (const [code, texts] of catalogue) {
      if (typeof texts.en !== 'string' || texts.en.trim() === '') problems.push(`${code}: no English text`);
      if (typeof texts.zh !== 'string' || texts.zh.trim() === '') problems.push(`${code}: no Chinese text`);
      else if (!CJK.test(texts.zh)) problems.push(`${code}: the Chinese text has no Chinese in it: ${texts.zh}`);
      if (CJK.test(texts.en)) problems.push(`${code}: the English text has Chinese in it: ${texts.en}`);
      for (const text of [texts.en, texts.zh]) {
        if (/\{(?!\w+\})/.test(text)) problems.push(`${code}: a brace that is not a {parameter}: ${text}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('name each message by its module and key, once', () => {
    const first = defineMessages('test-scope', { hello: { en: 'Hello {name}', zh: '你好，{name}' } });
    expect(first.hello.code).toBe('test-scope.hello');
    expect(render(first.hello({ name: 'Li' }), 'zh')).toBe('你好，Li');
    expect(render(first.hello({ name: 'Li' }), 'en')).toBe('Hello Li');
    expect(() => defineMessages('test-scope', { hello: { en: 'Hi', zh: '嗨' } })).toThrow(/test-scope.hello is defined twice/);
  });

  it('hold the texts the web app recognises (sold out marks the voucher as such)', async () => {
    const { SECKILL_MESSAGES } = await import('../../../src/modules/seckill/messages.js');
    const page = readFileSync(fileURLToPath(new URL('../../../web/src/pages/ShopDetailPage.vue', import.meta.url)), 'utf8');
    expect(page).toContain(`'${SECKILL_MESSAGES.soldOut.texts.zh}'`);
    expect(page).toContain(`'${SECKILL_MESSAGES.soldOut.texts.en}'`);
  });

  it('fill in parameters, leaving unknown names as written', () => {
    expect(interpolate('Order {orderId} of {voucherId}', { orderId: 7 })).toBe('Order 7 of {voucherId}');
    expect(interpolate('{a}{a}', { a: '{a}' })).toBe('{a}{a}');
  });
});

describe('English sentences without a code', () => {
  /**
   * Shapes that put a literal sentence into an answer: an HttpError helper or a refusal given a
   * string, `fail('…')`, a schema's `errorMessage: '…'` (TypeScript already refuses the first
   * ones: HttpError takes a Message; this also catches them in code that casts).
   */
  const RAW_MESSAGE = [
    /\b(?:badRequest|unauthorized|forbidden|notFound|tooManyRequests)\(\s*[`'"]/,
    /\bnew (?:HttpError|SaleRefused)\([^()]*?,\s*[`'"]/,
    /\bnew (?:InvalidInput|NotFound|Conflict|GateRefused|TemporarilyUnavailable)\(\s*[`'"]/,
    /\bfail\(\s*[`'"]/,
    /\berrorMessage:\s*[`'"]/,
    /\berrorMessage:\s*\{\s*\w+:\s*[`'"]/,
    /\bdeadlineMessage:\s*[`'"]/,
  ];

  it('appear nowhere in src (write a catalogue entry in the module messages.ts instead)', () => {
    const offenders = sourceFiles().flatMap((file) => {
      const lines = readFileSync(file, 'utf8').split('\n');
      return lines.flatMap((line, index) => (RAW_MESSAGE.some((pattern) => pattern.test(line)) ? [`${relative(SRC, file)}:${index + 1}: ${line.trim()}`] : []));
    });
    expect(offenders).toEqual([]);
  });

  it('are caught by the check', () => {
    const caught = (line: string) => RAW_MESSAGE.some((pattern) => pattern.test(line));
    expect(caught("throw badRequest('Wrong code');")).toBe(true);
    expect(caught('throw notFound(`Shop ${id} not found`);')).toBe(true);
    expect(caught("throw new HttpError(409, 'Busy');")).toBe(true);
    expect(caught("throw new SaleRefused('limit', 'Limit reached');")).toBe(true);
    expect(caught("throw new Conflict('Not payable');")).toBe(true);
    expect(caught("reply.send(fail('Nope'));")).toBe(true);
    expect(caught("Type.String({ errorMessage: 'must be a date' })")).toBe(true);
    expect(caught("{ errorMessage: { minProperties: 'give one' } }")).toBe(true);
    expect(caught('throw badRequest(USER_MESSAGES.wrongCode());')).toBe(false);
    expect(caught('errorMessage: USER_MESSAGES.phoneFormat.texts,')).toBe(false);
  });
});

/**
 * A schema's own `errorMessage` says what a value must be; the error formatter puts the field in
 * front of it (`body.buckets must be…`, `…（body.buckets）`). A text that named the field itself
 * read "body.buckets body.buckets must be…" (issue 40, item 7a). Checked over every route's
 * schemas, as the OpenAPI document carries them.
 */
describe("the route schemas' own error texts", () => {
  /** Every `errorMessage` text under `node`, with where it is. */
  const errorMessages = (node: unknown, path: string): Array<[string, string]> => {
    if (node === null || typeof node !== 'object') return [];
    return Object.entries(node).flatMap(([key, value]) => (key === 'errorMessage' ? textsOf(value, path) : errorMessages(value, `${path}/${key}`)));
  };
  /** An errorMessage's texts: both languages, for every keyword or per keyword. */
  const textsOf = (errorMessage: unknown, path: string): Array<[string, string]> =>
    isTexts(errorMessage)
      ? [
          [`${path} en`, errorMessage.en],
          [`${path} zh`, errorMessage.zh],
        ]
      : Object.entries(errorMessage as Record<string, unknown>).flatMap(([keyword, texts]) => textsOf(texts, `${path} (${keyword})`));
  let texts: Array<[string, string]>;

  beforeAll(async () => {
    texts = errorMessages(await serverOpenApiDocument(), '');
  }, 60_000);

  it('are all found (the OpenAPI document carries them)', () => {
    expect(texts.length).toBeGreaterThan(50);
    expect(texts.map(([, text]) => text)).toContain('must be a whole number from 1 to 8');
  });

  it('never name a field: the formatter does', () => {
    expect(texts.filter(([, text]) => /\b(?:body|querystring|params|headers)\.\w/.test(text))).toEqual([]);
  });
});

describe('negotiateLanguage', () => {
  const pick = (header: string | undefined, fallback: 'zh' | 'en' = 'zh') =>
    negotiateLanguage(header === undefined ? {} : { 'accept-language': header }, fallback);

  it('reads Chinese and English in every region, by q-value', () => {
    expect(pick('zh')).toBe('zh');
    expect(pick('zh-CN,zh;q=0.9,en;q=0.8', 'en')).toBe('zh');
    expect(pick('zh-TW', 'en')).toBe('zh');
    expect(pick('zh-Hant-HK', 'en')).toBe('zh');
    expect(pick('en-US,en;q=0.9')).toBe('en');
    expect(pick('en-GB')).toBe('en');
    expect(pick('EN-us')).toBe('en');
    expect(pick('en;q=0.5, zh;q=0.9', 'en')).toBe('zh');
    expect(pick('fr-FR, en;q=0.8, zh;q=0.1')).toBe('en');
  });

  it('falls back to the default without a header, for * and for other languages only', () => {
    expect(pick(undefined)).toBe('zh');
    expect(pick(undefined, 'en')).toBe('en');
    expect(pick('*')).toBe('zh');
    expect(pick('*', 'en')).toBe('en');
    expect(pick('fr, de;q=0.5')).toBe('zh');
    expect(pick('en;q=0')).toBe('zh');
    expect(pick('')).toBe('zh');
    expect(pick(',;;q=x, ,')).toBe('zh');
  });
});
