import { Writable } from 'node:stream';
import pino, { type LoggerOptions } from 'pino';
import { describe, expect, it } from 'vitest';
import { maskPhone, maskPhonesIn, maskSecrets, secureLoggerOptions } from '../../../src/infra/logging.js';
import { findLeaks } from '../../support/app-logs.js';

/** A pino logger with the app's options, writing its JSON lines into an array. */
function capture(): { log: pino.Logger; lines: () => Array<Record<string, unknown>> } {
  const written: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk.toString());
      done();
    },
  });
  // As Fastify builds it (lib/logger-pino.js): pino(options, options.stream).
  const options = secureLoggerOptions({ level: 'info', stream }, 'info') as LoggerOptions & { stream: pino.DestinationStream };
  return {
    log: pino(options, options.stream),
    lines: () =>
      written
        .join('')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

describe('phone masking', () => {
  it('keeps the first 3 and last 4 characters of a number', () => {
    expect(maskPhone('13812345678')).toBe('138****5678');
    expect(maskPhone('+8613812345678')).toBe('+86*******5678');
    expect(maskPhone('1234567')).toBe('*******'); // too short to show any of it
    expect(maskPhone('')).toBe('');
  });

  it('masks every mainland mobile number in a text, but not ids, other numbers or shorter runs', () => {
    expect(maskPhonesIn('/api/user/code?phone=13812345678&x=1')).toBe('/api/user/code?phone=138****5678&x=1');
    expect(maskPhonesIn('13812345678 and 19900001111')).toBe('138****5678 and 199****1111');
    expect(maskPhonesIn('/api/voucher-order/1234567890123456789')).toBe('/api/voucher-order/1234567890123456789');
    expect(maskPhonesIn('/api/shop/12345')).toBe('/api/shop/12345');
    expect(maskPhonesIn('12812345678')).toBe('12812345678'); // 12x is no mobile prefix
    expect(maskPhonesIn('138123456789')).toBe('138123456789'); // 12 digits: part of something longer
  });
});

describe('secureLoggerOptions', () => {
  it('removes tokens, authorization headers and passwords, and masks phones, wherever they are logged', () => {
    const { log, lines } = capture();
    log.info(
      { token: 'secret-1', headers: { authorization: 'secret-2' }, user: { phone: '13812345678', token: 'secret-3', password: 'secret-4' } },
      'careless line',
    );
    const [line] = lines();
    expect(line).toMatchObject({
      msg: 'careless line',
      token: '[Redacted]',
      headers: { authorization: '[Redacted]' },
      user: { phone: '138****5678', token: '[Redacted]', password: '[Redacted]' },
    });
    expect(JSON.stringify(line)).not.toMatch(/secret|13812345678/);
  });

  it("logs a request's method and URL with the phone in the query masked, and no headers", () => {
    const { log, lines } = capture();
    const request = {
      method: 'POST',
      url: '/api/user/code?phone=13812345678',
      host: 'shop.example.com',
      ip: '10.0.0.1',
      socket: { remotePort: 5555 },
      headers: { authorization: 'secret' },
    };
    log.info({ req: request }, 'incoming request');
    expect(lines()[0]!.req).toEqual({
      method: 'POST',
      url: '/api/user/code?phone=138****5678',
      host: 'shop.example.com',
      remoteAddress: '10.0.0.1',
      remotePort: 5555,
    });
  });

  it('keeps logging off when off, and takes the level when given none', () => {
    expect(secureLoggerOptions(false, 'info')).toBe(false);
    expect(secureLoggerOptions(undefined, 'warn')).toMatchObject({ level: 'warn' });
    expect(secureLoggerOptions(true, 'debug')).toMatchObject({ level: 'debug' });
  });
});

describe('maskSecrets: the last pass over every log line (issue #17)', () => {
  const forms = [
    '13912345678',
    '8613912345678',
    '+8613912345678',
    '008613912345678',
    '+86 139 1234 5678',
    '139-1234-5678',
    '139 1234 5678',
    '0086-139-1234-5678',
    '139.1234.5678',
    '%2B86%20139%201234%205678', // in a URL
    '139+1234+5678', // form-encoded spaces
  ];

  it.each(forms)('masks the phone written %s, in a message or any field', (phone) => {
    const { log, lines } = capture();
    log.info({ contact: phone, nested: { who: `call ${phone} now` } }, `sent to ${phone}`);
    const text = JSON.stringify(lines()[0]);
    expect(text).not.toContain(phone);
    expect(text).toContain('139****5678');
    expect(findLeaks(text)).toEqual([]);
  });

  it('keeps a line JSON when the phone was a bare number, and leaves ids, times and fractions alone', () => {
    expect(maskSecrets('{"a":13912345678,"b":[8613912345678]}')).toBe('{"a":"139****5678","b":["86139****5678"]}');
    const untouched = '{"id":"1234567890123456789","time":1763912345678,"ratio":0.13912345678,"shop":12345}';
    expect(maskSecrets(untouched)).toBe(untouched);
  });

  it('redacts credentials in query strings and token-shaped words, not request ids or digests', () => {
    const token = 'Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789_-abcde';
    expect(token).toHaveLength(43);
    expect(maskSecrets(`/api/user/me?token=${token}&current=2`)).toBe('/api/user/me?token=[Redacted]&current=2');
    expect(maskSecrets('/x?access_token=abc&api_key=def&x=1')).toBe('/x?access_token=[Redacted]&api_key=[Redacted]&x=1');
    expect(maskSecrets(`bearer ${token} used`)).toBe('bearer [Redacted] used');
    const other = 'reqId 1b4e28ba-2fa1-11d2-883f-0016d3cca427 digest 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
    expect(maskSecrets(other)).toBe(other);
  });

  it('masks what Fastify logs of a request URL with a token in the query', () => {
    const { log, lines } = capture();
    const token = 'Zz9dEfGhIjKlMnOpQrStUvWxYz0123456789_-abcde';
    log.info({ req: { method: 'GET', url: `/api/user/me?token=${token}&phone=+8613912345678`, host: 'h', ip: '1.2.3.4', socket: {} } }, 'incoming request');
    const text = JSON.stringify(lines()[0]);
    expect(text).not.toContain(token);
    expect(findLeaks(text)).toEqual([]);
  });
});

describe('findLeaks (the whole-run log scan of test/support/log-scan.ts)', () => {
  it('finds every unmasked form and nothing in masked lines', () => {
    const forms = ['13912345678', '+86 139 1234 5678', '0086-139-1234-5678', '139 1234 5678'];
    for (const phone of forms) expect(findLeaks(`{"msg":"to ${phone}"}`)).toEqual([{ kind: 'phone', sample: expect.any(String) }]);
    expect(findLeaks('GET /api/x?token=abc').map((leak) => leak.kind)).toEqual(['token parameter']);
    expect(findLeaks('{"t":"Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789_-abcde"}').map((leak) => leak.kind)).toEqual(['token']);
    expect(findLeaks(maskSecrets('13912345678 /x?token=abc Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789_-abcde'))).toEqual([]);
    // The report hides what it found.
    expect(JSON.stringify(findLeaks('13912345678'))).not.toContain('13912345678');
  });
});
