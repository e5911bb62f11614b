/**
 * Messages for users, in Chinese and English. Each module keeps its own catalogue in a
 * `messages.ts` (`defineMessages('seckill', {...})`); an error carries a message (code +
 * parameters), and whoever answers writes it in the reader's language (the HTTP layer picks it
 * from Accept-Language: src/http/language.ts).
 *
 *     export const SHOP_MESSAGES = defineMessages('shops', {
 *       notFound: { en: 'Shop {id} not found', zh: '店铺 {id} 不存在' },
 *     });
 *     throw notFound(SHOP_MESSAGES.notFound({ id }));
 *
 * Parameters are named `{name}` in the texts; TypeScript requires each (of either text) where
 * the message is made. test/unit/http/messages.test.ts checks that every message has both languages
 * and that no English text reaches a client without a code.
 */
export const LANGUAGES = ['zh', 'en'] as const;
export type Language = (typeof LANGUAGES)[number];

/** The two texts of one message. */
export interface MessageTexts {
  readonly en: string;
  readonly zh: string;
}

export type MessageParams = Readonly<Record<string, string | number>>;

/** A message to show: which one, its texts and the values of its parameters. */
export interface Message {
  readonly code: string;
  readonly texts: MessageTexts;
  readonly params: MessageParams;
}

/**
 * The names between braces in a text: `'Shop {id} of {owner}'` → `'id' | 'owner'`. A text that is
 * not one literal (`'a' + 'b'`) is typed `string`: any names.
 */
type Placeholders<S extends string> = string extends S ? string : S extends `${string}{${infer Name}}${infer Rest}` ? Name | Placeholders<Rest> : never;

/** What makes a message: nothing for a fixed text, else the value of each parameter. */
export interface MessageFactory<Names extends string = string> {
  (...params: [Names] extends [never] ? [] : [Readonly<Record<Names, string | number>>]): Message;
  readonly code: string;
  readonly texts: MessageTexts;
}

type Catalogue<T extends Record<string, MessageTexts>> = {
  readonly [K in keyof T & string]: MessageFactory<Placeholders<T[K]['en']> | Placeholders<T[K]['zh']>>;
};

const registered = new Map<string, MessageTexts>();

/**
 * A module's catalogue: one factory per entry, whose code is `<scope>.<key>`. A code defined
 * twice (two catalogues with one scope) is a programming error and throws at import.
 */
export function defineMessages<const T extends Record<string, MessageTexts>>(scope: string, texts: T): Catalogue<T> {
  const catalogue: Record<string, MessageFactory> = {};
  for (const [key, entry] of Object.entries(texts)) {
    const code = `${scope}.${key}`;
    if (registered.has(code)) throw new Error(`message ${code} is defined twice`);
    registered.set(code, entry);
    const factory = (params: MessageParams = {}): Message => ({ code, texts: entry, params });
    catalogue[key] = Object.assign(factory, { code, texts: entry });
  }
  return catalogue as Catalogue<T>;
}

/** Every message defined so far (the catalogues imported), by code. */
export function registeredMessages(): ReadonlyMap<string, MessageTexts> {
  return registered;
}

/** The message's text in `language`, parameters filled in (an unknown name is left as written). */
export function render(message: Message, language: Language): string {
  return interpolate(message.texts[language], message.params);
}

export function interpolate(text: string, params: MessageParams): string {
  if (!text.includes('{')) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole));
}

/** Both texts of a message, parameters filled in: e.g. a schema's `errorMessage` (src/http/error-handling.ts reads it). */
export const bothTexts = (message: Message): MessageTexts => ({ en: render(message, 'en'), zh: render(message, 'zh') });
