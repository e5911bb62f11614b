import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, answerErrors, answerOf, type ErrorAnswer } from '../../../src/http/error-answers.js';
import { installErrorHandling } from '../../../src/http/error-handling.js';
import { HttpError } from '../../../src/http/errors.js';
import { installLanguages } from '../../../src/http/language.js';
import { defineMessages, type Message } from '../../../src/lib/messages/index.js';

/** A module's table answering its errors, in front of the app's handler (src/http/error-answers.ts). */
const TEXTS = defineMessages('error-answers-test', {
  later: { en: 'Come back in {seconds} s', zh: '请 {seconds} 秒后再来' },
  missing: { en: 'Nothing here', zh: '这里没有' },
  gone: { en: 'Gone for good', zh: '永久删除' },
});

class Later extends Error {
  constructor(
    readonly userMessage: Message,
    readonly seconds: number,
  ) {
    super('later');
  }
}
class Missing extends Error {
  constructor(readonly userMessage: Message) {
    super('missing');
  }
}
class Gone extends Missing {}

const TABLE: readonly ErrorAnswer[] = [answer(Gone, 410), answer(Missing, 404), answer(Later, 429, (error) => ({ 'retry-after': String(error.seconds) }))];

let app: FastifyInstance;

beforeAll(async () => {
  app = Fastify();
  installLanguages(app, 'en');
  installErrorHandling(app);
  await app.register(async (module) => {
    answerErrors(module, TABLE);
    // Registered after the table: inherits it.
    await module.register(async (room) => {
      room.get('/later', () => Promise.reject(new Later(TEXTS.later({ seconds: 3 }), 3)));
      room.get('/missing', () => Promise.reject(new Missing(TEXTS.missing())));
      room.get('/gone', () => Promise.reject(new Gone(TEXTS.gone())));
      room.get('/http', () => Promise.reject(new HttpError(409, TEXTS.gone())));
      room.get('/bug', () => Promise.reject(new Error('a bug')));
    });
  });
  // Outside the module: its table does not apply.
  app.get('/outside', () => Promise.reject(new Missing(TEXTS.missing())));
  await app.ready();
});

afterAll(async () => {
  await app?.close();
});

const ask = (url: string, language = 'en') => app.inject({ url, headers: { 'accept-language': language } });

describe('answerErrors', () => {
  it("answers an error of a row with the row's status and headers, the message in the request's language", async () => {
    const later = await ask('/later');
    expect(later.statusCode).toBe(429);
    expect(later.headers['retry-after']).toBe('3');
    expect(later.json()).toEqual({ success: false, errorMsg: 'Come back in 3 s' });
    const zh = await ask('/later', 'zh-CN');
    expect(zh.statusCode).toBe(429);
    expect(zh.json()).toEqual({ success: false, errorMsg: '请 3 秒后再来' });
    const missing = await ask('/missing');
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['retry-after']).toBeUndefined();
    expect(missing.json()).toEqual({ success: false, errorMsg: 'Nothing here' });
  });

  it('takes the first row the error is an instance of: a subclass row before its class', async () => {
    expect((await ask('/gone')).statusCode).toBe(410);
    expect(answerOf(TABLE, new Gone(TEXTS.gone()))?.status).toBe(410);
    expect(answerOf(TABLE, new Missing(TEXTS.missing()))?.status).toBe(404);
    expect(answerOf(TABLE, new Error('other'))).toBeUndefined();
  });

  it("hands every other error to the app's handler, as if the table were not there", async () => {
    const http = await ask('/http');
    expect(http.statusCode).toBe(409);
    expect(http.json()).toEqual({ success: false, errorMsg: 'Gone for good' });
    const bug = await ask('/bug');
    expect(bug.statusCode).toBe(500);
    expect(bug.json().errorMsg).toMatch(/^Internal server error \(request id .+\)$/);
    expect((await ask('/nowhere')).statusCode).toBe(404);
  });

  it("answers nothing outside the plugin that installed it: there, the module's errors are the app's 500", async () => {
    const outside = await ask('/outside');
    expect(outside.statusCode).toBe(500);
  });
});
