import type { Message } from '../../../lib/messages/index.js';
import type { RateLimit } from '../../../lib/rate-limit/index.js';
import type { TokenSigner, VerifyFailure } from '../../../lib/signed-token/index.js';
import type { Challenge } from 'altcha-lib';
import type { CaptchaChallenges, CaptchaCheck } from './captcha-challenges.js';
import { toGateMode, type GateMode, type GateSettings, type GateSettingsCache } from './gate-settings-cache.js';
import type { SpentTokens } from './spent-tokens.js';
import { Conflict, GateRefused, RateLimited, Refusal, TooEarly, UnknownVoucher } from '../errors/index.js';
import { SECKILL_MESSAGES } from '../messages.js';

/** The header carrying the purchase token on POST /voucher-order/seckill/{id}. */
export const PURCHASE_TOKEN_HEADER = 'x-purchase-token';

const TOKEN_FAILURES: Record<VerifyFailure, Message> = {
  malformed: SECKILL_MESSAGES.gateTokenMalformed(),
  'unknown-key': SECKILL_MESSAGES.gateTokenUnknownKey(),
  'bad-signature': SECKILL_MESSAGES.gateTokenForged(),
  expired: SECKILL_MESSAGES.gateTokenExpired(),
};

const CAPTCHA_FAILURES: Record<Exclude<CaptchaCheck['outcome'], 'solved'>, Message> = {
  malformed: SECKILL_MESSAGES.gateCaptchaMalformed(),
  forged: SECKILL_MESSAGES.gateCaptchaForged(),
  'other-user': SECKILL_MESSAGES.gateCaptchaOtherUser(),
  'other-voucher': SECKILL_MESSAGES.gateCaptchaOtherVoucher(),
  expired: SECKILL_MESSAGES.gateCaptchaExpired(),
  wrong: SECKILL_MESSAGES.gateCaptchaWrong(),
  used: SECKILL_MESSAGES.gateCaptchaUsed(),
};

/** How much a token proves: a token taken under a laxer gate than the sale's now buys nothing. */
const GATE_STRICTNESS: Record<GateMode, number> = { off: 0, token: 1, captcha: 2 };
const TAKEN_UNDER_LAXER_GATE: Record<Exclude<GateMode, 'captcha'>, Message> = {
  off: SECKILL_MESSAGES.gateTokenTakenWhileOff(),
  token: SECKILL_MESSAGES.gateTokenTakenBeforeCaptcha(),
};

/** A valid purchase token presented with an order: what spending it needs. */
export interface TokenPass {
  nonce: string;
  expiresAt: number;
}

