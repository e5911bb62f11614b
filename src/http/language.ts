import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance } from 'fastify';
import Negotiator from 'negotiator';
import { LANGUAGES, render, type Language, type Message } from '../lib/messages/index.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The language of this request's messages, from its Accept-Language (src/http/language.ts). */
    readonly language: Language;
  }
}

/** The languages in order of preference when a client accepts several equally: the default first. */
const OFFERS: Record<Language, Language[]> = {
  zh: ['zh', ...LANGUAGES.filter((language) => language !== 'zh')],
  en: ['en', ...LANGUAGES.filter((language) => language !== 'en')],
};

/**
 * The client's preferred language among Chinese and English, by Accept-Language with its
 * q-values (negotiator): `zh`, `zh-CN`, `zh-TW` are Chinese, `en-*` English. No header, `*` or
 * only other languages give `fallback` (hmdp answered in Chinese: the default).
 */
export function negotiateLanguage(headers: IncomingHttpHeaders, fallback: Language): Language {
  const header = headers['accept-language'];
  if (header === undefined) return fallback;
  // Browsers send a handful of distinct headers, and parsing one costs microseconds on every
  // refusal of a flash sale: remember the answers for short headers.
  const key = `${fallback}|${header}`;
  const known = chosen.get(key);
  if (known !== undefined) return known;
  const language = (new Negotiator({ headers }).language(OFFERS[fallback]) as Language | undefined) ?? fallback;
  if (header.length <= MAX_REMEMBERED_HEADER) {
    if (chosen.size >= MAX_REMEMBERED) chosen.clear();
    chosen.set(key, language);
  }
  return language;
}

const chosen = new Map<string, Language>();
const MAX_REMEMBERED = 1_000;
const MAX_REMEMBERED_HEADER = 200;

/** `request.language`, worked out when read (only refusals read it, once). */
export function installLanguages(app: FastifyInstance, fallback: Language): void {
  app.decorateRequest('language', {
    getter(this: { headers: IncomingHttpHeaders }): Language {
      return negotiateLanguage(this.headers, fallback);
    },
  });
}

/** A message in the request's language. */
export const localize = (request: { language: Language }, message: Message): string => render(message, request.language);
