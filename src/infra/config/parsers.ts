/** Parsers and checks of the settings whose values have a shape of their own (settings.ts uses them). */
import { ConfigError, type Context } from './fields.js';

export interface SigningKey {
  kid: string;
  secret: string;
}

export const isHostPort = (item: string): boolean => /^[\w.-]+:\d{1,5}$/.test(item);

/** A browser origin: `scheme://host[:port]`, nothing after it. */
export function isOrigin(item: string): boolean {
  const parsed = URL.parse(item);
  return parsed !== null && ['http:', 'https:'].includes(parsed.protocol) && parsed.origin === item;
}

/** Whose X-Forwarded-For to believe: false, a number of proxy hops, or proxy addresses/CIDRs. */
export function parseTrustProxy(text: string, { env, refuse }: Context): boolean | number | string {
  if (text === 'true') {
    // Any X-Forwarded-For would be believed, so its left-most address (the client's own writing)
    // would become the IP that every per-IP limit counts: one client, unlimited addresses.
    throw new ConfigError(
      `Invalid environment variable ${env}=true: it trusts an X-Forwarded-For the client writes itself. Set the number of proxies in front of the app (1 behind one nginx) or their addresses/CIDRs (e.g. 127.0.0.1,10.0.0.0/8)`,
    );
  }
  if (text === 'false') return false;
  if (/^\d{1,2}$/.test(text)) return Number(text); // hops, counted from the app's socket
  const addresses = text.replace(/\s/g, '');
  if (/^[\d.:a-fA-F/]+(,[\d.:a-fA-F/]+)*$/.test(addresses)) return addresses;
  return refuse('false, a number of proxy hops or a comma-separated list of proxy addresses/CIDRs');
}

/** `kid:secret,kid:secret`: ids 1-32 of [\w-], secrets of 32+ characters without spaces or commas. */
export function parseSigningKeys(text: string, { refuse }: Context): SigningKey[] {
  return text.split(',').map((item) => {
    const separator = item.indexOf(':');
    const kid = item.slice(0, separator).trim();
    const secret = item.slice(separator + 1).trim();
    if (separator < 1 || !/^[\w-]{1,32}$/.test(kid) || secret.length < 32 || /\s/.test(secret)) {
      refuse('kid:secret,... (key ids of letters, digits, _ or -; secrets of 32+ characters, e.g. openssl rand -hex 32)');
    }
    return { kid, secret };
  });
}

/** Empty (no header) or a header name. */
export function checkHeaderName(header: string, { refuse }: Context): void {
  if (header !== '' && !/^[\w-]+$/.test(header)) refuse('a header name');
}

/** Placeholders of SMS_HTTP_BODY. */
export const SMS_BODY_PLACEHOLDERS = ['phone', 'code', 'minutes'] as const;

export const DEFAULT_SMS_BODY = '{"phone":"{{phone}}","message":"Your hmdp login code is {{code}}. It expires in {{minutes}} minutes."}';

/** Fills the SMS_HTTP_BODY template; values are JSON-escaped, so they cannot break out of their strings. */
export function renderSmsBody(template: string, values: Record<(typeof SMS_BODY_PLACEHOLDERS)[number], string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (placeholder, name: string) =>
    name in values ? JSON.stringify(values[name as keyof typeof values]).slice(1, -1) : placeholder,
  );
}

/** The template must give JSON once filled in, or every login code would fail at the gateway. */
export function checkSmsBody(template: string, { refuse }: Context): void {
  try {
    JSON.parse(renderSmsBody(template, { phone: '13800000000', code: '000000', minutes: '2' }));
  } catch {
    refuse('JSON with {{phone}}, {{code}}, {{minutes}}');
  }
}

/**
 * `RABBITMQ_URL`: one amqp(s):// URL, or a comma-separated list of the nodes of one cluster. The
 * nodes share the user, password and vhost (the client connects to one node at a time and moves
 * to the next when it is lost), so those must be the same in every URL.
 */
export function parseRabbitmqUrls(text: string, { refuse }: Context): string[] {
  const urls = text.split(',').map((item) => item.trim());
  const parsed = urls.map((item) => URL.parse(item));
  const expected =
    'amqp:// or amqps:// URLs, comma-separated, sharing user, password and vhost (amqp://guest:guest@10.0.0.1:5672/,amqp://guest:guest@10.0.0.2:5672/)';
  if (parsed.some((url) => url === null || !['amqp:', 'amqps:'].includes(url.protocol) || url.hostname === '')) refuse(expected);
  const identity = (url: URL): string => `${url.protocol}${url.username}:${url.password}${url.pathname}`;
  if (new Set(parsed.map((url) => identity(url!))).size > 1) refuse(expected);
  return urls;
}