export interface PurchaseGateDeps {
  signer: TokenSigner;
  /** Every sale's id in memory (orders/known-sales.ts): an unknown id is refused without a MySQL query. */
  sales: { refuseIfUnknown(voucherId: string): Promise<void> };
  settings: GateSettingsCache;
  captcha: CaptchaChallenges;
  spent: SpentTokens;
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
 * (HMAC over user, voucher, the sale's gate mode, expiry, nonce) once the window is open, after a
 * captcha if the sale asks for one. The order route of a gated sale checks it in memory, then
 * spends it on the order (one Redis script): a token buys one order.
 */
export class PurchaseGate {
  private readonly now: () => number;

  constructor(private readonly deps: PurchaseGateDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** A captcha for this user and sale: an ALTCHA proof-of-work challenge at the sale's cost (as this instance knows it now). */
  async challenge(userId: string, voucherId: string): Promise<Challenge> {
    await this.limit(userId);
    const settings = await this.saleSettings(voucherId);
    if (settings.mode !== 'captcha') throw new Conflict(SECKILL_MESSAGES.gateNoCaptcha({ voucherId }));
    return this.deps.captcha.create(userId, voucherId, settings.captchaMaxNumber);
  }

  /** A purchase token, once the sale is open (and the captcha solved, if the sale has one). */
  async issue(userId: string, voucherId: string, captchaAnswer: string | undefined): Promise<IssuedToken> {
    await this.limit(userId);
    const settings = await this.saleSettings(voucherId);
    const now = this.now();
    if (now < settings.begin) throw new TooEarly(settings.begin, now);
    if (now >= settings.end) throw new Conflict(SECKILL_MESSAGES.gateSaleEnded());
    if (settings.mode === 'captcha') await this.solve(userId, voucherId, captchaAnswer);
    const { token, expiresAt } = this.deps.signer.sign([userId, voucherId, settings.mode], this.deps.tokenTtlMs);
    return { token, expiresAt: new Date(expiresAt).toISOString() };
  }

  /**
   * The order route's check, in memory: nothing for an ungated sale (undefined), else a valid
   * token of this user and voucher, taken under the sale's gate or a stricter one.
   */
  async check(token: string | undefined, userId: string, voucherId: string): Promise<TokenPass | undefined> {
    const settings = await this.deps.settings.get(voucherId);
    if (settings === null || settings.mode === 'off') return undefined;
    if (token === undefined || token === '') {
      throw new GateRefused(SECKILL_MESSAGES.gateTokenMissing({ voucherId }));
    }
    const result = this.deps.signer.verify(token);
    if (!result.valid) throw new GateRefused(TOKEN_FAILURES[result.reason]);
    const [tokenUser, tokenVoucher, tokenMode] = result.claims;
    if (tokenUser !== userId) throw new GateRefused(SECKILL_MESSAGES.gateTokenOtherUser());
    if (tokenVoucher !== voucherId) throw new GateRefused(SECKILL_MESSAGES.gateTokenOtherVoucher({ voucherId: String(tokenVoucher) }));
    const takenUnder = toGateMode(tokenMode);
    if (takenUnder !== 'captcha' && GATE_STRICTNESS[takenUnder] < GATE_STRICTNESS[settings.mode]) throw new GateRefused(TAKEN_UNDER_LAXER_GATE[takenUnder]);
    return { nonce: result.nonce, expiresAt: result.expiresAt };
  }

  /**
   * Places an order with the token `check` passed, spending it first (atomic across instances):
   * a second order with it is refused, except a retry with the same Idempotency-Key, which
   * reserve.lua answers with that key's one order. A `Refusal` (the sale's, a reused key, an
   * unknown voucher) placed nothing, so the token is given back. On an unknown outcome
   * (`OutcomeUnknown`, units still moving between buckets, any other failure) it stays spent,
   * as the order may have been accepted: a retry with the same key finds it, and
   * without a key the client asks GET /voucher-order/of/me/voucher/{id}, then for a new token.
   */
  async spendOn<T>(pass: TokenPass | undefined, idempotencyKey: string | undefined, place: () => Promise<T>): Promise<T> {
    if (pass === undefined) return place();
    if (!(await this.deps.spent.spend(pass.nonce, pass.expiresAt, idempotencyKey))) throw new GateRefused(SECKILL_MESSAGES.gateTokenSpent());
    try {
      return await place();
    } catch (error) {
      if (error instanceof Refusal) await this.deps.spent.giveBack(pass.nonce).catch(() => undefined);
      throw error;
    }
  }

  /** After the user's limit: an id that is no sale is refused from memory, before the settings' per-id lookup. */
  private async saleSettings(voucherId: string): Promise<GateSettings> {
    await this.deps.sales.refuseIfUnknown(voucherId);
    const settings = await this.deps.settings.get(voucherId);
    if (settings === null) throw new UnknownVoucher(voucherId);
    return settings;
  }

  private async solve(userId: string, voucherId: string, answer: string | undefined): Promise<void> {
    if (answer === undefined || answer.trim() === '') {
      throw new GateRefused(SECKILL_MESSAGES.gateCaptchaMissing({ voucherId }));
    }
    const result = await this.deps.captcha.check(userId, voucherId, answer.trim());
    if (result.outcome !== 'solved') throw new GateRefused(CAPTCHA_FAILURES[result.outcome]);
  }

  private async limit(userId: string): Promise<void> {
    const decision = await this.deps.limit.consume(userId);
    if (!decision.allowed) {
      throw new RateLimited(SECKILL_MESSAGES.gateTooManyRequests, decision.retryAfterMs);
    }
  }
}
