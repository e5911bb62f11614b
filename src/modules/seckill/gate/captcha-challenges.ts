import { createHmac, randomInt } from 'node:crypto';
import { createChallenge, verifySolution, type Challenge, type Solution } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import type { RedisClient } from '../../../infra/redis.js';
import type { SigningKey } from '../../../lib/signed-token/index.js';
import { usedCaptchaKey } from '../keys.js';

/** The key derivation of each attempt: native in Node and in browsers (WebCrypto), so a script solves no faster than a page. */
const ALGORITHM = 'PBKDF2/SHA-256';
/** Instances' clocks may differ by this much: a used challenge is remembered this long past its expiry. */
const CLOCK_SKEW_MARGIN_MS = 60_000;

/**
 * A sale's captcha cost, its ALTCHA maxNumber: the answer is drawn uniformly from 1..maxNumber, so
 * a solver makes maxNumber / 2 attempts on average (docs/flows/purchase-gate.md measures them).
 * The minimum still costs a script about 50 attempts per order; the maximum is what a slow phone
 * still solves well within altcha-lib's 90 s solver timeout (and the challenge's lifetime).
 */
export const CAPTCHA_MAX_NUMBER = { default: 400, min: 100, max: 5_000 } as const;

export interface CaptchaOptions {
  /**
   * PBKDF2 iterations of one attempt, the same for every sale: the unit of the cost. The server
   * pays one attempt per challenge it makes, so a sale's setting scales only the solver's work.
   */
  iterations: number;
  /** An unanswered challenge expires after this. */
  ttlSeconds: number;
}

export type CaptchaCheck = { outcome: 'solved' } | { outcome: 'malformed' | 'forged' | 'other-user' | 'other-voucher' | 'expired' | 'wrong' | 'used' };

/** What a challenge carries besides ALTCHA's own parameters (signed with them). */
interface ChallengeData {
  /** User, voucher, and the key that signed it. */
  u: string;
  v: string;
  k: string;
  /** The sale's maxNumber when it was made: the answer is at most this (a client may show progress; the check needs it not). */
  m?: number;
}

/**
 * ALTCHA proof-of-work challenges (altcha-lib, PoW v2 in its deterministic mode): the server
 * draws the answer, derives its key once and signs the challenge; the client must try every
 * attempt up to the answer, each one `iterations` rounds of PBKDF2, to find the key with the
 * signed prefix. So every solved challenge costs the solver real work, whatever it is, set by
 * the sale's cost; checking a solution is two HMACs. A challenge names its user and sale, expires,
 * and buys one token: the first good answer marks it used in Redis (SET NX), across instances.
 */
export class CaptchaChallenges {
  private readonly secrets: Map<string, { signature: string; key: string }>;
  private readonly signingKid: string;

  constructor(
    private readonly redis: RedisClient,
    keys: readonly SigningKey[],
    private readonly options: CaptchaOptions,
    private readonly now: () => number = Date.now,
  ) {
    // Secrets of their own, derived from the purchase token keys: a challenge's MAC can never pass for a token's.
    const derive = (secret: string, use: string) => createHmac('sha256', secret).update(`altcha-${use}`).digest('hex');
    this.secrets = new Map(keys.map(({ kid, secret }) => [kid, { signature: derive(secret, 'challenge'), key: derive(secret, 'key') }]));
    const first = keys[0];
    if (first === undefined) throw new Error('CaptchaChallenges needs at least one key');
    this.signingKid = first.kid;
  }

  /**
   * A new challenge for this user and sale at the sale's cost, its answer drawn from 1..maxNumber
   * (any earlier one stays valid until answered or expired).
   */
  async create(userId: string, voucherId: string, maxNumber: number): Promise<Challenge> {
    const secrets = this.secrets.get(this.signingKid)!;
    const data: ChallengeData = { u: userId, v: voucherId, k: this.signingKid, m: maxNumber };
    return createChallenge({
      algorithm: ALGORITHM,
      cost: this.options.iterations,
      counter: randomInt(1, maxNumber + 1),
      deriveKey,
      data: { ...data },
      expiresAt: new Date(this.now() + this.options.ttlSeconds * 1000),
      hmacSignatureSecret: secrets.signature,
      hmacKeySignatureSecret: secrets.key,
    });
  }

  /** Checks an ALTCHA payload (base64 JSON {challenge, solution}); a good one is used up. */
  async check(userId: string, voucherId: string, payload: string): Promise<CaptchaCheck> {
    const decoded = decodePayload(payload);
    if (decoded === null) return { outcome: 'malformed' };
    const { challenge, solution, data } = decoded;
    const secrets = this.secrets.get(data.k);
    if (secrets === undefined) return { outcome: 'forged' };
    const result = await verifySolution({ challenge, solution, deriveKey, hmacSignatureSecret: secrets.signature, hmacKeySignatureSecret: secrets.key }).catch(
      () => null, // e.g. a derived key that is no hex
    );
    if (result === null) return { outcome: 'malformed' };
    if (result.invalidSignature === true) return { outcome: 'forged' };
    if (result.expired) return { outcome: 'expired' };
    if (!result.verified) return { outcome: 'wrong' };
    if (data.u !== userId) return { outcome: 'other-user' };
    if (data.v !== voucherId) return { outcome: 'other-voucher' };
    const keepMs = Math.max(1, (challenge.parameters.expiresAt ?? 0) * 1000 - this.now()) + CLOCK_SKEW_MARGIN_MS;
    const first = await this.redis.set(usedCaptchaKey(challenge.signature!), '1', 'PX', keepMs, 'NX');
    return first === 'OK' ? { outcome: 'solved' } : { outcome: 'used' };
  }
}

/** The payload's challenge, solution and our data, or null when it is not an ALTCHA v2 payload of ours. */
function decodePayload(payload: string): { challenge: Challenge; solution: Solution; data: ChallengeData } | null {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(payload, 'base64').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { challenge, solution } = value as { challenge?: Partial<Challenge>; solution?: Partial<Solution> };
  const parameters = challenge?.parameters;
  const data = parameters?.data as Partial<ChallengeData> | undefined;
  const wellFormed =
    typeof challenge?.signature === 'string' &&
    typeof parameters?.expiresAt === 'number' &&
    typeof data?.u === 'string' &&
    typeof data.v === 'string' &&
    typeof data.k === 'string' &&
    typeof solution?.counter === 'number' &&
    typeof solution.derivedKey === 'string';
  if (!wellFormed) return null;
  return { challenge: challenge as Challenge, solution: solution as Solution, data: data as ChallengeData };
}
