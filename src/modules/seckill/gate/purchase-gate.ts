import { HttpError, notFound, tooManyRequests } from '../../../http/errors.js';
import type { Message } from '../../../http/messages.js';
import type { RateLimit } from '../../../lib/rate-limit/index.js';
import type { TokenSigner, VerifyFailure } from '../../../lib/signed-token/index.js';
import type { CaptchaStore } from './captcha-store.js';
import type { GateSettings, GateSettingsCache } from './gate-settings-cache.js';
import { SECKILL_MESSAGES } from '../messages.js';

/** The header carrying the purchase token on POST /voucher-order/seckill/{id}. */
export const PURCHASE_TOKEN_HEADER = 'x-purchase-token';

/** A refused purchase token or captcha: 403 (never 401, which a client reads as "logged out"). */
export class GateRefused extends HttpError {
  constructor(message: Message) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0; // routine under a flood of bad tokens: skip the stack trace
    super(403, message);
    Error.stackTraceLimit = limit;
  }
}

const TOKEN_FAILURES: Record<VerifyFailure, Message> = {
  malformed: SECKILL_MESSAGES.gateTokenMalformed(),
  'unknown-key': SECKILL_MESSAGES.gateTokenUnknownKey(),
  'bad-signature': SECKILL_MESSAGES.gateTokenForged(),
  expired: SECKILL_MESSAGES.gateTokenExpired(),
};

export interface PurchaseGateDeps {
  signer: TokenSigner;
  settings: GateSettingsCache;
  captcha: CaptchaStore;
  /** Token and captcha requests per user. */
  limit: RateLimit;
  tokenTtlMs: number;
  now?: () => number;
}

export interface IssuedToken {
  token: string;
  /** ISO time. */
  expiresAt: string;
}

/**
 * The purchase gate of a sale: a logged-in user gets a signed, short-lived purchase token
 * (HMAC over user, voucher, expiry, nonce) once the window is open, after a captcha if the sale
 * asks for one; the order route of a gated sale checks it in memory.
 */
export class PurchaseGate {
  private readonly now: () => number;

  constructor(private readonly deps: PurchaseGateDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** A captcha for this user and sale (replacing any earlier one); the SVG image. */
  async challenge(userId: string, voucherId: string): Promise<{ svg: string }> {
    await this.limit(userId);
    const settings = await this.saleSettings(voucherId);
    if (settings.mode !== 'captcha') throw new HttpError(409, SECKILL_MESSAGES.gateNoCaptcha({ voucherId }));
    return { svg: await this.deps.captcha.create(userId, voucherId) };
  }

  /** A purchase token, once the sale is open (and the captcha solved, if the sale has one). */
  async issue(userId: string, voucherId: string, captchaAnswer: string | undefined): Promise<IssuedToken> {
    await this.limit(userId);
    const settings = await this.saleSettings(voucherId);
    const now = this.now();
    if (now < settings.begin) {
      const waitMs = settings.begin - now;
      throw new HttpError(425, SECKILL_MESSAGES.gateOpensIn({ seconds: Math.ceil(waitMs / 1000), at: new Date(settings.begin).toISOString() }), {
        'retry-after': String(Math.ceil(waitMs / 1000)),
      });
    }
    if (now >= settings.end) throw new HttpError(409, SECKILL_MESSAGES.gateSaleEnded());
    if (settings.mode === 'captcha') await this.solve(userId, voucherId, captchaAnswer);
    const { token, expiresAt } = this.deps.signer.sign([userId, voucherId], this.deps.tokenTtlMs);
    return { token, expiresAt: new Date(expiresAt).toISOString() };
  }

  /** The order route's check: nothing for an ungated sale, else a valid token of this user and voucher. */
  async check(token: string | undefined, userId: string, voucherId: string): Promise<void> {
    const settings = await this.deps.settings.get(voucherId);
    if (settings === null || settings.mode === 'off') return;
    if (token === undefined || token === '') {
      throw new GateRefused(SECKILL_MESSAGES.gateTokenMissing({ voucherId }));
    }
    const result = this.deps.signer.verify(token);
    if (!result.valid) throw new GateRefused(TOKEN_FAILURES[result.reason]);
    const [tokenUser, tokenVoucher] = result.claims;
    if (tokenUser !== userId) throw new GateRefused(SECKILL_MESSAGES.gateTokenOtherUser());
    if (tokenVoucher !== voucherId) throw new GateRefused(SECKILL_MESSAGES.gateTokenOtherVoucher({ voucherId: String(tokenVoucher) }));
  }

  private async saleSettings(voucherId: string): Promise<GateSettings> {
    const settings = await this.deps.settings.get(voucherId);
    if (settings === null) throw notFound(SECKILL_MESSAGES.unknownVoucher({ id: voucherId }));
    return settings;
  }

  private async solve(userId: string, voucherId: string, answer: string | undefined): Promise<void> {
    if (answer === undefined || answer.trim() === '') {
      throw new GateRefused(SECKILL_MESSAGES.gateCaptchaMissing({ voucherId }));
    }
    const result = await this.deps.captcha.check(userId, voucherId, answer);
    if (result.outcome === 'solved') return;
    if (result.outcome === 'wrong') throw new GateRefused(SECKILL_MESSAGES.gateCaptchaWrong({ triesLeft: result.triesLeft }));
    throw new GateRefused(SECKILL_MESSAGES.gateCaptchaGone());
  }

  private async limit(userId: string): Promise<void> {
    const decision = await this.deps.limit.consume(userId);
    if (!decision.allowed) {
      throw tooManyRequests(SECKILL_MESSAGES.gateTooManyRequests, decision.retryAfterMs);
    }
  }
}
