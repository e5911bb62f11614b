import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** One HMAC key: `kid` names it inside every token it signs, so verifiers pick the right secret. */
export interface SigningKey {
  kid: string;
  secret: string;
}

export type VerifyFailure = 'malformed' | 'unknown-key' | 'bad-signature' | 'expired';

/** A valid token's claims, expiry (epoch ms) and nonce (unique per token: what a caller remembers to make a token single-use). */
export type VerifyResult = { valid: true; claims: string[]; expiresAt: number; nonce: string } | { valid: false; reason: VerifyFailure };

export interface SignedToken {
  token: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

interface Payload {
  /** The caller's claims, in its order. */
  c: string[];
  /** Expiry, epoch ms. */
  e: number;
  /** Random nonce: two tokens of the same claims and second differ. */
  n: string;
}

const KID = /^[\w-]{1,32}$/;

/**
 * Short-lived tokens signed with HMAC-SHA256, checked in memory (no store, no round trip):
 * `<kid>.<base64url JSON {claims, expiry, nonce}>.<base64url MAC of "kid.payload">`.
 *
 * Key rotation: the first key signs, every key verifies. Add a new key in front, wait one token
 * lifetime, then drop the old one. The MAC is compared with timingSafeEqual; the payload is
 * parsed only once its MAC holds.
 */
export class TokenSigner {
  private readonly secrets = new Map<string, Buffer>();
  private readonly signingKid: string;

  constructor(
    keys: readonly SigningKey[],
    private readonly now: () => number = Date.now,
  ) {
    const first = keys[0];
    if (first === undefined) throw new Error('TokenSigner needs at least one key');
    for (const { kid, secret } of keys) {
      if (!KID.test(kid)) throw new Error(`TokenSigner: key id ${JSON.stringify(kid)} must be 1-32 letters, digits, _ or -`);
      if (this.secrets.has(kid)) throw new Error(`TokenSigner: key id ${kid} appears twice`);
      this.secrets.set(kid, Buffer.from(secret, 'utf8'));
    }
    this.signingKid = first.kid;
  }

  sign(claims: readonly string[], ttlMs: number): SignedToken {
    const expiresAt = this.now() + ttlMs;
    const payload: Payload = { c: [...claims], e: expiresAt, n: randomBytes(9).toString('base64url') };
    const signed = `${this.signingKid}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
    return { token: `${signed}.${this.mac(this.signingKid, signed).toString('base64url')}`, expiresAt };
  }

  verify(token: string): VerifyResult {
    const parts = token.split('.');
    if (parts.length !== 3) return { valid: false, reason: 'malformed' };
    const [kid = '', body = '', mac = ''] = parts;
    if (!this.secrets.has(kid)) return { valid: false, reason: 'unknown-key' };
    const expected = this.mac(kid, `${kid}.${body}`);
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { valid: false, reason: 'bad-signature' };
    const payload = parsePayload(body);
    if (payload === null) return { valid: false, reason: 'malformed' };
    if (payload.e <= this.now()) return { valid: false, reason: 'expired' };
    return { valid: true, claims: payload.c, expiresAt: payload.e, nonce: payload.n };
  }

  private mac(kid: string, data: string): Buffer {
    const secret = this.secrets.get(kid);
    if (secret === undefined) throw new Error(`unknown key ${kid}`);
    return createHmac('sha256', secret).update(data).digest();
  }
}

function parsePayload(body: string): Payload | null {
  try {
    const value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Partial<Payload>;
    const claimsOk = Array.isArray(value.c) && value.c.every((claim) => typeof claim === 'string');
    return claimsOk && typeof value.e === 'number' && typeof value.n === 'string' ? (value as Payload) : null;
  } catch {
    return null;
  }
}
