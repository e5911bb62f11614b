import { Writable } from 'node:stream';
import pino, { type LoggerOptions } from 'pino';
import { describe, expect, it } from 'vitest';
import { maskPhone, maskPhonesIn, secureLoggerOptions } from '../../../src/infra/logging.js';

/** A pino logger with the app's options, writing its JSON lines into an array. */
function capture(): { log: pino.Logger; lines: () => Array<Record<string, unknown>> } {
  const written: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk.toString());
      done();
    },
  });
  const options = secureLoggerOptions({ level: 'info' }, 'info') as LoggerOptions;
  return {
    log: pino(options, stream),
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
